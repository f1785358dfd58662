import HTTPTypes
import XCTest

@testable import AsyncHTTP
@testable import AsyncHTTP1

/// A peer that is no HTTP server (an SSH or SMTP banner, a line of text) is refused at its first line feed, not
/// at a blank line that never comes, the inactivity timeout or the close: the parser checks the status line as
/// soon as it is whole, however the bytes arrive.
final class StatusLineEarlyRefusalTests: XCTestCase {
    /// Feeds `wire` in pieces of `piece` bytes; returns the error and how many bytes had been fed when it came,
    /// or nil (with a failure) if every piece was taken without one.
    func firstError(_ wire: String, piece: Int, file: StaticString = #filePath, line: UInt = #line) -> (HTTP1Error, fed: Int)? {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        let bytes = Array(wire.utf8)
        var fed = 0
        while fed < bytes.count {
            let end = min(bytes.count, fed + piece)
            var pending = Array(bytes[fed..<end])
            fed = end
            do {
                // Bounded: each call consumes at least one byte or asks for more.
                for _ in 0..<1000 {
                    let (event, consumed) = try pending.withUnsafeBytes { try parser.parse($0) }
                    pending.removeFirst(consumed)
                    if event == .needMoreData || pending.isEmpty { break }
                }
            } catch let error as HTTP1Error {
                return (error, fed)
            } catch {
                XCTFail("unexpected \(error)", file: file, line: line)
                return nil
            }
        }
        XCTFail("'\(wire)' was taken without an error", file: file, line: line)
        return nil
    }

    func testABannerIsRefusedAtItsFirstLineFeedWhateverThePieces() {
        let banners = [
            "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n",
            "220 mail.example.test ESMTP Postfix (Debian/GNU)\r\n",
            "+OK POP3 server ready\n",
            "\r\n",
        ]
        for banner in banners {
            let lineFeed = Array(banner.utf8).firstIndex(of: 0x0A)! + 1
            // What a server says next, with no line feed (so no blank line) in it: the refusal must come at the
            // banner's line feed, not after these.
            let wire = banner + "more of the peer's talk, and no line end"
            for piece in [wire.utf8.count, 1, 2, 7] {
                guard let (error, fed) = firstError(wire, piece: piece) else { continue }
                XCTAssertEqual(error.code, .malformedResponse, "\(banner.debugDescription) in pieces of \(piece)")
                XCTAssertTrue(error.message.contains("status line"), error.message)
                XCTAssertLessThan(fed - lineFeed, piece, "refused only after more than the first line came")
                XCTAssertGreaterThanOrEqual(fed, lineFeed, "refused before the line was whole")
            }
        }
    }

    func testTheRefusalNamesTheLineAsTheFullParseDoes() {
        guard let (error, _) = firstError("SSH-2.0-OpenSSH_9.2\r\n", piece: 3) else { return }
        XCTAssertTrue(error.message.contains("invalid status line 'SSH-2.0-OpenSSH_9.2'"), error.message)
    }

    func testAValidStatusLineAloneWaitsForTheRestOfTheHead() throws {
        for piece in [1, 4, 100] {
            var parser = HTTP1ResponseParser()
            parser.expectResponse(to: .get)
            let bytes = Array("HTTP/1.1 200 OK\r\nServer: nginx\r\n".utf8)
            var fed = 0
            while fed < bytes.count {
                let end = min(bytes.count, fed + piece)
                let pending = Array(bytes[fed..<end])
                fed = end
                let (event, consumed) = try pending.withUnsafeBytes { try parser.parse($0) }
                XCTAssertEqual(event, .needMoreData)
                XCTAssertEqual(consumed, pending.count)
            }
            let rest = Array("Content-Length: 2\r\n\r\nok".utf8)
            let (event, _) = try rest.withUnsafeBytes { try parser.parse($0) }
            guard case .head(let head) = event else { return XCTFail("expected the head, got \(event)") }
            XCTAssertEqual(head.status.code, 200)
            XCTAssertEqual(head.headers[.server], "nginx")
        }
    }

    /// Through the client: an SSH server on the port answers its banner and waits for the client's. The request
    /// fails as a response that is not HTTP, not as a timeout (the inactivity timeout is far off, 10 s).
    func testARequestToAnSSHServerFailsAtTheBannerNotAtATimeout() async throws {
        let server = try FaultServer(script: FaultScript(onAccept: { _ in [.send("SSH-2.0-OpenSSH_9.2p1\r\n"), .hold] }, onRequest: { _, _ in [] }))
        defer { server.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        configuration.inactivityTimeout = .seconds(10)
        let client = HTTPClient(configuration: configuration)
        do {
            let response = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"))
            XCTFail("an SSH banner was taken for a response: \(response.status)")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .malformedResponse, "\(error)")
            XCTAssertTrue(error.message.contains("SSH-2.0-OpenSSH_9.2p1"), error.message)
        }
        await client.shutdown()
    }
}
