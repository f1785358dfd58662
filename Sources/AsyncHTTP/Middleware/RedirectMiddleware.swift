import HTTPTypes

/// How a client follows redirects (3xx responses with a `Location`).
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// configuration.redirectPolicy.maxRedirects = 5
/// configuration.redirectPolicy.sensitiveHeaders = [HTTPField.Name("X-Api-Key")!]
///
/// var request = HTTPClientRequest(url: "https://example.com/old")
/// request.redirectPolicy = .disabled          // get the 301 itself (ASIHTTPRequest's shouldRedirect = NO)
/// ```
///
/// The rules, and where they come from:
/// - A `POST` answered 301 or 302 is followed with `GET` and no body, as Fetch, browsers, curl and
///   async-http-client do; every other method keeps its method and body there (a `DELETE /dir` answered
///   `301 Location: /dir/` is a `DELETE /dir/`, not a `GET` that succeeds), and a one-shot stream body then fails
///   as on 307. ``keepsMethodOn301And302`` keeps a `POST` too (RFC 9110 §15.4.2–3, ASIHTTPRequest's
///   `shouldUseRFC2616RedirectBehaviour`).
/// - 303 is followed with `GET` and no body (HEAD stays HEAD), whatever the method, unless ``keepsMethodOn303``.
/// - 307 and 308 keep the method and the body (RFC 9110 §15.4.8–9); a one-shot stream body cannot be sent
///   again and fails with `HTTPClientError.Code.bodyNotReplayable`.
/// - `Location` is resolved against the URL that answered (RFC 3986 §5.2).
/// - When the next hop is on another origin (scheme, host or port), `Authorization`, `Proxy-Authorization`,
///   `Cookie` (the cookie jar chooses afresh for the new host) and ``sensitiveHeaders`` are removed and stay
///   removed for the rest of the chain, as the Fetch standard does.
/// - https → http is refused with `HTTPClientError.Code.redirectRefused` unless ``allowsHTTPSToHTTP``.
/// - A hop to a (method, URL) already requested, with no `Set-Cookie` for the client's jar in between, is a
///   loop: `HTTPClientError.Code.redirectLoop`, unless ``detectsLoops`` is off.
public struct RedirectPolicy: Sendable, Hashable {
    /// Follow redirects at all (ASIHTTPRequest's `shouldRedirect`). When false, 3xx responses are returned.
    public var followsRedirects: Bool
    /// The most redirects followed for one request; one more throws `HTTPClientError.Code.tooManyRedirects`.
    /// 10: Go's `net/http` and async-http-client; ASIHTTPRequest allowed 5, curl 30 (with `-L`), browsers 20.
    public var maxRedirects: Int
    /// Keep a `POST`'s method and body on 301 and 302 instead of switching to `GET` (ASIHTTPRequest's
    /// `shouldUseRFC2616RedirectBehaviour`; what RFC 9110 intends, but not what browsers do). Other methods keep
    /// theirs on 301 and 302 whatever this says, as in Fetch and curl. 303 always
    /// switches to `GET` unless ``keepsMethodOn303``. Reads true when both ``keepsMethodOn301`` and
    /// ``keepsMethodOn302`` are set, and sets both.
    public var keepsMethodOn301And302: Bool {
        get { keepsMethodOn301 && keepsMethodOn302 }
        set { (keepsMethodOn301, keepsMethodOn302) = (newValue, newValue) }
    }
    /// Keep a `POST`'s method and body on 301 Moved Permanently (curl's `--post301`); other methods always keep
    /// theirs. Off by default.
    public var keepsMethodOn301: Bool
    /// Keep a `POST`'s method and body on 302 Found (curl's `--post302`); other methods always keep theirs.
    /// Off by default.
    public var keepsMethodOn302: Bool
    /// Keep the method and body on 303 See Other too, instead of switching to `GET` (HEAD stays HEAD either way).
    /// Off by default: RFC 9110 §15.4.4 asks for `GET`, and Go, browsers and ASIHTTPRequest switch. curl's
    /// `-X METHOD` sends its method on every hop whatever the status; `ahttp -X` turns this on for that.
    public var keepsMethodOn303: Bool
    /// Stop with `HTTPClientError.Code.redirectLoop` when a hop asks for a (method, URL) already requested with
    /// nothing changed in between (the last rule above). On by default: a loop fails at once instead of after
    /// ``maxRedirects`` requests. Off: only ``maxRedirects`` ends a loop, as curl's `-L` (which has no loop check)
    /// and `ahttp -L` do.
    public var detectsLoops: Bool
    /// Follow a redirect from https to plain http. Off: the downgrade would expose the next request
    /// (and its cookies of non-`Secure` kinds) to the network. curl and Go follow it; we refuse by default.
    public var allowsHTTPSToHTTP: Bool
    /// Headers removed when a redirect leaves the origin, besides `Authorization`, `Proxy-Authorization`
    /// and `Cookie`, which always are. Add API keys and other credentials sent as custom headers.
    /// ``HTTPClientRequest/sensitiveHeaders`` adds to these per request.
    public var sensitiveHeaders: Set<HTTPField.Name>
    /// Keep the request's credentials when a redirect leaves the origin: ``HTTPClientRequest/credentials``, the
    /// bearer token, and `Authorization`, `Proxy-Authorization` and `Cookie` fields the caller set (curl's
    /// `--location-trusted`). Off by default, and it should stay off unless every place the redirects can lead is
    /// trusted with the password: a server that can answer with a redirect can send it anywhere.
    /// ``sensitiveHeaders`` are removed even so, and https → http is still refused unless ``allowsHTTPSToHTTP``.
    public var sendsCredentialsToOtherOrigins = false

