@testable import AsyncHTTP
import HTTPTypes
import XCTest

/// What a request's progress handler sees: counts, totals, resends, the final value, and throttling (no sockets,
/// no sleeps).
final class TransferProgressTests: XCTestCase {
    let t0 = MonotonicTime(nanoseconds: 1_000_000_000)

    func fields(_ pairs: (HTTPField.Name, String)...) -> HTTPFields {
        HTTPFields(pairs.map { HTTPField(name: $0.0, value: $0.1) })
    }

    func testADownloadCountsUpToItsContentLengthAndEndsWithOneFinalValue() {
        var tracker = TransferProgressTracker(method: .get, uploadTotal: 0)
        XCTAssertEqual(tracker.headReceived(status: .ok, bodyLength: 100, hasLocation: false), .important)
        XCTAssertEqual(tracker.progress.bytesExpectedToReceive, 100)
        XCTAssertEqual(tracker.sendReturned(), .none)
        XCTAssertEqual(tracker.bodyReceived(60), .update)
        XCTAssertEqual(tracker.bodyReceived(40), .update)
        XCTAssertEqual(tracker.finished(), .important)
        XCTAssertEqual(tracker.progress, HTTPTransferProgress(bytesSent: 0, bytesExpectedToSend: 0, bytesReceived: 100,
                                                               bytesExpectedToReceive: 100, isFinal: true))
        XCTAssertEqual(tracker.finished(), .none, "one final value")
        XCTAssertEqual(tracker.ended(), .none)
    }

    func testABodyThatCameWithTheHeadIsFinalWhenSendReturns() {
        var tracker = TransferProgressTracker(method: .get, uploadTotal: 0)
        _ = tracker.headReceived(status: .ok, bodyLength: 5, hasLocation: false)
        _ = tracker.bodyReceived(5)
        XCTAssertEqual(tracker.finished(), .none, "send has not returned: this may be a hop the chain follows")
        XCTAssertEqual(tracker.sendReturned(), .important)
        XCTAssertTrue(tracker.progress.isFinal)
    }

    func testAResentUploadHoldsAtItsHighestPointInsteadOfRunningBackwards() {
        var tracker = TransferProgressTracker(method: .put, uploadTotal: 1000)
        _ = tracker.bodySent(total: 600)
        // The connection was stale: the whole body goes again, counted from 0 for that attempt.
        XCTAssertEqual(tracker.bodySent(total: 300), .none)
        XCTAssertEqual(tracker.progress.bytesSent, 600)
        XCTAssertEqual(tracker.bodySent(total: 1000), .update)
        // A 307 sends it a third time: nothing moves, nothing is counted twice.
        _ = tracker.headReceived(status: .temporaryRedirect, bodyLength: 0, hasLocation: true)
        XCTAssertEqual(tracker.bodySent(total: 1000), .none)
        XCTAssertEqual(tracker.progress.bytesSent, 1000)
    }

    func testTheBodiesOfFollowedRedirectsAndChallengesAreNotCounted() {
        var tracker = TransferProgressTracker(method: .get, uploadTotal: 0)
        XCTAssertEqual(tracker.headReceived(status: .found, bodyLength: 300, hasLocation: true), .none)
        XCTAssertEqual(tracker.bodyReceived(300), .none)
        XCTAssertEqual(tracker.finished(), .none)
        XCTAssertEqual(tracker.headReceived(status: .unauthorized, bodyLength: 50, hasLocation: false), .none)
        XCTAssertEqual(tracker.bodyReceived(50), .none)
        _ = tracker.headReceived(status: .ok, bodyLength: 1000, hasLocation: false)
        XCTAssertEqual(tracker.progress.bytesReceived, 0)
        XCTAssertEqual(tracker.progress.bytesExpectedToReceive, 1000)
        _ = tracker.bodyReceived(1000)
        _ = tracker.sendReturned()
        XCTAssertEqual(tracker.finished(), .important)
        XCTAssertEqual(tracker.progress.bytesReceived, 1000)
    }

