import BenchCore
import Foundation
import FoundationNetworking
import Synchronization

/// Foundation's URLSession (libcurl underneath on Linux), streaming through a data delegate so that bodies
/// are counted and dropped as they arrive rather than collected into one `Data`.
final class BodyCounter: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate, Sendable {
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

    /// Where each download task's file goes, by `taskIdentifier`, and what moving it there did.
    private let destinations = Mutex<[Int: (path: String, moved: Result<Int, BenchError>?)]>([:])

    /// A download task: URLSession writes the body to a temporary file of its own, which the delegate
    /// moves to `path` (the documented way; the temporary file is deleted when the callback returns).
    func download(_ task: URLSessionDownloadTask, to path: String) async throws -> (status: Int, bytes: Int) {
        destinations.withLock { $0[task.taskIdentifier] = (path, nil) }
        let (status, _) = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<(status: Int, bytes: Int), any Error>) in
            pending.withLock { $0[task.taskIdentifier] = Pending(continuation: continuation) }
            task.resume()
        }
        let moved = destinations.withLock { $0.removeValue(forKey: task.taskIdentifier)?.moved }
        switch moved {
        case .success(let bytes)?: return (status, bytes)
        case .failure(let error)?: throw error
        case nil: throw BenchError("the download task finished without a file")
        }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let id = downloadTask.taskIdentifier
        guard let path = destinations.withLock({ $0[id]?.path }) else { return }
        let result: Result<Int, BenchError>
        do {
            try FileManager.default.moveItem(at: location, to: URL(fileURLWithPath: path))
            let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? -1
            result = .success(size)
        } catch {
            result = .failure(BenchError("moving the download to \(path): \(error)"))
        }
        destinations.withLock { $0[id]?.moved = result }
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
    /// `upload-multipart`: URLSession has no multipart builder; the body (part head, the file, tail) is written
    /// once to a file before timing and sent with `uploadTask(with:fromFile:)`, as its users do.
    let multipartFile: (path: String, boundary: String)?

    init(_ options: Options) throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = options.connectionsPerHost
        switch options.scenario {
        case .cacheHit, .cacheRevalidate:
            // URLSession's own cache, in memory and on disk, with its default policy (honour the server).
            let directory = "\(options.directory)/urlsession-cache-\(getpid())"
            configuration.urlCache = URLCache(memoryCapacity: 16 << 20, diskCapacity: 64 << 20, diskPath: directory)
            configuration.requestCachePolicy = .useProtocolCachePolicy
        default:
            configuration.urlCache = nil
        }
        configuration.timeoutIntervalForRequest = 60
        session = URLSession(configuration: configuration, delegate: counter, delegateQueue: nil)
        // The upload's bytes are made once, before timing.
        uploadBody = options.scenario == .upload
            ? Data(repeating: UInt8(ascii: "x"), count: options.uploadBytes / options.uploadChunkBytes * options.uploadChunkBytes)
            : nil
        if options.scenario == .uploadMultipart, let file = options.file {
            let boundary = "URLSessionBench\(UInt64.random(in: 0...UInt64.max))"
            let path = "\(options.directory)/urlsession-multipart-\(getpid()).bin"
            var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"upload.bin\"\r\n".utf8)
            body.append(Data("Content-Type: application/octet-stream\r\n\r\n".utf8))
            body.append(try Data(contentsOf: URL(fileURLWithPath: file)))
            body.append(Data("\r\n--\(boundary)--\r\n".utf8))
            try body.write(to: URL(fileURLWithPath: path))
            multipartFile = (path, boundary)
        } else {
            multipartFile = nil
        }
    }

    func putFile(_ url: String, path: String, multipart: Bool) async throws -> Int {
        guard let target = URL(string: url) else { throw BenchError("bad URL \(url)") }
        var request = URLRequest(url: target)
        request.httpMethod = "PUT"
        var source = path
        if multipart {
            guard let multipartFile else { throw BenchError("no multipart body was prepared") }
            request.setValue("multipart/form-data; boundary=\(multipartFile.boundary)", forHTTPHeaderField: "Content-Type")
            source = multipartFile.path
        }
        let (status, _) = try await counter.run(session.uploadTask(with: request, fromFile: URL(fileURLWithPath: source)))
        guard (200..<300).contains(status) else { throw BenchError("PUT \(url): status \(status)") }
        return try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
    }

    func download(_ url: String, to path: String) async throws -> Int {
        guard let target = URL(string: url) else { throw BenchError("bad URL \(url)") }
        let (status, bytes) = try await counter.download(session.downloadTask(with: target), to: path)
        guard status == 200 else { throw BenchError("GET \(url): status \(status)") }
        return bytes
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
        if let multipartFile { try? FileManager.default.removeItem(atPath: multipartFile.path) }
    }
}

await Bench.main(client: "urlsession") { options in
    // URLSession on Linux has no way to trust a custom CA: no server-trust challenge, and libcurl reads only
    // the system bundle (`URLSessionCertificateAuthorityInfoFile` is Android-only). `--cacert` is therefore
    // ignored here; run.sh runs the TLS scenarios in a private mount namespace whose system bundle has the
    // benchmark's certificate added.
    try URLSessionDriver(options)
}
