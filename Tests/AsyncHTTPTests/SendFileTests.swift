import Foundation
import Glibc
import XCTest
@testable import AsyncHTTP

/// A regular file's body on plain TCP goes out with `sendfile` (IO/SendFile.swift). What that path must keep
/// from the chunked one: a peer that resets mid-body is a typed error and never a `SIGPIPE` (which `sendfile`,
/// unlike `send`, cannot be told not to raise: without the signal mask the test process dies), a file that
/// shrinks under the kernel's copy fails instead of sending a short body, and no descriptor (socket or file)
/// outlives the request. Byte-exact uploads over this path: UploadIntegrationTests (nginx's WebDAV PUT).
extension FaultInjectionTests {
    /// A sparse file of `size` bytes in the temporary directory, removed after the test.
    func sparseFile(size: Int) throws -> String {
        let path = NSTemporaryDirectory() + "sendfile-\(UUID().uuidString).bin"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        XCTAssertEqual(truncate(path, off_t(size)), 0)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    /// The signal itself: once a reset has been reported (`ECONNRESET`), the next `sendfile` fails with `EPIPE`,
    /// which raises `SIGPIPE` unless the call blocks it. Without the mask this test process is killed.
    func testSendfileOnAResetSocketFailsWithEPIPEAndNoSignalKillsTheProcess() async throws {
        let server = try FaultServer(script: FaultScript(onAccept: { _ in [.sleep(ms: 50), .resetConnection] }, onRequest: { _, _ in [] }))
        defer { server.stop() }
        let address = try XCTUnwrap(SocketAddress(numericHost: "127.0.0.1", port: server.port))
        let socket = try await Socket.connect(to: address, deadline: .now + .seconds(5), notifier: IOBackend.notifier)
        defer { socket.close() }
        let file = try LocalFile.openForReading(try sparseFile(size: 1 << 20), what: "test file")
        defer { file.close() }
        var errors: [Int32] = []
        for _ in 0..<300 where errors.count < 2 {  // at most ~3 s for the reset to arrive
            switch socket.trySendFile(from: file, offset: 0, count: 64 << 10) {
            case .failed(let code): errors.append(code)
            case .done, .wouldBlock: try await Task.sleep(for: .milliseconds(10))
            }
        }
        XCTAssertEqual(errors, [ECONNRESET, EPIPE])
    }

    func testAFileUploadToAServerThatResetsMidBodyIsAnErrorAndNoSIGPIPE() async throws {
        let path = try sparseFile(size: 64 << 20)  // far more than the socket buffers hold
        let script = FaultScript(onAccept: { _ in [.sleep(ms: 100), .resetConnection] }, onRequest: { _, _ in [] })
        try await withFault(script) { server, client in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")
            request.method = .put
            request.body = try .file(path)
            request.expectContinue = .never
            await expectError(Self.connectionEnded) { _ = try await client.send(request) }
            XCTAssertEqual(server.connectionsAccepted, 1, "a PUT cut off mid-body is not sent again")
        }
    }

    func testAFileThatShrinksWhileTheKernelSendsItFailsInsteadOfSendingShort() async throws {
        let path = try sparseFile(size: 64 << 20)
        // Cuts the file to 1 MiB as soon as the first body bytes have gone out: the next `sendfile` finds
        // nothing where the rest should be.
        let shrinker = Shrinker(path: path, to: 1 << 20)
        let script = FaultScript { _, _ in [.response("stored")] }
        try await withFault(script, configure: { configuration, _ in configuration.observers = [shrinker] }) { server, client in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/")
            request.method = .put
            request.body = try .file(path)
            request.expectContinue = .never
            let error = await expectError([.invalidRequest]) { _ = try await client.send(request) }
            XCTAssertTrue(error?.message.contains("shrank while being sent") == true, "\(String(describing: error))")
            XCTAssertTrue(shrinker.didShrink)
        }
    }
}

/// Truncates a file once, on the first `bodyBytesSent` event.
private final class Shrinker: HTTPClientObserver, @unchecked Sendable {
    // @unchecked: `shrunk` is guarded by `lock`.
    let path: String
    let size: Int
    private let lock = NSLock()
    private var shrunk = false
    init(path: String, to size: Int) {
        self.path = path
        self.size = size
    }
    var didShrink: Bool { lock.withLock { shrunk } }
    func observe(_ event: HTTPClientEvent) {
        guard case .bodyBytesSent = event.kind else { return }
        lock.withLock {
            guard !shrunk else { return }
            shrunk = truncate(path, off_t(size)) == 0
        }
    }
}
