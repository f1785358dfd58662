import XCTest
@testable import AsyncHTTP

/// The read-ahead between a streamed request body and the task writing it: order, batching up to the budget,
/// no holding back of a slow producer's chunk, errors after the chunks before them, and early stops.
final class RequestBodyReadAheadTests: XCTestCase {
    func testBatchesWhatTheProducerMadeAheadAndStopsAtTheBudget() async throws {
        let readAhead = RequestBodyReadAhead(budget: 10)
        let chunks = (0..<8).map { index in [UInt8](repeating: UInt8(index), count: 4) }
        let producer = Task { await readAhead.produce(from: chunkSource(chunks)) }
        // The producer stops for room once 10 bytes or more wait: after three chunks of 4.
        try await waitUntil("10 bytes are read ahead") { readAhead.bufferedBytes >= 10 }
        try await Task.sleep(for: .milliseconds(20))
        XCTAssertEqual(readAhead.bufferedBytes, 12, "the producer went past its budget")

        let first = try await readAhead.take()
        XCTAssertEqual(first.chunks.map(Array.init), Array(chunks[0..<3]))
        XCTAssertEqual(first.bytes, 12)
        XCTAssertFalse(first.ended)

        var rest: [[UInt8]] = []
        var ended = false
        for _ in 0..<20 where !ended {
            let batch = try await readAhead.take()
            XCTAssertEqual(batch.bytes, batch.chunks.reduce(0) { $0 + $1.count })
            rest += batch.chunks.map(Array.init)
            ended = batch.ended
        }
        XCTAssertTrue(ended)
        XCTAssertEqual(rest, Array(chunks[3...]))
        await producer.value
    }

    func testASlowProducersChunkGoesOutWithoutWaitingForMore() async throws {
        let (gate, open) = AsyncStream<Void>.makeStream()
        let readAhead = RequestBodyReadAhead()
        let producer = Task {
            var step = 0
            var waiter = gate.makeAsyncIterator()
            await readAhead.produce(from: BodyChunkSource {
                step += 1
                switch step {
                case 1: return [1, 2, 3][...]
                case 2:
                    await waiter.next() // held until the test has seen the first chunk
                    return [4][...]
                default: return nil
                }
            })
        }
        let first = try await readAhead.take()
        XCTAssertEqual(first.chunks.map(Array.init), [[1, 2, 3]])
        XCTAssertFalse(first.ended)
        open.yield()
        var last = try await readAhead.take()
        if last.chunks.map(Array.init) == [[4]] && !last.ended { last = try await readAhead.take() }
        XCTAssertTrue(last.ended)
        await producer.value
    }

    func testAFailingStreamFailsTheWriterAfterTheChunksBeforeIt() async throws {
        struct SourceBroke: Error {}
        let readAhead = RequestBodyReadAhead()
        let producer = Task {
            var sent = 0
            await readAhead.produce(from: BodyChunkSource {
                sent += 1
                if sent > 2 { throw SourceBroke() }
                return [UInt8(sent)][...]
            })
        }
        var received: [[UInt8]] = []
        let error = await assertThrows(.invalidRequest, containing: "the request body stream failed") {
            for _ in 0..<10 { received += try await readAhead.take().chunks.map(Array.init) }
        }
        XCTAssertNotNil(error)
        XCTAssertEqual(received, [[1], [2]])
        await producer.value
    }

    func testCloseLetsAProducerWaitingForRoomReturn() async throws {
        let readAhead = RequestBodyReadAhead(budget: 1)
        let finished = Locked(false)
        let producer = Task {
            // Endless: only the writer's close can stop it.
            await readAhead.produce(from: BodyChunkSource { [7][...] })
            finished.withLock { $0 = true }
        }
        try await waitUntil("a byte is read ahead") { readAhead.bufferedBytes >= 1 }
        readAhead.close()
        try await waitUntil("the source finished") { finished.withLock { $0 } }
        await producer.value
        XCTAssertEqual(readAhead.bufferedBytes, 0)
    }

    func testACancelledStreamEndsAsCancelledNotAsAShortBody() async throws {
        // An AsyncStream's iterator answers cancellation with nil, which alone would look like the end of the body.
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream()
        let readAhead = RequestBodyReadAhead()
        let producer = Task {
            var iterator = stream.makeAsyncIterator()
            await readAhead.produce(from: BodyChunkSource { await iterator.next()?[...] })
        }
        continuation.yield([9])
        let first = try await readAhead.take()
        XCTAssertEqual(first.chunks.map(Array.init), [[9]])
        producer.cancel()
        await assertThrows(.cancelled) { _ = try await readAhead.take() }
        await producer.value
        continuation.finish()
    }

    /// The writer's wait for a source that produces nothing used to end only when the source did; a cancelled
    /// request now ends it at once, whatever the source does.
    func testCancellingTheWriterEndsItsWaitForAStalledSource() async throws {
        let readAhead = RequestBodyReadAhead()
        let writer = Task { () async -> HTTPClientError.Code? in
            do throws(HTTPClientError) {
                _ = try await readAhead.take()
                return nil
            } catch {
                return error.code
            }
        }
        try await waitUntil("the writer is parked") { readAhead.writerIsWaiting }
        writer.cancel()
        let code = await writer.value
        XCTAssertEqual(code, .cancelled)
        // And a task cancelled before it waits does not park at all.
        let early = Task { () async -> HTTPClientError.Code? in
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(HTTPClientError) {
                _ = try await RequestBodyReadAhead().take()
                return nil
            } catch {
                return error.code
            }
        }
        let earlyCode = await early.value
        XCTAssertEqual(earlyCode, .cancelled)
    }

    /// A wait whose deadline has passed ends as a timeout naming its phase, with nothing produced.
    func testAWaitPastItsDeadlineIsATimeout() async throws {
        let readAhead = RequestBodyReadAhead()
        let deadlines = Deadlines(inactivity: nil, total: MonotonicTime.now)
        do throws(HTTPClientError) {
            _ = try await readAhead.take(deadlines: deadlines)
            XCTFail("a wait past its deadline returned")
        } catch {
            XCTAssertEqual(error.code, .timeout)
        }
    }
}

/// A body source yielding `chunks` in order.
private func chunkSource(_ chunks: [[UInt8]]) -> BodyChunkSource {
    var index = 0
    return BodyChunkSource {
        guard index < chunks.count else { return nil }
        defer { index += 1 }
        return chunks[index][...]
    }

}
