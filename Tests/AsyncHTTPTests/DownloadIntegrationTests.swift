import Foundation
import HTTPTypes
import XCTest
@testable import AsyncHTTP

/// `HTTPClient.download(_:to:options:)` against nginx (whole files, ranges, `If-Range`) and the fault server
/// (bodies cut mid-way, a resource that changes between attempts).
final class DownloadIntegrationTests: XCTestCase {
    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("downloads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        return directory
    }

    func contents(of directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    func bigBin() throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: try Peers.directory() + "/www/big.bin"))
    }

    func testADownloadFromNginxIsByteExactWithTheUsersModeAndLeavesNothingBehind() async throws {
        let nginx = try Peers.nginx()
        let directory = try temporaryDirectory()
        let destination = directory.appendingPathComponent("big.bin").path
        let client = HTTPClient()
        let result = try await client.download(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/big.bin"), to: destination)
        await client.shutdown()
        XCTAssertEqual(result.status.code, 200)
        XCTAssertTrue(result.written)
        XCTAssertEqual(result.fileSize, 8 << 20)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: destination)), try bigBin())
        // The mode of any new file of the user's (0666 less the umask), as curl's: private only while it is written.
        let probe = directory.appendingPathComponent("probe").path
        XCTAssertTrue(FileManager.default.createFile(atPath: probe, contents: Data()))
        let expected = try FileManager.default.attributesOfItem(atPath: probe)[.posixPermissions] as? Int
        try FileManager.default.removeItem(atPath: probe)
        let permissions = try FileManager.default.attributesOfItem(atPath: destination)[.posixPermissions] as? Int
        XCTAssertEqual(permissions, expected)
        XCTAssertEqual(try contents(of: directory), ["big.bin"])
    }

    func testAnErrorStatusNeverReplacesTheFileUnlessAsked() async throws {
        let nginx = try Peers.nginx()
        let directory = try temporaryDirectory()
        let destination = directory.appendingPathComponent("keep.txt").path
        try Data("precious".utf8).write(to: URL(fileURLWithPath: destination))
        let client = HTTPClient()
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/missing")
        let result = try await client.download(request, to: destination)
        XCTAssertEqual(result.status.code, 404)
        XCTAssertFalse(result.written)
        XCTAssertEqual(try String(contentsOfFile: destination, encoding: .utf8), "precious")
        XCTAssertEqual(try contents(of: directory), ["keep.txt"])

        let written = try await client.download(request, to: destination, options: DownloadOptions(writesErrorResponses: true))
        XCTAssertTrue(written.written)
        XCTAssertTrue(try String(contentsOfFile: destination, encoding: .utf8).contains("404"))
        await client.shutdown()
    }

    static let full = String(repeating: "0123456789", count: 100)  // 1000 bytes

    func testABodyCutMidwayLeavesTheDestinationUntouchedAndNothingBehind() async throws {
        let server = try FaultServer(script: FaultScript([[
            .send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: \"v1\"\r\n\r\n" + String(Self.full.prefix(400))), .close,
        ]]))
        defer { server.stop() }
        let directory = try temporaryDirectory()
        let destination = directory.appendingPathComponent("file.txt").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: destination))
        let client = HTTPClient()
        do {
            _ = try await client.download(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/file"), to: destination)
            XCTFail("a cut body must fail")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .connectionClosed)
        }
        await client.shutdown()
        XCTAssertEqual(try String(contentsOfFile: destination, encoding: .utf8), "old")
        XCTAssertEqual(try contents(of: directory), ["file.txt"])
    }

    func testAResumedDownloadAfterACutIsByteExact() async throws {
        let full = Self.full
        let server = try FaultServer(script: FaultScript([
            [.send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: \"v1\"\r\n\r\n" + String(full.prefix(400))), .close],
            [.send("HTTP/1.1 206 Partial Content\r\nContent-Length: 600\r\nContent-Range: bytes 400-999/1000\r\nETag: \"v1\"\r\n\r\n"
                   + String(full.dropFirst(400)))],
        ]))
        defer { server.stop() }
        let directory = try temporaryDirectory()
        let destination = directory.appendingPathComponent("file.txt").path
        let client = HTTPClient()
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/file")
        let options = DownloadOptions(resume: true)
        do {
            _ = try await client.download(request, to: destination, options: options)
            XCTFail("a cut body must fail")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .connectionClosed)
        }
        XCTAssertEqual(try contents(of: directory), ["file.txt.part", "file.txt.part.validator"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: destination + ".part")).count, 400)

        let result = try await client.download(request, to: destination, options: options)
        await client.shutdown()
        XCTAssertEqual(result.status.code, 206)
        XCTAssertEqual(result.resumedFrom, 400)
        XCTAssertEqual(result.bytesReceived, 600)
        XCTAssertEqual(result.fileSize, 1000)
        XCTAssertEqual(try String(contentsOfFile: destination, encoding: .utf8), full)
        XCTAssertEqual(try contents(of: directory), ["file.txt"])
        let heads = server.requestHeads
        XCTAssertEqual(heads.count, 2)
        XCTAssertFalse(heads[0].contains("Range:"))
        XCTAssertFalse(heads[0].lowercased().contains("accept-encoding"), "a resumable download asks for identity bytes")
        XCTAssertTrue(heads[1].contains("Range: bytes=400-\r\n"), heads[1])
        XCTAssertTrue(heads[1].contains("If-Range: \"v1\"\r\n"), heads[1])
    }

    func testAChangedETagBetweenAttemptsDownloadsTheWholeWithoutSplicing() async throws {
        let changed = String(repeating: "ABCDEFGHIJ", count: 120)  // 1200 bytes, another version
        let server = try FaultServer(script: FaultScript([
            [.send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: \"v1\"\r\n\r\n" + String(Self.full.prefix(400))), .close],
            [.response(changed, headers: ["ETag: \"v2\""])],
        ]))
        defer { server.stop() }
        let directory = try temporaryDirectory()
        let destination = directory.appendingPathComponent("file.txt").path
        let client = HTTPClient()
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/file")
        let options = DownloadOptions(resume: true)
        _ = try? await client.download(request, to: destination, options: options)
        let result = try await client.download(request, to: destination, options: options)
        await client.shutdown()
        XCTAssertEqual(result.status.code, 200)
        XCTAssertEqual(result.resumedFrom, 0)
        XCTAssertEqual(try String(contentsOfFile: destination, encoding: .utf8), changed, "the new version whole, no splice")
        XCTAssertTrue(server.requestHeads.last?.contains("If-Range: \"v1\"") == true)
        XCTAssertEqual(try contents(of: directory), ["file.txt"])
    }

    func testResumingFromNginxHonoursIfRange() async throws {
        let nginx = try Peers.nginx()
        let url = "http://127.0.0.1:\(nginx.httpPort)/big.bin"
        let big = try bigBin()
        let client = HTTPClient()
        var head = HTTPClientRequest(url: url)
        head.method = .head
        let etag = try await client.send(head).headers[HTTPField.Name("ETag")!]
        XCTAssertNotNil(etag)
        let directory = try temporaryDirectory()
        let destination = directory.appendingPathComponent("big.bin").path
        let sidecar = destination + ".part.validator"

        // A partial file with the right validator: nginx answers 206 from byte N.
        try big.prefix(3 << 20).write(to: URL(fileURLWithPath: destination + ".part"))
        try Data("AsyncHTTP partial download 1\netag: \(etag ?? "")\n".utf8).write(to: URL(fileURLWithPath: sidecar))
        let resumed = try await client.download(HTTPClientRequest(url: url), to: destination, options: DownloadOptions(resume: true))
        XCTAssertEqual(resumed.status.code, 206)
        XCTAssertEqual(resumed.resumedFrom, 3 << 20)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: destination)), big)

        // A partial file of something else, with a stale validator: nginx ignores the range (200), no splice.
        try Data(repeating: 0x55, count: 1 << 20).write(to: URL(fileURLWithPath: destination + ".part"))
        try Data("AsyncHTTP partial download 1\netag: \"stale\"\n".utf8).write(to: URL(fileURLWithPath: sidecar))
        let restarted = try await client.download(HTTPClientRequest(url: url), to: destination, options: DownloadOptions(resume: true))
        XCTAssertEqual(restarted.status.code, 200)
        XCTAssertEqual(restarted.resumedFrom, 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: destination)), big)

        // The whole file already kept: 416 with the same length completes it.
        try big.write(to: URL(fileURLWithPath: destination + ".part"))
        try Data("AsyncHTTP partial download 1\netag: \(etag ?? "")\n".utf8).write(to: URL(fileURLWithPath: sidecar))
        try FileManager.default.removeItem(atPath: destination)
        let complete = try await client.download(HTTPClientRequest(url: url), to: destination, options: DownloadOptions(resume: true))
        XCTAssertEqual(complete.status.code, 416)
        XCTAssertTrue(complete.written)
        XCTAssertEqual(complete.bytesReceived, 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: destination)), big)
        XCTAssertEqual(try contents(of: directory), ["big.bin"])
        await client.shutdown()
    }

    func testAPartialFileWithoutAValidatorIsStartedAgain() async throws {
        let nginx = try Peers.nginx()
        let directory = try temporaryDirectory()
        let destination = directory.appendingPathComponent("small.txt").path
        try Data(repeating: 0x21, count: 100).write(to: URL(fileURLWithPath: destination + ".part"))
        let client = HTTPClient()
        let result = try await client.download(HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/small.txt"),
                                               to: destination, options: DownloadOptions(resume: true))
        await client.shutdown()
        XCTAssertEqual(result.resumedFrom, 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: destination)),
                       try Data(contentsOf: URL(fileURLWithPath: try Peers.directory() + "/www/small.txt")))
    }
}

extension DownloadIntegrationTests {
    func testAFailedResumableDownloadThatGotNoBytesLeavesNothingAndSpecialFilesAreRefused() async throws {
        let server = try FaultServer(script: .resetAfterRequest)
        defer { server.stop() }
        let directory = try temporaryDirectory()
        let destination = directory.appendingPathComponent("f.bin").path
        let client = HTTPClient()
        do {
            _ = try await client.download(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"), to: destination,
                                          options: DownloadOptions(resume: true))
            XCTFail("a reset must fail")
        } catch is HTTPClientError {}
        XCTAssertEqual(try contents(of: directory), [])
        do {
            _ = try await client.download(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/"), to: "/dev/null")
            XCTFail("a device is not a download destination")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest)
        }
        await client.shutdown()
    }
}
