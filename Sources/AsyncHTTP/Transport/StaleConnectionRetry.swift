/// When a request that failed on a reused keep-alive connection may be sent once more on a new one.
///
/// A server may close an idle connection at any moment, and the close can cross our request on the
/// wire. Re-sending is safe only when we can show the server did not act on the request:
/// - the connection had carried an earlier response (a fresh connection failing is a real failure),
/// - not one byte of a response arrived (the server never started answering),
/// - the failure is the connection ending (closed, reset, broken pipe), not a timeout,
/// - the body can be sent again, and
/// - the method is idempotent, or nothing of the request was written yet.
/// A POST whose bytes went out is therefore never sent twice. Once only: the retry uses a brand-new
/// connection, which cannot be stale. (Go's `http.Transport` applies the same rule in `shouldRetryRequest`.)
enum StaleConnectionRetry {
    struct Attempt {
        var connectionWasReused: Bool
        var requestBytesWritten: Int
        var responseBytesReceived: Int
        var isIdempotent: Bool
        var bodyIsReplayable: Bool
    }

    /// A `408 Request Timeout` read on a reused connection: the server timed the connection out while it sat idle,
    /// and its answer crossed the request on the wire, so the request was not acted on (Chromium resends it the same
    /// way; Go drops a connection that sends one while idle). Sent once more on a new connection when the request
    /// could be resent after a close: its body is replayable and its method idempotent. A `408` on a new
    /// connection, or to a POST, is the response.
    static func mayResend(after408 attempt: Attempt) -> Bool {
        attempt.connectionWasReused && attempt.bodyIsReplayable && attempt.isIdempotent
    }

    static func mayRetry(_ attempt: Attempt, after error: HTTPClientError) -> Bool {
        guard attempt.connectionWasReused, attempt.responseBytesReceived == 0, attempt.bodyIsReplayable else { return false }
        guard error.code == .connectionClosed || error.code == .ioFailure else { return false }
        return attempt.isIdempotent || attempt.requestBytesWritten == 0
    }
}
