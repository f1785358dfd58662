import BenchCore
import Foundation
import FoundationNetworking
import Synchronization

/// Foundation's URLSession (libcurl underneath on Linux), streaming through a data delegate so that bodies
/// are counted and dropped as they arrive rather than collected into one `Data`.
final class BodyCounter: NSObject, URLSessionDataDelegate, Sendable {
    struct Pending {
        var bytes = 0
        let continuation: CheckedContinuation<(status: Int, bytes: Int), any Error>
    }

    /// Tasks in flight by `taskIdentifier`; the lock is what makes this `Sendable` across delegate callbacks.
    private let pending = Mutex<[Int: Pending]>([:])

    func run(_ task: URLSessionDataTask) async throws -> (status: Int, bytes: Int) {
        try await withCheckedThrowingContinuation { continuation in
            pending.withLock { $0[task.taskIdentifier] = Pending(continuation: continuation) }
            task.resume()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        pending.withLock { $0[dataTask.taskIdentifier]?.bytes += data.count }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            entry.continuation.resume(throwing: error)
        } else {
            let status = (task.response as? HTTPURLResponse)?.statusCode ?? 0
            entry.continuation.resume(returning: (status, entry.bytes))
        }
    }
}

struct URLSessionDriver: BenchDriver {
    let session: URLSession
    let counter = BodyCounter()
    let uploadBody: Data?

    init(_ options: Options) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = options.concurrency
        configuration.urlCache = nil
        configuration.timeoutIntervalForRequest = 60
        session = URLSession(configuration: configuration, delegate: counter, delegateQueue: nil)
        // The upload's bytes are made once, before timing.
        uploadBody = options.scenario == .upload
            ? Data(repeating: UInt8(ascii: "x"), count: options.uploadBytes / options.uploadChunkBytes * options.uploadChunkBytes)
            : nil
    }

    func get(_ url: String, newConnection: Bool) async throws -> Int {
        guard let target = URL(string: url) else { throw BenchError("bad URL \(url)") }
        var request = URLRequest(url: target)
        if newConnection { request.setValue("close", forHTTPHeaderField: "Connection") }
        let (status, bytes) = try await counter.run(session.dataTask(with: request))
        guard status == 200 else { throw BenchError("GET \(url): status \(status)") }
        return bytes
    }

    func getDecompressed(_ url: String) async throws -> Int {
        // URLSession sends Accept-Encoding and inflates by itself (libcurl's CURLOPT_ACCEPT_ENCODING "").
        try await get(url, newConnection: false)
    }

    func put(_ url: String, chunk: [UInt8], total: Int) async throws -> Int {
        guard let target = URL(string: url), let uploadBody else { throw BenchError("bad URL \(url)") }
        var request = URLRequest(url: target)
        request.httpMethod = "PUT"
        // An upload task sends `Content-Length`, as the other clients do; libcurl reads the body from the
        // `Data` as the socket takes it. (With `httpBodyStream` URLSession sends `Transfer-Encoding: chunked`,
        // plus any `Content-Length` set by hand, which nginx rightly refuses with a 400.)
        let (status, _) = try await counter.run(session.uploadTask(with: request, from: uploadBody))
        guard (200..<300).contains(status) else { throw BenchError("PUT \(url): status \(status)") }
        return uploadBody.count
    }

    func shutdown() async throws {
        session.finishTasksAndInvalidate()
    }
}

await Bench.main(client: "urlsession") { options in
    // URLSession on Linux has no way to trust a custom CA: no server-trust challenge, and libcurl reads only
    // the system bundle (`URLSessionCertificateAuthorityInfoFile` is Android-only). `--cacert` is therefore
    // ignored here; run.sh runs the TLS scenarios in a private mount namespace whose system bundle has the
    // benchmark's certificate added.
    URLSessionDriver(options)
}
