import AsyncHTTP

/// The client's log, as the CLI shows it: the library's warnings (a cache entry that could not be stored, a
/// credential store that failed, Basic credentials held back over plain http) as curl prints its own,
/// `Warning: …` on stderr, and nothing under -s. Lines below `warning` are not asked for (the logger's level).
///
/// Instead of swift-log's default `StreamLogHandler`, which prints a timestamp and the label, ignores -s, and
/// renders its metadata into a string each time a logger's metadata is set (the client sets a topic on each of
/// its loggers when it is made). The switch took 0.4 ms off a cold start (docs/performance.md, session 22).
struct WarningLog: LogHandler {
    var logLevel: Logger.Level = .warning
    var metadata: Logger.Metadata = [:]
    let silent: Bool

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        guard !silent else { return }
        // The line's own metadata (the file, the error), not the request number or topic the client adds.
        let details = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        warn(details.isEmpty ? "\(event.message)" : "\(event.message) (\(details.joined(separator: ", ")))", nil)
    }

    /// A logger for the client's configuration that writes through this handler.
    static func logger(silent: Bool) -> Logger {
        Logger(label: "ahttp") { _ in WarningLog(silent: silent) }
    }
}
