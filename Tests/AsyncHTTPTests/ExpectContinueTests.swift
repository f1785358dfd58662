import Foundation
import HTTPTypes
import XCTest
@testable import AsyncHTTP

/// `Expect: 100-continue` against a raw server that records every byte it received after each request head.
final class ExpectContinueTests: XCTestCase {
    let body = [UInt8](repeating: 0x61, count: 200_000)

    func client(minimumBodySize: Int = 1024, timeout: Duration = .seconds(1)) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.expectContinue = ExpectContinuePolicy(minimumBodySize: minimumBodySize, timeout: timeout)
        return HTTPClient(configuration: configuration)
    }

    func request(_ server: ExpectContinueServer) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/upload")
        request.method = .put
        request.body = .bytes(body)
        return request
    }

    func testA401BeforeTheBodyMeansTheBodyIsNeverSent() async throws {
        let server = try ExpectContinueServer { _, _ in
            .finalBeforeBody("HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\nWWW-Authenticate: Basic realm=\"x\"\r\n\r\nnope")
        }
        defer { server.stop() }
        let client = client()
        let response = try await client.send(request(server))
        XCTAssertEqual(response.status.code, 401)
        let value1 = try await response.body.collect(upTo: 100)
        XCTAssertEqual(value1, Array("nope".utf8))
        // The server was promised 200000 bytes it never got: that connection cannot carry another request.
        let records = waitForRecords(server, count: 1)
        _ = try await client.send(request(server))
        XCTAssertEqual(client.connectionsOpened, 2, "the connection of the withheld body was closed, not reused")
        await client.shutdown()
        XCTAssertTrue(records[0].head.contains("Expect: 100-continue\r\n"), records[0].head)
        XCTAssertTrue(records[0].head.contains("Content-Length: 200000\r\n"))
        XCTAssertEqual(records[0].bytesAfterHead, 0, "not one byte of the body was sent")
    }

    func testAnAuthRetryAfterAnEarly401UploadsTheFileOnce() async throws {
        let path = try temporaryFile(body)
        let server = try ExpectContinueServer { connection, head in
            head.contains("Authorization: Basic") ? .continueThenOK
                : .finalBeforeBody("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nWWW-Authenticate: Basic realm=\"x\"\r\n\r\n")
        }
        defer { server.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.expectContinue = ExpectContinuePolicy(minimumBodySize: 1024)
        configuration.authentication.allowsBasicOverPlainHTTP = true  // loopback test server
        let client = HTTPClient(configuration: configuration)
        var request = request(server)
        request.body = try .file(path)
        request.credentials = HTTPCredentials(username: "user", password: "secret")
        let response = try await client.send(request)
        XCTAssertEqual(response.status.code, 200)
        let value2 = try await response.text(upTo: 100)
        XCTAssertEqual(value2, "200000")
        await client.shutdown()
        let records = waitForRecords(server, count: 2)
        XCTAssertEqual(records.map(\.bytesAfterHead), [0, 200_000], "the body went out once, after the 100")
    }

    func testA417BeforeTheBodyIsRetriedOnceWithoutTheExpectation() async throws {
        let server = try ExpectContinueServer { connection, head in
            head.contains("Expect:") ? .finalBeforeBody("HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n")
                : .silentThenOK
        }
        defer { server.stop() }
        let client = client()
        let response = try await client.send(request(server))
        XCTAssertEqual(response.status.code, 200)
        let value3 = try await response.text(upTo: 100)
        XCTAssertEqual(value3, "200000")
        await client.shutdown()
        let records = waitForRecords(server, count: 2)
        XCTAssertTrue(records[0].head.contains("Expect: 100-continue"))
        XCTAssertFalse(records[1].head.contains("Expect:"))
        XCTAssertEqual(records.map(\.bytesAfterHead), [0, 200_000])
    }

    /// RFC 9110 §10.1.1: a 417 to a request that carried the expectation is repeated without it, also when the
    /// wait ran out and the body had gone out (a replayable body is sent twice; the server acted on neither).
    /// The old code returned that 417.
    func testA417AfterTheBodyIsRetriedOnceWithoutTheExpectation() async throws {
        let server = try ExpectContinueServer { connection, head in
            head.contains("Expect:") ? .silentThenFinal("HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                : .silentThenOK
        }
        defer { server.stop() }
        let client = client(timeout: .milliseconds(100))
        let response = try await client.send(request(server))
        XCTAssertEqual(response.status.code, 200)
        let text = try await response.text(upTo: 100)
        XCTAssertEqual(text, "200000")
        await client.shutdown()
        let records = waitForRecords(server, count: 2)
        XCTAssertTrue(records[0].head.contains("Expect: 100-continue"))
        XCTAssertFalse(records[1].head.contains("Expect:"))
        XCTAssertEqual(records.map(\.bytesAfterHead), [200_000, 200_000])
    }

    func testTheBodyGoesOutAfter100Continue() async throws {
        let server = try ExpectContinueServer { _, _ in .continueThenOK }
        defer { server.stop() }
        let client = client(timeout: .seconds(30))
        let started = ContinuousClock.now
        let response = try await client.send(request(server))
        let value4 = try await response.text(upTo: 100)
        XCTAssertEqual(value4, "200000")
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(20), "sent on the 100, not after the 30 s wait")
        await client.shutdown()
    }

    func testTheBodyGoesOutAfterTheTimeoutWhenTheServerSaysNothing() async throws {
        let server = try ExpectContinueServer { _, _ in .silentThenOK }
        defer { server.stop() }
        let client = client(timeout: .milliseconds(200))
        let response = try await client.send(request(server))
        let value5 = try await response.text(upTo: 100)
        XCTAssertEqual(value5, "200000")
        await client.shutdown()
        XCTAssertTrue(waitForRecords(server, count: 1)[0].head.contains("Expect: 100-continue"))
    }

    func testTheTotalDeadlineStillEndsTheWait() async throws {
        let server = try ExpectContinueServer { _, _ in .silentThenOK }
        defer { server.stop() }
        let client = client(timeout: .seconds(30))
        var request = request(server)
        request.timeout = .milliseconds(300)
        do {
            _ = try await client.send(request)
            XCTFail("the total deadline must end the wait for 100 Continue")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .timeout)
            XCTAssertEqual(error.timeoutPhase, .total)
        }
        await client.shutdown()
        XCTAssertEqual(waitForRecords(server, count: 1)[0].bytesAfterHead, 0)
    }

    func testSmallBodiesAndHTTP10DoNotWait() async throws {
        let server = try ExpectContinueServer { _, _ in .silentThenOK }
        defer { server.stop() }
        let client = client(minimumBodySize: 1 << 20, timeout: .seconds(30))
        var small = request(server)
        small.body = .bytes(Array("tiny".utf8))
        let value6 = try await client.send(small).text(upTo: 100)
        XCTAssertEqual(value6, "4")
        var old = request(server)
        old.version = .http1_0
        old.expectContinue = ExpectContinuePolicy(minimumBodySize: 1)
        let value7 = try await client.send(old).text(upTo: 100)
        XCTAssertEqual(value7, "200000")
        await client.shutdown()
        let records = waitForRecords(server, count: 2)
        XCTAssertFalse(records[0].head.contains("Expect:"))
        XCTAssertFalse(records[1].head.contains("Expect:"))
    }

    func testAMissingFileFailsBeforeAnythingIsSent() async throws {
        let path = try temporaryFile(body)
        let server = try ExpectContinueServer { _, _ in .silentThenOK }
        defer { server.stop() }
        var request = request(server)
        request.body = try .file(path)
        try FileManager.default.removeItem(atPath: path)
        let client = client()
        do {
            _ = try await client.send(request)
            XCTFail("a file removed before sending must fail")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest)
            XCTAssertTrue(error.message.contains(path), error.message)
        }
        await client.shutdown()
        XCTAssertTrue(server.records.isEmpty, "no request head reached the server")
    }

    func testExpectContinuePolicyThreshold() {
        XCTAssertFalse(ExpectContinuePolicy.default.applies(toBodyLength: 1000))
        XCTAssertTrue(ExpectContinuePolicy.default.applies(toBodyLength: 1 << 20))
        XCTAssertTrue(ExpectContinuePolicy.default.applies(toBodyLength: nil), "unknown length: may be large")
        XCTAssertFalse(ExpectContinuePolicy.never.applies(toBodyLength: nil))
        XCTAssertFalse(ExpectContinuePolicy(minimumBodySize: 0).applies(toBodyLength: 0), "no content, no expectation")
    }

    func testBodyWithheldClosesTheConnectionAfterTheResponse() {
        var machine = HTTP1ConnectionStateMachine()
        XCTAssertEqual(machine.requestStarted(persistent: true), .writeRequest)
        machine.wrote(100)
        XCTAssertEqual(machine.headReceived(keepAlive: true, keepAliveMax: nil, keepAliveTimeout: nil), .readBody)
        machine.bodyWithheld()
        XCTAssertEqual(machine.bodyEnded(), .close)
        XCTAssertEqual(machine.state, .mustClose)
    }

    func testTheParserNotesA100ContinueButNotOther1xx() throws {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .put)
        let early = Array("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n".utf8)
        _ = try early.withUnsafeBytes { try parser.parse($0) }
        XCTAssertFalse(parser.receivedContinue)
        let go = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
        let (event, consumed) = try go.withUnsafeBytes { try parser.parse($0) }
        XCTAssertEqual(event, .needMoreData)
        XCTAssertEqual(consumed, go.count)
        XCTAssertTrue(parser.receivedContinue)
        parser.expectResponse(to: .put)
        XCTAssertFalse(parser.receivedContinue, "reset for the next request")
    }

    // MARK: Helpers

    /// The server's records once it has `count` of them and the last connection is finished (bounded: 5 s).
    func waitForRecords(_ server: ExpectContinueServer, count: Int) -> [ExpectContinueServer.Record] {
        let deadline = Date().addingTimeInterval(5)
        var last: [ExpectContinueServer.Record] = []
        while Date() < deadline {
            last = server.records
            if last.count >= count {
                Thread.sleep(forTimeInterval: 0.1)  // the last connection's trailing bytes, if any
                return server.records
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTFail("the server recorded \(last.count) requests, expected \(count)")
        return last + Array(repeating: .init(head: "", bytesAfterHead: -1), count: max(0, count - last.count))
    }

    func temporaryFile(_ bytes: [UInt8]) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("expect-\(UUID().uuidString).bin")
        try Data(bytes).write(to: url)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url.path
    }
}
