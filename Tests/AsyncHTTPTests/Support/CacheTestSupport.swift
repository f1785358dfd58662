@testable import AsyncHTTP
import Foundation
import Logging

/// A wall clock the cache tests move by hand, so that freshness and age are tested without sleeping.
final class CacheTestClock: Sendable {
    private let value = Locked<Double>(1_767_225_600)
    var now: Double { value.withLock { $0 } }
    func advance(_ seconds: Double) { value.withLock { $0 += seconds } }
    var function: @Sendable () -> Double { { self.now } }
}

/// A fresh directory under the system's temporary directory, for one test's cache.
func makeCacheDirectory(_ name: String = #function) -> String {
    let safe = name.filter { $0.isLetter || $0.isNumber }
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-cache-\(safe)-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Log lines kept in memory, to check what the cache said (and that no secret is in it).
final class CacheLogRecorder: Sendable {
    let lines = Locked<[String]>([])

    var logger: Logger {
        var logger = Logger(label: "cache-test") { _ in RecordingHandler(lines: self.lines) }
        logger.logLevel = .trace
        return logger
    }

    private struct RecordingHandler: LogHandler {
        let lines: Locked<[String]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let extra = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
            lines.withLock { $0.append("\(event.level) \(event.message) \(extra)") }
        }
    }
}

extension HTTPCache {
    /// A cache with the tests' clock and logger.
    static func forTesting(
        directory: String, clock: CacheTestClock, maxSize: Int = 64 << 20, maxEntrySize: Int? = nil,
        defaultStoragePolicy: HTTPCacheStoragePolicy = .permanent, ignoresServerDontCacheHeaders: Bool = false,
        logger: Logger = Logger(label: "cache-test")
    ) throws -> HTTPCache {
        try HTTPCache(directory: directory, maxSize: maxSize, maxEntrySize: maxEntrySize, defaultPolicy: .useDefault,
                      defaultStoragePolicy: defaultStoragePolicy, ignoresServerDontCacheHeaders: ignoresServerDontCacheHeaders,
                      logger: logger, now: clock.function)
    }
}

/// Files (not directories) under a cache directory, recursively, relative paths.
func cacheFiles(in directory: String) -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: directory) else { return [] }
    var files: [String] = []
    while let path = enumerator.nextObject() as? String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
            files.append(path)
        }
    }
    return files.sorted()
}