    /// Creates a policy; every parameter defaults to the value described on its property.
    public init(
        followsRedirects: Bool = true, maxRedirects: Int = 10, keepsMethodOn301And302: Bool = false,
        allowsHTTPSToHTTP: Bool = false, sensitiveHeaders: Set<HTTPField.Name> = [], keepsMethodOn303: Bool = false,
        detectsLoops: Bool = true
    ) {
        self.followsRedirects = followsRedirects
        self.maxRedirects = maxRedirects
        self.keepsMethodOn301 = keepsMethodOn301And302
        self.keepsMethodOn302 = keepsMethodOn301And302
        self.keepsMethodOn303 = keepsMethodOn303
        self.detectsLoops = detectsLoops
        self.allowsHTTPSToHTTP = allowsHTTPSToHTTP
        self.sensitiveHeaders = sensitiveHeaders
    }

    /// Redirects are not followed: a 3xx response is returned as it is.
    public static let disabled = RedirectPolicy(followsRedirects: false)
}

extension HTTPClientResponse {
    /// A redirect that was followed on the way to a response: where it came from and what it said.
    /// Its body was read and dropped.
    public struct RedirectHop: Sendable, Hashable {
        /// The URL that answered with the redirect.
        public var url: HTTPURL
        /// The method the request to ``url`` was sent with.
        public var method: HTTPRequest.Method
        /// 301, 302, 303, 307 or 308.
        public var status: HTTPResponse.Status
        /// The redirect's header fields (its `Location`, `Set-Cookie`, …).
        public var headers: HTTPFields

        /// Creates a hop; the redirect middleware records these in ``HTTPClientResponse/history``.
        public init(url: HTTPURL, method: HTTPRequest.Method, status: HTTPResponse.Status, headers: HTTPFields) {
            self.url = url
            self.method = method
            self.status = status
            self.headers = headers
        }
    }
}

/// Follows redirects as ``RedirectPolicy`` describes. The outermost built-in middleware: each hop goes
/// through the whole chain below it again (cookies, compression, …), so a cookie set by a 302 is sent to
/// the next hop. Being outermost it also sees the request as the caller made it and the final response, so
/// it records ``HTTPClientResponse/originalURL``, ``HTTPClientResponse/history`` and the text-decoding
/// fallback on the response.
struct RedirectMiddleware: HTTPClientMiddleware {
    let policy: RedirectPolicy
    let textDecodingFallback: TextDecodingFallback

    /// A redirect response's body is read (to hand its connection back to the pool) up to this much;
    /// a larger one is dropped, which closes its connection. 64 KiB: the response stream's own drain limit.
    static let drainLimit = 64 * 1024

    /// Whether anything can keep a hop's cookies (the client's jar, or a user step, which sits inside this one): only
    /// then can a `Set-Cookie` change the next request.
    let keepsCookies: Bool

