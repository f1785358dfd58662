/// The life of one HTTP/1.x client connection as a value: events in, actions out, no I/O.
///
/// ```
///   idle ─requestStarted→ writing ─requestWritten→ awaitingHead ─headReceived→ body ─bodyEnded→ done ─requestStarted→ writing …
///                                                                                         └──────→ mustClose
///   any state ─failed / closeRequested→ closed
/// ```
///
/// `HTTP1Connection` (in the transport) asks the machine before each step and does what the returned action
/// says; the pool and the stale-connection retry read its answers (``wasReused``, ``requestBytesWritten``,
/// ``isReusable``). The same shape as async-http-client's `HTTP1ConnectionStateMachine`, smaller: one request at
/// a time, no pipelining, and the response parser keeps the framing state below it.
package struct HTTP1ConnectionStateMachine: Sendable {
    package enum State: Equatable, Sendable {
        /// Open, never used. Valid transitions to: .writing, .closed
        case idle
        /// A request is going out. Valid transitions to: .awaitingHead, .closed
        case writing
        /// The request went out; the response head has not arrived. Valid transitions to: .body, .closed
        case awaitingHead
        /// The head arrived; the body is being read. Valid transitions to: .done, .mustClose, .closed
        case body
        /// The response ended and the connection may carry another request. Valid transitions to: .writing, .closed
        case done
        /// The response ended but the connection must not be reused (`Connection: close`, HTTP/1.0 without
        /// keep-alive, a body read until close, the server's `Keep-Alive: max` used up). Valid transitions to: .closed
        case mustClose
        /// The socket is (to be) closed. Final.
        case closed
    }

    /// What the connection should do next.
    package enum Action: Equatable, Sendable {
        /// Write the request.
        case writeRequest
        /// Read until the response head is complete.
        case readHead
        /// Read the body as the consumer asks.
        case readBody
        /// Hand the connection back to the pool for the next request.
        case returnToPool
        /// Close the socket.
        case close
        /// The event does not fit the state (a bug in the caller): refuse the request and close.
        case refuse(String)
    }

    package private(set) var state: State = .idle
    /// Completed responses; above zero means the connection has been reused.
    package private(set) var responsesCompleted = 0
    /// Request bytes written for the current request (the stale-connection retry asks whether any went out).
    package private(set) var requestBytesWritten = 0
    /// The requests the server still allows after the current one, from `Keep-Alive: max=N`.
    package private(set) var remainingRequests: Int?
    /// `Keep-Alive: timeout=N` from the last head, in seconds.
    package private(set) var keepAliveTimeout: Int?
    /// Whether the current request asked to keep the connection (no `Connection: close`).
    private var requestIsPersistent = true
    private var headKeepsAlive = false

    package init() {}

    /// Whether the connection has carried a complete response before the current request.
    package var wasReused: Bool { responsesCompleted > 0 }

    /// Whether the connection may carry another request now.
    package var isReusable: Bool { state == .done }

    /// While a body is read: whether the connection may carry another request once the body has ended where its
    /// framing says (both sides keep it, and the server's `Keep-Alive: max` budget is not used up). When false,
    /// reading the rest of a body nobody wants gains nothing.
    package var isReusableAfterBody: Bool {
        state == .body && headKeepsAlive && requestIsPersistent && (remainingRequests.map { $0 > 0 } ?? true)
    }

    /// A request starts. `persistent` is false for a request sent with `Connection: close`.
    package mutating func requestStarted(persistent: Bool) -> Action {
        switch state {
        case .idle, .done:
            state = .writing
            requestIsPersistent = persistent
            requestBytesWritten = 0
            return .writeRequest
        case .writing, .awaitingHead, .body:
            return fail("a request was started while the previous one was still in progress (\(state))")
        case .mustClose, .closed:
            return fail("a request was started on a connection that cannot be reused (\(state))")
        }
    }

    /// `count` bytes of the request went out.
    package mutating func wrote(_ count: Int) {
        requestBytesWritten += count
    }

    /// The whole request went out.
    package mutating func requestWritten() -> Action {
        guard state == .writing else { return fail("the request ended while the connection was \(state)") }
        state = .awaitingHead
        return .readHead
    }

    /// The final response head arrived (interim 1xx responses never reach here).
    ///
    /// `Keep-Alive: max=N` counts the requests still allowed after this response (Apache counts down from
    /// MaxKeepAliveRequests and sends `close` after max=1); without it, a budget once given counts down by one.
    package mutating func headReceived(keepAlive: Bool, keepAliveMax: Int?, keepAliveTimeout: Int?) -> Action {
        // A server may answer before the request is written in full (an early 413 or 401): that is a head too.
        guard state == .awaitingHead || state == .writing else {
            return fail("a response head arrived while the connection was \(state)")
        }
        state = .body
        headKeepsAlive = keepAlive
        if let keepAliveTimeout { self.keepAliveTimeout = keepAliveTimeout }
        if let keepAliveMax {
            remainingRequests = keepAliveMax
        } else if let remaining = remainingRequests {
            remainingRequests = remaining - 1
        }
        return .readBody
    }

    /// A request sent with `Expect: 100-continue` got its final response before its body went out, and the
    /// body will not be sent. The server was promised a body it never gets, so the connection cannot frame
    /// another request: it closes after this response (RFC 9110 §10.1.1; curl does the same).
    package mutating func bodyWithheld() {
        requestIsPersistent = false
    }

    /// The body ended where its framing says (not by the server closing, which is ``closed()``).
    package mutating func bodyEnded() -> Action {
        guard state == .body else { return fail("a body ended while the connection was \(state)") }
        let reusable = isReusableAfterBody
        responsesCompleted += 1
        if reusable {
            state = .done
            return .returnToPool
        }
        state = .mustClose
        return .close
    }

    /// Reading or writing failed, or the request was cancelled or abandoned.
    package mutating func failed() -> Action {
        state = .closed
        return .close
    }

    /// The socket was closed (by us or the server).
    package mutating func closed() {
        state = .closed
    }

    private mutating func fail(_ reason: String) -> Action {
        state = .closed
        return .refuse(reason)
    }
}