    func testARedirectThatIsReturnedIsCountedAfterAll() {
        var tracker = TransferProgressTracker(method: .get, uploadTotal: 0)
        _ = tracker.headReceived(status: .found, bodyLength: 30, hasLocation: true)
        _ = tracker.bodyReceived(10)
        XCTAssertEqual(tracker.sendReturned(), .important, "redirects off: the 302 is the user's response")
        XCTAssertEqual(tracker.progress.bytesReceived, 10)
        XCTAssertEqual(tracker.progress.bytesExpectedToReceive, 30)
        XCTAssertEqual(tracker.bodyReceived(20), .update)
        XCTAssertEqual(tracker.finished(), .important)
        XCTAssertEqual(tracker.progress.bytesReceived, 30)
    }

    func testHeadAndNoContentResponsesExpectNoBodyAndChunkedOnesAnUnknownLength() {
        var head = TransferProgressTracker(method: .head, uploadTotal: 0)
        _ = head.headReceived(status: .ok, bodyLength: 8388608, hasLocation: false)
        XCTAssertEqual(head.progress.bytesExpectedToReceive, 0, "HEAD's Content-Length is the GET's size")
        var chunked = TransferProgressTracker(method: .get, uploadTotal: nil)
        _ = chunked.headReceived(status: .ok, bodyLength: nil, hasLocation: false)
        XCTAssertNil(chunked.progress.bytesExpectedToReceive)
        XCTAssertNil(chunked.progress.bytesExpectedToSend)
        XCTAssertNil(chunked.progress.downloadFraction)
    }

    func testAFailureOrADroppedBodyEndsTheProgress() {
        var tracker = TransferProgressTracker(method: .get, uploadTotal: 0)
        _ = tracker.headReceived(status: .ok, bodyLength: 100, hasLocation: false)
        _ = tracker.sendReturned()
        _ = tracker.bodyReceived(10)
        XCTAssertEqual(tracker.ended(), .important)
        XCTAssertTrue(tracker.progress.isFinal)
        XCTAssertEqual(tracker.progress.bytesReceived, 10, "the count says how far it got")
        XCTAssertEqual(tracker.bodyReceived(10), .none)
    }

