import Logging

// Request-scoped log metadata and the log topics (ASIHTTPRequest's DEBUG_* switches). The client wraps the
// configuration's log handler once, in `HTTPClient.init`, with `RequestScopedLogHandler`; every component
// logs through that wrapped logger, each with its topic. See docs/telemetry.md ("Logging").

extension HTTPClient {
    /// What a log line is about, in the `ahttp.topic` metadata key of every `debug` and `trace` line (and of the
    /// few warnings). Each is one of ASIHTTPRequest's compile-time `DEBUG_*` switches:
    ///
    /// | topic | ASIHTTPRequest | what is logged |
    /// |---|---|---|
    /// | ``requestStatus`` | `DEBUG_REQUEST_STATUS` | retries, a response's end, a dropped body drained, a download restarting |
    /// | ``persistentConnections`` | `DEBUG_PERSISTENT_CONNECTIONS` | connections opened, reused, parked, closed and why, pool waits |
    /// | ``authentication`` | `DEBUG_HTTP_AUTHENTICATION` | challenges answered, credentials accepted or refused (user names, never secrets) |
    /// | ``throttling`` | `DEBUG_THROTTLING` | a request's own bandwidth limit applied |
    /// | ``formData`` | `DEBUG_FORM_DATA` | a form body's kind, field and file names, and size (never a value) |
    ///
    /// Turn topics on by lowering the logger's level (`debug` for most, `trace` for the per-request detail);
    /// ``Configuration/logTopics`` keeps the `debug` and `trace` lines of the topics left out of it quiet.
    public struct LogTopic: Hashable, Sendable, CustomStringConvertible {
        /// The value of the `ahttp.topic` metadata key.
        public let name: String

        /// `DEBUG_REQUEST_STATUS`: a request's course (retries, end of response, drained bodies).
        public static let requestStatus = LogTopic(name: "request-status")
        /// `DEBUG_PERSISTENT_CONNECTIONS`: connection reuse and the pool.
        public static let persistentConnections = LogTopic(name: "persistent-connections")
        /// `DEBUG_HTTP_AUTHENTICATION`: challenges and credentials (never a password or token).
        public static let authentication = LogTopic(name: "authentication")
        /// `DEBUG_THROTTLING`: bandwidth limits.
        public static let throttling = LogTopic(name: "throttling")
        /// `DEBUG_FORM_DATA`: form bodies (names and sizes, never values).
        public static let formData = LogTopic(name: "form-data")
        /// The cache's lines.
        public static let cache = LogTopic(name: "cache")

        /// Every topic: the default of ``Configuration/logTopics``.
        public static let all: Set<LogTopic> = [.requestStatus, .persistentConnections, .authentication, .throttling, .formData, .cache]

        /// The topic named `name`.
        public init(name: String) { self.name = name }

        /// The name.
        public var description: String { name }
    }

    /// The metadata key holding the request's number: the same number as ``HTTPClientEvent/requestID``, one per
    /// ``send(_:)``, shared by its redirect hops, retries and body.
    public static let requestIDMetadataKey = "ahttp.request"
    /// The metadata key holding a line's ``LogTopic``.
    public static let logTopicMetadataKey = "ahttp.topic"
}

extension HTTPClient.Configuration {
    /// The configuration's logger for the lines of `topic`: tagged with it, and kept at `info` or above when the
    /// topic is not in ``logTopics``. Made once per component when the client is created.
    func logger(for topic: HTTPClient.LogTopic) -> Logger {
        var logger = self.logger
        logger[metadataKey: HTTPClient.logTopicMetadataKey] = .string(topic.name)
        if !logTopics.contains(topic), logger.logLevel < .info { logger.logLevel = .info }
        return logger
    }

    /// This configuration with its logger's handler wrapped to add the request's number to every line.
    var requestScopedLogging: Self {
        guard !(logger.handler is RequestScopedLogHandler) else { return self }
        var copy = self
        copy.logger.handler = RequestScopedLogHandler(copy.logger.handler)
        return copy
    }
}

/// The request a log line belongs to, and its observation, bound by ``HTTPClient/send(_:)`` for the whole chain.
/// One task-local for both: every send binds it (the request's number is always there), so observing a
/// request costs no second binding.
enum RequestLogContext {
    struct Scope: Sendable {
        var requestID: UInt64
        /// Made only when the client has observers or the request a progress handler.
        var observation: RequestObservation?
    }

    @TaskLocal static var scope: Scope?

    static var requestID: UInt64? { scope?.requestID }
}

/// Adds `ahttp.request` (the task's ``RequestLogContext/requestID``) to each line a logger emits, then hands
/// it to the handler it wraps. Nothing is done for a line the level filters out: `Logger` checks the level
/// before calling `log`, so the cost is only on lines actually written.
struct RequestScopedLogHandler: LogHandler {
    var base: any LogHandler

    init(_ base: any LogHandler) { self.base = base }

    func log(event: LogEvent) {
        guard let id = RequestLogContext.requestID, event.metadata?[HTTPClient.requestIDMetadataKey] == nil else {
            return base.log(event: event)
        }
        var event = event
        event.metadata = (event.metadata ?? [:]).merging([HTTPClient.requestIDMetadataKey: .stringConvertible(id)]) { old, _ in old }
        base.log(event: event)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue }
    }

    var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { base.logLevel }
        set { base.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { base.metadataProvider }
        set { base.metadataProvider = newValue }
    }
}

/// What `setForm` put in a request body, for the `form-data` topic: never a value.
struct FormSummary: Sendable {
    var kind: String
    var fieldNames: [String]
    var fileNames: [String]
    var length: Int?

    var description: String {
        var text = "\(kind) form: fields [\(fieldNames.joined(separator: ", "))]"
        if !fileNames.isEmpty { text += ", files [\(fileNames.joined(separator: ", "))]" }
        if let length { text += ", \(length) bytes" }
        return text
    }
}

enum FormSummaryOption: HTTPRequestOption {
    static let defaultValue: FormSummary? = nil
}
