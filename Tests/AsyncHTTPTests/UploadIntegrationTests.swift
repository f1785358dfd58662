import Foundation
import HTTPTypes
import XCTest
@testable import AsyncHTTP

/// Request bodies from disk and forms against real peers: httpbin parses forms and multipart, nginx stores
/// PUT bodies (`location /dav/` with `dav_methods PUT`, see scripts/test.sh).
final class UploadIntegrationTests: XCTestCase {
    func json(_ response: HTTPClientResponse) async throws -> [String: Any] {
        let bytes = try await response.body.collect(upTo: 8 << 20)
        guard let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw PeerError("httpbin did not answer a JSON object: \(String(decoding: bytes.prefix(200), as: UTF8.self))")
        }
        return object
    }

    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("uploads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        return directory
    }

    func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    func testMultipartFormWithABinaryFilePartAsHttpbinParsesIt() async throws {
        let directory = try temporaryDirectory()
        let binary = randomBytes(100_000) + Array(0...255)
        let fileURL = directory.appendingPathComponent("photo.png")
        try Data(binary).write(to: fileURL)

        var form = MultipartForm()
        form.append("title", "Holiday ünïcode")
        form.append("tag", "a")
        form.append("tag", "b")
        try form.appendFile("photo", path: fileURL.path)
        form.append("notes", data: Array("some notes".utf8), filename: "notes.txt")
        var request = HTTPClientRequest(url: try Peers.httpbin() + "/anything")
        try request.setForm(form)
        let expectedLength = request.body?.length
        XCTAssertNotNil(expectedLength, "the length is known up front")

        let client = HTTPClient()
        let answer = try await json(try await client.send(request))
        await client.shutdown()
        XCTAssertEqual(answer["method"] as? String, "POST")
        let fields = answer["form"] as? [String: Any]
        XCTAssertEqual(fields?["title"] as? String, "Holiday ünïcode")
        XCTAssertEqual(fields?["tag"] as? [String], ["a", "b"], "repeated names, in order")
        let files = answer["files"] as? [String: Any]
        XCTAssertEqual(files?["photo"] as? String, "data:image/png;base64," + Data(binary).base64EncodedString())
        XCTAssertEqual(files?["notes"] as? String, "some notes")
        let headers = answer["headers"] as? [String: Any]
        XCTAssertEqual(headers?["Content-Length"] as? String, expectedLength.map(String.init))
        XCTAssertTrue((headers?["Content-Type"] as? String)?.hasPrefix("multipart/form-data; boundary=") == true)
    }

    func testURLEncodedFormAsHttpbinParsesIt() async throws {
        var form = URLEncodedForm()
        form.append("q", "swift & http = fun")
        form.append("tag", "x")
        form.append("tag", "y")
        form.append("emoji", "€ 😀")
        var request = HTTPClientRequest(url: try Peers.httpbin() + "/post")
        request.setForm(form)
        let client = HTTPClient()
        let answer = try await json(try await client.send(request))
        await client.shutdown()
        let fields = answer["form"] as? [String: Any]
        XCTAssertEqual(fields?["q"] as? String, "swift & http = fun")
        XCTAssertEqual(fields?["tag"] as? [String], ["x", "y"])
        XCTAssertEqual(fields?["emoji"] as? String, "€ 😀")
        XCTAssertEqual((answer["headers"] as? [String: Any])?["Content-Type"] as? String, "application/x-www-form-urlencoded")
    }

    func testAPUTWithAFormStaysAPUT() async throws {
        var request = HTTPClientRequest(url: try Peers.httpbin() + "/anything")
        request.method = .put
        request.setForm(URLEncodedForm([("a", "1")]))
        let client = HTTPClient()
        let answer = try await json(try await client.send(request))
        await client.shutdown()
        XCTAssertEqual(answer["method"] as? String, "PUT")
        XCTAssertEqual((answer["form"] as? [String: Any])?["a"] as? String, "1")
    }

    func testAFileBodyIsSentAgainAfterA307() async throws {
        let directory = try temporaryDirectory()
        let text = String(repeating: "replayable file body\n", count: 500)
        let fileURL = directory.appendingPathComponent("body.txt")
        try Data(text.utf8).write(to: fileURL)
        var request = HTTPClientRequest(url: try Peers.httpbin() + "/redirect-to?url=%2Fanything&status_code=307")
        request.method = .put
        request.body = try .file(fileURL.path)
        let client = HTTPClient()
        let response = try await client.send(request)
        XCTAssertEqual(response.history.count, 1)
        let answer = try await json(response)
        await client.shutdown()
        XCTAssertEqual(answer["method"] as? String, "PUT")
        XCTAssertEqual(answer["data"] as? String, text)
    }

    func testAFilePUTToNginxIsStoredByteForByte() async throws {
        let nginx = try Peers.nginx()
        // The peers' 8 MiB of random bytes as the file to send.
        let fileURL = URL(fileURLWithPath: try Peers.directory() + "/www/big.bin")
        let bytes = try Data(contentsOf: fileURL)
        let name = "upload-\(UUID().uuidString).bin"
        let stored = try Peers.directory() + "/dav/" + name
        addTeardownBlock { try? FileManager.default.removeItem(atPath: stored) }

        let client = HTTPClient()
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/dav/\(name)")
        request.method = .put
        request.body = try .file(fileURL.path)   // 8 MiB: goes out with Expect: 100-continue, which nginx answers
        let response = try await client.send(request)
        XCTAssertEqual(response.status.code, 201)
        _ = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: stored)), bytes)

        // A range of the file: offset and length.
        var part = HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/dav/\(name)")
        part.method = .put
        part.body = try .file(fileURL.path, offset: 1000, length: 123_456)
        let second = try await client.send(part)
        XCTAssertEqual(second.status.code, 204, "nginx answers 204 when it replaces a file")
        _ = try await second.body.collect(upTo: 1 << 20)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: stored)), bytes.subdata(in: 1000..<(1000 + 123_456)))
        await client.shutdown()
    }

    /// A form of files and text goes out piece by piece, the files with `sendfile`: nginx must store exactly
    /// the bytes the same form encodes to in memory, and progress must end at the body's length.
    func testAMultipartFormOfFilesSentByTheKernelIsStoredExactlyAsEncodedInMemory() async throws {
        let nginx = try Peers.nginx()
        let big = try Peers.directory() + "/www/big.bin"
        let bigBytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: big)))
        let small = NSTemporaryDirectory() + "part-\(UUID().uuidString).txt"
        try Data("a small text file\n".utf8).write(to: URL(fileURLWithPath: small))
        addTeardownBlock { try? FileManager.default.removeItem(atPath: small) }

        var onDisk = MultipartForm(boundary: "sendfile-boundary")
        onDisk.append("title", "two files")
        try onDisk.appendFile("big", path: big)
        try onDisk.appendFile("small", path: small, filename: "small.txt")
        var inMemory = MultipartForm(boundary: "sendfile-boundary")
        inMemory.append("title", "two files")
        inMemory.append("big", data: bigBytes, filename: "big.bin")
        inMemory.append("small", data: Array("a small text file\n".utf8), filename: "small.txt")
        let (expectedBody, _) = try inMemory.makeBody()
        guard case .bytes(let expected) = expectedBody.storage else { return XCTFail("an in-memory form is bytes") }

        let name = "form-\(UUID().uuidString).bin"
        let stored = try Peers.directory() + "/dav/" + name
        addTeardownBlock { try? FileManager.default.removeItem(atPath: stored) }
        let client = HTTPClient()
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/dav/\(name)")
        try request.setForm(onDisk)
        request.method = .put
        XCTAssertNotNil(request.body?.directPieces, "files and bytes only: sent piece by piece")
        let totals = Locked<[Int]>([])
        request.progressHandler = HTTPProgressHandler(minimumInterval: .zero, minimumFraction: 0) { progress in
            totals.withLock { $0.append(progress.bytesSent) }
        }
        let response = try await client.send(request)
        XCTAssertEqual(response.status.code, 201)
        _ = try await response.body.collect(upTo: 1 << 20)
        await client.shutdown()
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: stored))), expected)
        XCTAssertEqual(totals.withLock { $0.max() }, expected.count)
        XCTAssertEqual(totals.withLock { $0 }, totals.withLock { $0 }.sorted(), "upload progress never runs backwards")
    }

    func testAFilePUTOverTLSWaitsFor100AndIsStoredExactly() async throws {
        let nginx = try Peers.nginx()
        let fileURL = URL(fileURLWithPath: try Peers.directory() + "/www/big.bin")
        let name = "tls-\(UUID().uuidString).bin"
        let stored = try Peers.directory() + "/dav/" + name
        addTeardownBlock { try? FileManager.default.removeItem(atPath: stored) }
        var configuration = HTTPClient.Configuration()
        configuration.tls.trustRoots = .file(nginx.caFile)
        configuration.expectContinue = ExpectContinuePolicy(minimumBodySize: 1, timeout: .seconds(30))
        let client = HTTPClient(configuration: configuration)
        var request = HTTPClientRequest(url: "https://localhost:\(nginx.httpsPort)/dav/\(name)")
        request.method = .put
        request.body = try .file(fileURL.path)
        let started = ContinuousClock.now
        let response = try await client.send(request)
        XCTAssertEqual(response.status.code, 201)
        _ = try await response.body.collect(upTo: 1 << 20)
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(25), "sent on nginx's 100 Continue, not after the wait")
        await client.shutdown()
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: stored)), try Data(contentsOf: fileURL))
    }

    /// Counts the request body bytes that crossed the socket.
    final class SentBytes: HTTPClientObserver, @unchecked Sendable {
        // @unchecked: `total` is behind `lock`.
        private let lock = NSLock()
        private var _total = 0
        var total: Int { lock.withLock { _total } }
        func observe(_ event: HTTPClientEvent) {
            if case .bodyBytesSent(let total) = event.kind { lock.withLock { _total = max(_total, total) } }
        }
    }

    func testNginxRefusingTheSizeWith413BeforeTheBodyMeansNoBodyIsSent() async throws {
        let nginx = try Peers.nginx()
        let sent = SentBytes()
        var configuration = HTTPClient.Configuration()
        configuration.observers = [sent]
        let client = HTTPClient(configuration: configuration)
        // Outside /dav/ nginx keeps its default client_max_body_size (1 MiB) and answers 413 from the head alone.
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(nginx.httpPort)/upload-refused.bin")
        request.method = .put
        request.body = try .file(try Peers.directory() + "/www/big.bin")
        let response = try await client.send(request)
        XCTAssertEqual(response.status.code, 413)
        _ = try await response.body.collect(upTo: 1 << 20)
        await client.shutdown()
        XCTAssertEqual(sent.total, 0, "not one byte of the 8 MiB body was sent")
    }
}