    /// A body dropped before its end ends the progress as failed, unless every byte of its known length had come;
    /// one the chain drops before `send` returns (a followed redirect's) ends nothing. It ended as a normal end.
    func testABodyDroppedPartWayEndsFailedUnlessAllItsBytesHadCome() {
        func observe(_ steps: (RequestObservation) -> Void) -> [HTTPTransferProgress] {
            let values = Locked<[HTTPTransferProgress]>([])
            let observation = RequestObservation.make(
                requestID: 1, observers: [], handler: HTTPProgressHandler { progress in values.withLock { $0.append(progress) } },
                method: .get, uploadTotal: 0)
            steps(observation)
            return values.withLock { $0 }
        }
        let partWay = observe { observation in
            observation.updateProgress(at: t0) { $0.headReceived(status: .ok, bodyLength: 100, hasLocation: false) }
            observation.updateProgress(at: t0) { $0.sendReturned() }
            observation.updateProgress(at: t0) { $0.bodyReceived(30) }
            observation.bodyDropped()
        }
        XCTAssertEqual(partWay.last, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 30, bytesExpectedToReceive: 100,
                                                          isFinal: true, didFail: true))
        XCTAssertEqual(partWay.last?.downloadFraction, 0.3)
        let unknownLength = observe { observation in
            observation.updateProgress(at: t0) { $0.headReceived(status: .ok, bodyLength: nil, hasLocation: false) }
            observation.updateProgress(at: t0) { $0.sendReturned() }
            observation.updateProgress(at: t0) { $0.bodyReceived(30) }
            observation.bodyDropped()
        }
        XCTAssertEqual(unknownLength.last?.didFail, true)
        XCTAssertNil(unknownLength.last?.downloadFraction, "not 1: it did not end")
        let allBytesIn = observe { observation in
            observation.updateProgress(at: t0) { $0.headReceived(status: .ok, bodyLength: 100, hasLocation: false) }
            observation.updateProgress(at: t0) { $0.sendReturned() }
            observation.updateProgress(at: t0) { $0.bodyReceived(100) }
            observation.bodyDropped()  // the reader stopped before asking for the end
        }
        XCTAssertEqual(allBytesIn.last, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 100, bytesExpectedToReceive: 100,
                                                             isFinal: true))
        let redirectBody = observe { observation in
            observation.updateProgress(at: t0) { $0.headReceived(status: .found, bodyLength: 50, hasLocation: true) }
            observation.updateProgress(at: t0) { $0.bodyReceived(10) }
            observation.bodyDropped()  // the redirect step drops it and follows
            observation.updateProgress(at: t0) { $0.headReceived(status: .ok, bodyLength: 5, hasLocation: false) }
            observation.updateProgress(at: t0) { $0.bodyReceived(5) }
            observation.updateProgress(at: t0) { $0.finished() }
            observation.updateProgress(at: t0) { $0.sendReturned() }
        }
        XCTAssertEqual(redirectBody.filter(\.isFinal), [HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 5,
                                                                             bytesExpectedToReceive: 5, isFinal: true)])
    }

    func testATransferThatFailsHalfWayReportsHowFarItGotNotAHundredPercent() {
        var tracker = TransferProgressTracker(method: .get, uploadTotal: 0)
        _ = tracker.headReceived(status: .ok, bodyLength: 100, hasLocation: false)
        _ = tracker.sendReturned(status: 200)
        _ = tracker.bodyReceived(50)
        XCTAssertEqual(tracker.ended(), .important, "a timeout half-way")
        XCTAssertEqual(tracker.progress.downloadFraction, 0.5, "it was 1: a failure looked like a success")
        XCTAssertTrue(tracker.progress.didFail)
        // Unknown length: a failure has no fraction, a normal end is whole.
        var chunked = TransferProgressTracker(method: .get, uploadTotal: nil)
        _ = chunked.headReceived(status: .ok, bodyLength: nil, hasLocation: false)
        _ = chunked.sendReturned(status: 200)
        _ = chunked.ended()
        XCTAssertNil(chunked.progress.downloadFraction)
        XCTAssertNil(chunked.progress.uploadFraction)
        var whole = TransferProgressTracker(method: .get, uploadTotal: nil)
        _ = whole.headReceived(status: .ok, bodyLength: nil, hasLocation: false)
        _ = whole.sendReturned(status: 200)
        _ = whole.bodyReceived(10)
        _ = whole.finished()
        XCTAssertEqual(whole.progress.downloadFraction, 1)
        XCTAssertFalse(whole.progress.didFail)
    }

    func testAFailureTheChainRecoversFromDoesNotEndTheProgress() {
        // The origin is gone and the cache serves its stale copy: the transport's failure made the progress final
        // and failed although send returned a response.
        var stale = TransferProgressTracker(method: .get, uploadTotal: 0)
        XCTAssertEqual(stale.ended(), .none, "send has not returned or thrown yet")
        XCTAssertFalse(stale.progress.isFinal)
        XCTAssertEqual(stale.sendReturned(status: 200, localBodyLength: 5), .important)
        XCTAssertEqual(stale.progress, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 5, bytesExpectedToReceive: 5, isFinal: true))
        // A retry step sends again after a failure: the second exchange is followed to its end.
        var retried = TransferProgressTracker(method: .get, uploadTotal: 0)
        _ = retried.ended()
        _ = retried.headReceived(status: .ok, bodyLength: 10, hasLocation: false)
        _ = retried.sendReturned(status: 200)
        _ = retried.bodyReceived(10)
        XCTAssertEqual(retried.finished(), .important)
        XCTAssertEqual(retried.progress.bytesReceived, 10)
        XCTAssertFalse(retried.progress.didFail)
        // Nothing recovers: send throws.
        var failed = TransferProgressTracker(method: .get, uploadTotal: 0)
        _ = failed.ended()
        XCTAssertEqual(failed.sendThrew(), .important)
        XCTAssertTrue(failed.progress.isFinal && failed.progress.didFail)
    }

    // MARK: Responses that did not cross the wire, sends that never started

    func testAResponseTheTransportDidNotBringIsWholeAndFinalWhenSendReturns() {
        // A cache's fresh hit: no head, no body events; progressUpdates() never ended.
        var hit = TransferProgressTracker(method: .get, uploadTotal: 0)
        XCTAssertEqual(hit.sendReturned(status: 200, localBodyLength: 5), .important)
        XCTAssertEqual(hit.progress, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 5, bytesExpectedToReceive: 5, isFinal: true))
        XCTAssertEqual(hit.progress.downloadFraction, 1)
        // The cache's own 504 (only-if-cached), and a hit of unknown length.
        var unavailable = TransferProgressTracker(method: .get, uploadTotal: 0)
        _ = unavailable.sendReturned(status: 504, localBodyLength: 0)
        XCTAssertEqual(unavailable.progress.downloadFraction, 1)
        var unknown = TransferProgressTracker(method: .get, uploadTotal: 0)
        _ = unknown.sendReturned(status: 200, localBodyLength: nil)
        XCTAssertTrue(unknown.progress.isFinal)
        XCTAssertEqual(unknown.progress.downloadFraction, 1)
        // A revalidation: the transport brought a 304, the cache returned its stored 200.
        var revalidated = TransferProgressTracker(method: .get, uploadTotal: 0)
        _ = revalidated.headReceived(status: .notModified, bodyLength: nil, hasLocation: false)
        _ = revalidated.finished()
        XCTAssertEqual(revalidated.sendReturned(status: 200, localBodyLength: 7), .important)
        XCTAssertEqual(revalidated.progress.bytesReceived, 7)
        XCTAssertEqual(revalidated.progress.bytesExpectedToReceive, 7)
        // A redirect the chain followed, whose next hop the cache answered.
        var hop = TransferProgressTracker(method: .get, uploadTotal: 0)
        _ = hop.headReceived(status: .movedPermanently, bodyLength: 30, hasLocation: true)
        _ = hop.bodyReceived(30)
        _ = hop.finished()
        XCTAssertEqual(hop.sendReturned(status: 200, localBodyLength: 9), .important)
        XCTAssertEqual(hop.progress.bytesExpectedToReceive, 9, "not the 301's 30")
        // The transport's own response is still followed as it is read.
        var network = TransferProgressTracker(method: .get, uploadTotal: 0)
        _ = network.headReceived(status: .ok, bodyLength: 100, hasLocation: false)
        XCTAssertEqual(network.sendReturned(status: 200, localBodyLength: 100), .none)
        XCTAssertEqual(network.progress.bytesReceived, 0)
    }

    func testASendRefusedBeforeItStartsStillEndsItsProgress() async throws {
        let seen = Locked<[HTTPTransferProgress]>([])
        var request = HTTPClientRequest(url: "http://127.0.0.1:9/")
        request.method = .put
        request.body = .bytes(Array("abc".utf8))
        request.progressHandler = HTTPProgressHandler { progress in seen.withLock { $0.append(progress) } }
        let client = HTTPClient()
        await client.shutdown()
        do {
            _ = try await client.send(request)
            XCTFail("a shut-down client sends nothing")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .shutdown)
        }
        let failed = HTTPTransferProgress(bytesExpectedToSend: 3, isFinal: true, didFail: true)
        XCTAssertEqual(seen.withLock { $0 }, [failed], "progressUpdates() never ended")
        var configuration = HTTPClient.Configuration()
        configuration.totalTimeout = .zero
        let invalid = HTTPClient(configuration: configuration)
        _ = try? await invalid.send(request)
        XCTAssertEqual(seen.withLock { $0 }, [failed, failed])
        await invalid.shutdown()
    }

    // MARK: Throttling

    func testUpdatesComeAtMostOncePerIntervalAndOnlyAfterTheMinimumFraction() {
        var throttle = ProgressThrottle(minimumInterval: .milliseconds(100), minimumFraction: 0.01)
        var progress = HTTPTransferProgress(bytesExpectedToSend: 0, bytesExpectedToReceive: 10_000)
        XCTAssertTrue(throttle.shouldReport(progress, .important, now: t0))
        var reported = 0
        // A million tiny chunks over one simulated second: at most one value per 100 ms.
        for step in 1...10_000 {
            progress.bytesReceived = step
            if throttle.shouldReport(progress, .update, now: t0 + .microseconds(step * 100)) { reported += 1 }
        }
        XCTAssertEqual(reported, 10)
        // Slow and tiny: the interval passed, but not 1 % more.
        var slow = ProgressThrottle(minimumInterval: .milliseconds(100), minimumFraction: 0.01)
        var value = HTTPTransferProgress(bytesReceived: 0, bytesExpectedToReceive: 1_000_000)
        XCTAssertTrue(slow.shouldReport(value, .important, now: t0))
        value.bytesReceived = 9_999
        XCTAssertFalse(slow.shouldReport(value, .update, now: t0 + .seconds(5)))
        value.bytesReceived = 10_000
        XCTAssertTrue(slow.shouldReport(value, .update, now: t0 + .seconds(5)))
        value.bytesReceived = 10_001
        value.isFinal = true
        XCTAssertTrue(slow.shouldReport(value, .important, now: t0 + .seconds(5)), "the final value always comes")
    }

    func testAWholeBodyAndItsEndAreOneUpdate() {
        var tracker = TransferProgressTracker(method: .get, uploadTotal: 0)
        XCTAssertEqual(tracker.headReceived(status: .ok, bodyLength: 5, hasLocation: false), .important)
        XCTAssertEqual(tracker.bodyReceived(5).combined(with: tracker.finished()), .update, "send has not returned yet")
        XCTAssertEqual(tracker.sendReturned(), .important, "then the final value")
        XCTAssertEqual(tracker.progress, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 5, bytesExpectedToReceive: 5, isFinal: true))
        XCTAssertEqual(TransferProgressTracker.Change.none.combined(with: .important), .important)
        XCTAssertEqual(TransferProgressTracker.Change.update.combined(with: .none), .update)
    }

    func testTheObservationDeliversTheFinalValueLast() {
        let values = Locked<[HTTPTransferProgress]>([])
        let observation = RequestObservation.make(
            requestID: 1, observers: [], handler: HTTPProgressHandler { progress in values.withLock { $0.append(progress) } },
            method: .get, uploadTotal: 0)
        observation.updateProgress(at: t0) { $0.headReceived(status: .ok, bodyLength: 1000, hasLocation: false) }
        for i in 0..<1000 { observation.updateProgress(at: t0 + .microseconds(i)) { $0.bodyReceived(1) } }
        observation.updateProgress(at: t0 + .milliseconds(1)) { $0.sendReturned() }
        observation.updateProgress(at: t0 + .milliseconds(2)) { $0.finished() }
        observation.updateProgress(at: t0 + .milliseconds(3)) { $0.ended() }
        let seen = values.withLock { $0 }
        XCTAssertEqual(seen.count, 2, "the head (with the total) and the final value; the chunks fell inside 100 ms")
        XCTAssertEqual(seen.last, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 1000, bytesExpectedToReceive: 1000, isFinal: true))
        XCTAssertEqual(seen.filter(\.isFinal).count, 1, "a late failure after the final value reports nothing")
    }
}