    init(policy: RedirectPolicy = RedirectPolicy(), textDecodingFallback: TextDecodingFallback = TextDecodingFallback(),
         keepsCookies: Bool = true) {
        self.policy = policy
        self.textDecodingFallback = textDecodingFallback
        self.keepsCookies = keepsCookies
    }

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        _ = try request.httpURL()  // an invalid URL fails here, before anything is sent; the parse is kept
        var response = try await next(request)
        guard try finish(&response, to: request) else { return try await follow(request, first: response, next: next) }
        return response
    }

    /// Makes `response` what ``HTTPClient/send(_:)`` returns and says true, or says false when it is a redirect
    /// this request's policy follows.
    ///
    /// Most responses are final, and the hops are followed in ``follow(_:first:next:)``: an async function's
    /// frame holds every local of all its paths, and every request in flight carries the frames of the steps
    /// it is in.
    ///
    /// In place (`inout`): a response passed by value and returned would be copied, retaining each of its
    /// fields, and the original released.
    @inline(never)
    private func finish(_ response: inout HTTPClientResponse, to request: HTTPClientRequest) throws(HTTPClientError) -> Bool {
        let url = try request.httpURL()
        let policy = request.redirectPolicy ?? self.policy
        if policy.followsRedirects, try Self.nextStep(for: response, method: request.method, from: url, policy: policy) != nil {
            return false
        }
        if response.originalURL != url { response.originalURL = url }
        if !response.history.isEmpty { response.history = [] }
        response.textDecodingFallback = request.textDecodingFallback ?? textDecodingFallback
        return true
    }

    /// Follows the redirects that start with `first`, the response to `request`.
    @inline(never)
    private func follow(_ request: HTTPClientRequest, first: HTTPClientResponse, next: Next) async throws -> HTTPClientResponse {
        let policy = request.redirectPolicy ?? self.policy
        let fallback = request.textDecodingFallback ?? textDecodingFallback
        let originalURL = try request.httpURL()
        var current = request
        var currentURL = originalURL
        var history: [HTTPClientResponse.RedirectHop] = []
        // (method, URL) pairs requested since the last Set-Cookie; see the loop check below. Made at the
        // first redirect: most requests have none, and the URL's string form costs an allocation.
        var visitedSoFar: Set<VisitKey>?
        var first: HTTPClientResponse? = first

        while true {
            var response: HTTPClientResponse
            if let given = first.take() { response = given } else { response = try await next(current) }
            guard policy.followsRedirects,
                  let step = try Self.nextStep(for: response, method: current.method, from: currentURL, policy: policy)
            else {
                response.originalURL = originalURL
                response.history = history
                response.textDecodingFallback = fallback
                return response
            }
            history.append(.init(url: currentURL, method: current.method, status: response.status, headers: response.headers))
            await Self.drain(response.body)

            guard history.count <= policy.maxRedirects else {
                throw HTTPClientError(.tooManyRedirects,
                    "more redirects than the limit of \(policy.maxRedirects); the next would go from \(currentURL.redactedDescription)"
                        + " to \(step.url.redactedDescription)")
            }
            if currentURL.isSecure && !step.url.isSecure && !policy.allowsHTTPSToHTTP {
                throw HTTPClientError(.redirectRefused,
                    "refused to follow a redirect from https to plain http (\(currentURL.redactedDescription) → \(step.url.redactedDescription));"
                        + " set RedirectPolicy.allowsHTTPSToHTTP to allow it")
            }
            // A URL seen again proves a loop only if nothing changed in between. A response that sets a
            // cookie changes what the next request carries (the login pattern "set a cookie, redirect to
            // the same page" is legitimate and browsers allow it), so it starts the bookkeeping afresh;
            // a server that sets a cookie on every hop still ends at `maxRedirects`. Without a jar for this
            // request the cookie changes nothing, and the loop is one.
            if policy.detectsLoops {
                var visited = visitedSoFar ?? [VisitKey(method: request.method, url: originalURL.description)]
                if keepsCookies, current.usesCookieJar, response.headers.contains(.setCookie) { visited.removeAll() }
                let key = VisitKey(method: step.method, url: step.url.description)
                guard visited.insert(key).inserted else {
                    throw HTTPClientError(.redirectLoop,
                        "redirect loop: \(currentURL.redactedDescription) redirected back to \(step.url.redactedDescription), already requested"
                            + " (after \(history.count) redirects)")
                }
                visitedSoFar = visited
            }
            RequestObservation.current?.redirect(status: response.status.code, location: step.url.redactedDescription)

            var nextRequest = current
            nextRequest.resendCount += 1
            // The fragment is never sent, but response.url keeps it (see `resolve`).
            nextRequest.url = step.url.description + (step.url.fragment.map { "#" + $0 } ?? "")
            nextRequest.cacheParsedURL(step.url)
            nextRequest.method = step.method
            if !step.keepsBody {
                nextRequest.body = nil
                // As Fetch's "HTTP-redirect fetch": the request-body-header names go with the body.
                for name in Self.bodyHeaders { nextRequest.headers[name] = nil }
            } else if let body = nextRequest.body, !body.isReplayable {
                throw HTTPClientError(.bodyNotReplayable,
                    "cannot follow the \(response.status.code) redirect to \(step.url.redactedDescription): it requires sending the"
                        + " \(step.method) body again, but the body is a one-shot stream; use .bytes for a replayable body")
            }
            if !Self.sameOrigin(currentURL, step.url) {
                // Credentials belong to the origin they were given for, unless the policy trusts every origin with
                // them (curl's --location-trusted, not the default).
                if !policy.sendsCredentialsToOtherOrigins {
                    for name in Self.credentialHeaders { nextRequest.headers[name] = nil }
                    nextRequest.credentials = nil
                    nextRequest.bearerToken = nil
                    nextRequest.sendsCredentialsPreemptively = false
                }
                // For middleware that adds credentials of its own (request signing): not for this origin.
                nextRequest.isRedirectedFromAnotherOrigin = true
                for name in policy.sensitiveHeaders.union(request.sensitiveHeaders) { nextRequest.headers[name] = nil }
                nextRequest.headers[Self.hostHeader] = nil  // the new URL's host, not a Host the caller set (as Go)
            }
            current = nextRequest
            currentURL = step.url
        }
    }

    // MARK: Deciding the next hop

    struct Step {
        var url: HTTPURL
        var method: HTTPRequest.Method
        var keepsBody: Bool
    }

    struct VisitKey: Hashable {
        var method: HTTPRequest.Method
        var url: String
    }

    /// 301, 302, 303, 307 or 308: the statuses that are followed (a `switch`: it runs for every response).
    static func isRedirect(_ code: Int) -> Bool {
        switch code {
        case 301, 302, 303, 307, 308: true
        default: false
        }
    }

    /// The hop a response asks for, or nil when it is not a redirect to follow (not 301/302/303/307/308,
    /// or no `Location`: RFC 9110 §15.4 makes `Location` optional, and without it the response is final).
    ///
    /// 300 Multiple Choices is returned as is: its `Location` is only a preference (§15.4.1); Go and
    /// browsers do not follow it either.
    static func nextStep(
        for response: HTTPClientResponse, method: HTTPRequest.Method, from base: HTTPURL, policy: RedirectPolicy
    ) throws(HTTPClientError) -> Step? {
        let code = response.status.code
        guard Self.isRedirect(code), let location = try singleLocation(of: response, from: base) else { return nil }
        // 301 and 302 turn only a POST into a GET (Fetch's HTTP-redirect fetch, curl, async-http-client): a DELETE or
        // PUT answered by a trailing-slash 301 made a GET that succeeded, and the caller took it for the DELETE's answer.
        let keepsMethod = switch code {
        case 307, 308: true
        case 303: policy.keepsMethodOn303
        case 301: policy.keepsMethodOn301 || method != .post
        default: policy.keepsMethodOn302 || method != .post
        }
        let url = try resolve(location, against: base)
        if keepsMethod || method == .head {
            // HEAD stays HEAD on 301/302/303 (RFC 9110 §15.4.4 "a GET or HEAD request if using HEAD"; Go, Fetch).
            return Step(url: url, method: method, keepsBody: keepsMethod)
        }
        return Step(url: url, method: .get, keepsBody: false)
    }

    /// The response's one `Location` value, or nil without one. `Location` is a singleton field (RFC 9110
    /// §10.2.2: its value is one URI-reference, not a list), so several fields cannot be joined with a comma
    /// into one (that would follow `first,%20second`): repeats of the same value count as one, different
    /// values are a `HTTPClientError.Code.malformedResponse` naming both, and no redirect is followed
    /// (docs/framing.md).
    static func singleLocation(of response: HTTPClientResponse, from base: HTTPURL) throws(HTTPClientError) -> String? {
        let values = response.headers[values: .location]
        guard let first = values.first else { return nil }
        if let other = values.first(where: { $0 != first }) {
            throw HTTPClientError(.malformedResponse,
                "the \(response.status.code) redirect from \(base.redactedDescription) has \(values.count) different Location"
                    + " fields ('\(HTTPURL.redacting(first))' and '\(HTTPURL.redacting(other))'); a response has at most one"
                    + " Location (RFC 9110 §10.2.2)")
        }
        return first
    }

    /// Resolves a `Location` value against the URL that sent it (RFC 3986 §5.2).
    ///
    /// Servers put raw spaces and UTF-8 in `Location` more often than they should; such bytes are
    /// percent-encoded first (curl and browsers do the same) rather than failing the request, and a non-ASCII
    /// host goes to its IDNA ASCII form (``asciiHost(_:)``). A scheme
    /// other than http or https is refused (`HTTPClientError.Code.redirectRefused`), and so is one that would leave
    /// the Unix socket of an `http+unix` URL for another socket; a value that is still
    /// not a URL reference is a `HTTPClientError.Code.malformedResponse`.
    static func resolve(_ location: String, against base: HTTPURL) throws(HTTPClientError) -> HTTPURL {
        let reference = percentEncodingInvalidBytes(asciiHost(String(Substring(location).trimmingWhitespace())))
        if let scheme = scheme(of: reference), scheme != "http", scheme != "https" {
            throw HTTPClientError(.redirectRefused,
                "refused to follow a redirect to '\(HTTPURL.redacting(reference))': only http and https URLs are followed")
        }
        var url: HTTPURL
        do {
            url = try base.resolving(reference)
        } catch {
            throw HTTPClientError(.malformedResponse,
                "the redirect from \(base.redactedDescription) has an invalid Location '\(HTTPURL.redacting(location))':"
                    + " \(error.message)")
        }
        // A server behind one Unix socket does not get to send the client to another (`//%2Fother.sock/x`): a
        // socket is a local endpoint the user chose, as curl's --unix-socket, which no redirect changes.
        if base.isUnixSocket, url.unixSocketPath != base.unixSocketPath {
            throw HTTPClientError(.redirectRefused,
                "refused to follow a redirect from the Unix socket \(base.unixSocketPath ?? "") to another socket"
                    + " ('\(HTTPURL.redacting(location))'): a redirect stays on the socket it came from")
        }
        // A Location without a fragment inherits the current one (RFC 9110 §10.2.2).
        if url.fragment == nil { url.fragment = base.fragment }
        return url
    }

    /// The scheme of a URI reference, lowercased, or nil for a relative reference (RFC 3986 §3.1, §4.2).
    static func scheme(of reference: String) -> String? {
        let bytes = reference.utf8
        guard let colon = bytes.firstIndex(where: { $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "/")
            || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }),
            bytes[colon] == UInt8(ascii: ":"), colon != bytes.startIndex
        else { return nil }
        return String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
    }

    /// Percent-encodes every byte RFC 3986 never allows in a URI (controls, space, DEL, non-ASCII, and
    /// the characters " < > \ ^ ` { | }), a `%` that does not start a valid escape, `[` and `]` outside an
    /// authority's host (its IP literal, `[::1]`), and every `#` after the first (RFC 3986 §3.5: a fragment has none).
    ///
    /// Servers send `/items?filter[name]=x&ids[]=1` (PHP, Rails and JSON:API style), `/a[1]/b` and `/page#a#b`;
    /// curl and browsers follow them, and the URL parser refuses the raw characters.
    static func percentEncodingInvalidBytes(_ text: String) -> String {
        let bytes = Array(text.utf8)
        let host = authorityRange(of: bytes).map { hostRange(in: bytes, authority: $0) }
        let firstHash = bytes.firstIndex(of: UInt8(ascii: "#"))
        func isHex(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
        }
        func isAllowed(_ index: Int) -> Bool {
            let byte = bytes[index]
            switch byte {
            case 0x21, 0x24...0x3B, 0x3D, 0x3F...0x5A, 0x5F, 0x61...0x7A, 0x7E:
                // ! $ & ' ( ) * + , - . / 0-9 : ; = ? @ A-Z _ a-z ~ ("%", "#", "[" and "]" below)
                return byte != UInt8(ascii: "%") || (index + 2 < bytes.count && isHex(bytes[index + 1]) && isHex(bytes[index + 2]))
            case UInt8(ascii: "["), UInt8(ascii: "]"):
                return host?.contains(index) ?? false
            case UInt8(ascii: "#"):
                return index == firstHash
            default:
                return false
            }
        }
        guard bytes.indices.contains(where: { !isAllowed($0) }) else { return text }
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(bytes.count + 16)
        for index in bytes.indices {
            if isAllowed(index) {
                encoded.append(bytes[index])
            } else {
                encoded.append(contentsOf: [UInt8(ascii: "%"), hex[Int(bytes[index] >> 4)], hex[Int(bytes[index] & 0x0F)]])
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// The reference with a non-ASCII host in its authority (`http://bücher.example/x`) in its IDNA ASCII form
    /// (`xn--bcher-kva.example`), as curl and browsers send it: percent-encoded, the URL parser refuses it. Unchanged
    /// when the host is ASCII, an IP literal, or cannot be encoded (it is then percent-encoded, and refused, as before).
    static func asciiHost(_ text: String) -> String {
        let bytes = Array(text.utf8)
        guard let authority = authorityRange(of: bytes) else { return text }
        let host = hostRange(in: bytes, authority: authority)
        guard bytes[host].contains(where: { $0 >= 0x80 }), bytes[host].first != UInt8(ascii: "["),
              let ascii = IDNA.toASCII(String(decoding: bytes[host], as: UTF8.self)) else { return text }
        return String(decoding: bytes[..<host.lowerBound] + Array(ascii.utf8) + bytes[host.upperBound...], as: UTF8.self)
    }

    /// Where a URI reference's authority is (RFC 3986 §3.2: after `scheme://` or a leading `//`, up to the first
    /// `/`, `?` or `#`), or nil when it has none.
    static func authorityRange(of bytes: [UInt8]) -> Range<Int>? {
        let slash = UInt8(ascii: "/")
        var start: Int
        if bytes.count >= 2, bytes[0] == slash, bytes[1] == slash {
            start = 2
        } else if let colon = bytes.firstIndex(where: { $0 == UInt8(ascii: ":") || $0 == slash || $0 == UInt8(ascii: "?")
            || $0 == UInt8(ascii: "#") }), bytes[colon] == UInt8(ascii: ":"), colon != 0,
            colon + 2 < bytes.count, bytes[colon + 1] == slash, bytes[colon + 2] == slash {
            start = colon + 3
        } else {
            return nil
        }
        let end = bytes[start...].firstIndex(where: { $0 == slash || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") })
            ?? bytes.count
        if start > end { start = end }
        return start..<end
    }

    /// The host within an authority: after the last `@` (the userinfo), up to the port's `:` (a bracketed IP
    /// literal up to and with its `]`).
    static func hostRange(in bytes: [UInt8], authority: Range<Int>) -> Range<Int> {
        let start = bytes[authority].lastIndex(of: UInt8(ascii: "@")).map { $0 + 1 } ?? authority.lowerBound
        if start < authority.upperBound, bytes[start] == UInt8(ascii: "[") {
            let close = bytes[start..<authority.upperBound].firstIndex(of: UInt8(ascii: "]"))
            return start..<(close.map { $0 + 1 } ?? authority.upperBound)
        }
        let end = bytes[start..<authority.upperBound].firstIndex(of: UInt8(ascii: ":")) ?? authority.upperBound
        return start..<end
    }

    /// RFC 6454 origin: scheme, host and port.
    static func sameOrigin(_ a: HTTPURL, _ b: HTTPURL) -> Bool {
        a.scheme == b.scheme && a.host == b.host && a.port == b.port
    }

    /// Always removed when a redirect leaves the origin: credentials meant for the old one. curl drops
    /// `Authorization` and `Cookie` on a change of host, Go `Authorization` and `Cookie`, Fetch
    /// `Authorization`; `Proxy-Authorization` answers the proxy of the old hop, which may not be the next one's.
    static let credentialHeaders: [HTTPField.Name] = [.authorization, .proxyAuthorization, .cookie]

    /// Fetch's "request-body-header names", removed with the body when a redirect switches to GET.
    static let bodyHeaders: [HTTPField.Name] = [
        .contentType, .contentLength, .contentEncoding, .contentLanguage, .contentLocation, .transferEncoding,
    ]

    // swift-http-types marks `.host` unavailable (it models HTTP/2's `:authority`); HTTP/1.1 has the field.
    static let hostHeader = HTTPField.Name("Host")!

    /// Reads and drops a redirect's body so its connection can go back to the pool before the next hop.
    /// Errors are ignored: the redirect itself was received, and the next hop does not depend on its body.
    /// Read as it came (``HTTPClientResponse/Body/undecoded``): nothing is inflated for nobody, and the limit counts
    /// the bytes on the connection (a gzipped 10 KB page inflating past it closed the connection instead).
    static func drain(_ body: HTTPClientResponse.Body) async {
        var read = 0
        do {
            for try await chunk in body.undecoded {
                read += chunk.count
                if read > drainLimit { return }  // dropping the rest closes the connection
            }
        } catch {}
    }
}
