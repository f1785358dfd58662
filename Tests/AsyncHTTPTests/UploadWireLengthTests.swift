import Foundation
import HTTPTypes
import XCTest
@testable import AsyncHTTP

/// What goes on the wire decides an upload's progress and its end, against nginx (`/dav/` stores a PUT body as
/// it came, see scripts/test.sh): a body the client compresses counts up to its compressed length, and a stream
/// of known length ends at that length even if its source never finishes.
final class UploadWireLengthTests: XCTestCase {
    func storedPath(_ name: String) throws -> String {
        let stored = try Peers.directory() + "/dav/" + name
        addTeardownBlock { try? FileManager.default.removeItem(atPath: stored) }
        return stored
    }

    /// A compressed upload's progress ends at the length that went out, not at a fraction of the caller's (it
    /// ended near 5 % for compressible text when the total was the uncompressed length).
    func testACompressedUploadCountsUpToTheLengthThatWentOut() async throws {
        let nginx = try Peers.nginx()
        let name = "gzip-\(UUID().uuidString).bin"
        let stored = try storedPath(name)
        let text = Array(String(repeating: "a line of text that compresses well\n", count: 40_000).utf8) // 1.4 MB
        let client = HTTPClient()
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/dav/\(name)")
        request.method = .put
        request.body = .bytes(text)
        request.compressesBody = true
        let values = Locked<[HTTPTransferProgress]>([])
        request.progressHandler = HTTPProgressHandler(minimumInterval: .zero, minimumFraction: 0) { progress in
            values.withLock { $0.append(progress) }
        }
        let response = try await client.send(request)
        XCTAssertEqual(response.status.code, 201)
        _ = try await response.body.collect(upTo: 1 << 20)
        await client.shutdown()
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: stored)).count
        XCTAssertLessThan(onDisk, text.count / 10, "nginx stores the gzip body as it came")
        let last = try XCTUnwrap(values.withLock { $0.last })
        XCTAssertTrue(last.isFinal)
        XCTAssertFalse(last.didFail)
        XCTAssertEqual(last.bytesSent, onDisk)
        XCTAssertEqual(last.bytesExpectedToSend, onDisk, "the total is the body on the wire")
        XCTAssertEqual(last.uploadFraction, 1)
        let sent = values.withLock { $0.map(\.bytesSent) }
        XCTAssertEqual(sent, sent.sorted(), "upload progress never runs backwards")
    }

    /// A stream declared `n` bytes long that yields them and then never finishes: the body is complete at `n`,
    /// and the request gets its response (it waited for the source's end until the request's deadline).
    func testAStreamOfKnownLengthThatNeverFinishesEndsAtItsLength() async throws {
        let nginx = try Peers.nginx()
        let name = "stream-\(UUID().uuidString).bin"
        let stored = try storedPath(name)
        let chunk = Array(repeating: UInt8(ascii: "x"), count: 64 * 1024)
        let (chunks, continuation) = AsyncStream<[UInt8]>.makeStream()
        for _ in 0..<4 { continuation.yield(chunk) }
        // Never finished until the test ends: the source stays open after its last byte.
        defer { continuation.finish() }
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        configuration.totalTimeout = .seconds(20) // bounded: the old behaviour failed with a timeout here
        let client = HTTPClient(configuration: configuration)
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/dav/\(name)")
        request.method = .put
        request.body = .stream(chunks, length: .known(4 * chunk.count))
        let response = try await client.send(request)
        XCTAssertEqual(response.status.code, 201)
        _ = try await response.body.collect(upTo: 1 << 20)
        await client.shutdown()
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: stored)), Data(Array(repeating: UInt8(ascii: "x"), count: 4 * chunk.count)))
    }

    /// One that ends short of its length still fails, naming both counts.
    func testAStreamThatEndsShortOfItsLengthStillFails() async throws {
        let nginx = try Peers.nginx()
        let (chunks, continuation) = AsyncStream<[UInt8]>.makeStream()
        continuation.yield(Array(repeating: 1, count: 1000))
        continuation.finish()
        let client = HTTPClient()
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/dav/short-\(UUID().uuidString).bin")
        request.method = .put
        request.body = .stream(chunks, length: .known(2000))
        do {
            _ = try await client.send(request)
            XCTFail("a body 1000 bytes short was sent as complete")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest)
            XCTAssertTrue(error.message.contains("ended after 1000 of its declared 2000 bytes"), error.message)
        }
        await client.shutdown()
    }
}
