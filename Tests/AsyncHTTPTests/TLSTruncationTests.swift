import HTTPTypes
import XCTest

@testable import AsyncHTTP

/// RFC 9112 §9.8 over TLS: a body delimited by the connection's close is complete only when the server said
/// so with close_notify. A TCP close or reset without it is a truncation (`.connectionClosed`, with the bytes
/// received); where Content-Length or chunked framing proves the body complete, the missing close_notify is
/// forgiven, as many servers close that way.
final class TLSTruncationTests: XCTestCase {
    static let untilClose = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of the body".utf8)
    static let withLength = Array("HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\nall of the body".utf8)
    static let chunked = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nf\r\nall of the body\r\n0\r\n\r\n".utf8)

    func client() -> HTTPClient {
        var tls = TLSConfiguration()
        tls.trustRoots = .file(TestTLS.shared.caFile)
        var configuration = HTTPClient.Configuration(tls: tls)
        configuration.connectTimeout = .seconds(5)
        configuration.inactivityTimeout = .seconds(5)
        return HTTPClient(configuration: configuration)
    }

    func fetch(_ response: [UInt8], ending: TLSCloseServer.Ending) async throws -> Result<[UInt8], HTTPClientError> {
        let server = try await TLSCloseServer(response: response, ending: ending)
        let client = client()
        defer {
            Task {
                await client.shutdown()
                try? await server.shutdown()
            }
        }
        do {
            let response = try await client.send(HTTPClientRequest(url: server.url))
            return .success(try await response.body.collect(upTo: 1000))
        } catch let error as HTTPClientError {
            return .failure(error)
        }
    }

    func testBodyReadUntilCloseEndsCleanlyWithCloseNotify() async throws {
        let result = try await fetch(Self.untilClose, ending: .closeNotify)
        XCTAssertEqual(try result.get(), Array("all of the body".utf8))
    }

    func testBodyReadUntilCloseWithoutCloseNotifyIsTruncation() async throws {
        for ending in [TLSCloseServer.Ending.tcpCloseWithoutCloseNotify, .reset] {
            let result = try await fetch(Self.untilClose, ending: ending)
            guard case .failure(let error) = result else {
                XCTFail("\(ending): a body without close_notify passed for complete: \(result)")
                continue
            }
            XCTAssertEqual(error.code, .connectionClosed, "\(ending): \(error)")
            XCTAssertNotNil(error.bytesReceived, "\(ending)")
            if ending == .tcpCloseWithoutCloseNotify {
                // A reset may also discard bytes the client had not read yet; a FIN never does.
                XCTAssertTrue(error.message.contains("close_notify"), "\(ending): \(error)")
                XCTAssertEqual(error.bytesReceived, Self.untilClose.count, "\(ending)")
            }
        }
    }

    func testFramedBodiesWithoutCloseNotifyAreStillComplete() async throws {
        for response in [Self.withLength, Self.chunked] {
            let result = try await fetch(response, ending: .tcpCloseWithoutCloseNotify)
            XCTAssertEqual(try result.get(), Array("all of the body".utf8))
        }
    }
}
