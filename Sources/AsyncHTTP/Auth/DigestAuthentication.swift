// HTTP Digest access authentication, RFC 7616, and what RFC 2617 and RFC 2069 servers still send.
//
// Sans-IO: a challenge in, an `Authorization` (or `Proxy-Authorization`) field value out. The middleware
// decides when to answer, keeps one ``DigestState`` per protection space, and supplies the client nonce
// (``DigestState/makeClientNonce()``) so that tests can fix it.
//
// The computation (RFC 7616 §3.4.1-§3.4.3), with H the algorithm's hash in lowercase hex and KD(s, d) = H(s ":" d):
//
//     A1       = unq(username) ":" unq(realm) ":" passwd
//     A1 -sess = H(unq(username) ":" unq(realm) ":" passwd) ":" unq(nonce) ":" unq(cnonce)
//     A2       = Method ":" request-uri                        (qop=auth, or no qop)
//     A2       = Method ":" request-uri ":" H(entity-body)     (qop=auth-int)
//     response = KD(H(A1), unq(nonce) ":" nc ":" unq(cnonce) ":" qop ":" H(A2))
//     response = KD(H(A1), unq(nonce) ":" H(A2))               (no qop: RFC 2069)
//
// The inner H of -sess is hex, as RFC 7616 writes it and curl, Apache and Chromium compute it; RFC 2617's sample
// code hashed the raw 16 bytes, which its errata corrected.

/// A Digest algorithm (RFC 7616 §3.3 and the IANA "HTTP Digest Hash Algorithms" registry).
enum DigestAlgorithm: String, Sendable, CaseIterable {
    case md5 = "MD5"
    case md5Sess = "MD5-sess"
    case sha256 = "SHA-256"
    case sha256Sess = "SHA-256-sess"
    case sha512_256 = "SHA-512-256"
    case sha512_256Sess = "SHA-512-256-sess"

    /// The algorithm a challenge's `algorithm` parameter names, compared without regard to case
    /// (RFC 7616 §3.3 writes `MD5-sess`; servers send `md5-sess` and `MD5-SESS` too).
    init?(parameter: String) {
        let lowered = parameter.lowercased()
        guard let match = Self.allCases.first(where: { $0.rawValue.lowercased() == lowered }) else { return nil }
        self = match
    }

    /// The hash function H.
    var hashFunction: HashFunction {
        switch self {
        case .md5, .md5Sess: .md5
        case .sha256, .sha256Sess: .sha256
        case .sha512_256, .sha512_256Sess: .sha512_256
        }
    }

    /// Whether A1 is the session form, keyed on the server's nonce and the client's first cnonce.
    var isSession: Bool {
        switch self {
        case .md5Sess, .sha256Sess, .sha512_256Sess: true
        case .md5, .sha256, .sha512_256: false
        }
    }
}

/// The parts of a `Digest` challenge that a client acts on (RFC 7616 §3.3).
///
/// ```swift
/// let challenges = AuthChallenge.parse(response.headers[values: .wwwAuthenticate])
/// guard let digest = DigestChallenge.preferred(in: challenges) else { return }
/// var state = DigestState(challenge: digest)
/// ```
struct DigestChallenge: Sendable, Equatable {
    /// The protection space within the origin; echoed in the response.
    var realm: String
    /// The server's nonce; echoed, and hashed into every response.
    var nonce: String
    /// Data the server wants back unchanged.
    var opaque: String?
    /// The hash algorithm; `MD5` when the challenge names none (RFC 7616 §3.3: "If this is not present,
    /// it is assumed to be 'MD5'").
    var algorithm: DigestAlgorithm
    /// Whether the challenge had an `algorithm` parameter. When it had none, the answer leaves it out too,
    /// as Chromium and curl do, so that an RFC 2069 server sees only what it knows.
    var algorithmIsExplicit: Bool
    /// The quality-of-protection options offered, lowercased, in the server's order: `auth`, `auth-int`.
    /// Empty for an RFC 2069 challenge.
    var qop: [String]
    /// `stale=true`: the request was refused only because the nonce expired. Retry with the new nonce and the
    /// same credentials, without asking the user again (RFC 7616 §3.3).
    var stale: Bool
    /// `userhash=true`: the server wants the username hashed (RFC 7616 §3.4.4).
    var userhash: Bool
    /// The URIs of the protection space (the `domain` parameter, space-separated); empty when not given,
    /// which means the whole origin (RFC 7616 §3.3).
    var domain: [String]
    /// `charset=UTF-8`: the server expects the username and password in UTF-8 (RFC 7616 §4). We use UTF-8
    /// whether or not it says so, as every current client does; this records that it asked.
    var charsetUTF8: Bool

    /// The Digest challenge in `challenge`, or `nil` when it is not one this client can answer:
    /// not the `Digest` scheme; no `realm` or `nonce` (both required by RFC 7616 §3.3); an algorithm outside
    /// ``DigestAlgorithm``; a `qop` list with neither `auth` nor `auth-int`; or a `-sess` algorithm with no
    /// `qop`, which would need a cnonce that RFC 2617 §3.2.2 forbids sending without one.
    init?(_ challenge: AuthChallenge) {
        guard challenge.scheme == "digest", challenge.token68 == nil else { return nil }
        let parameters = challenge.parameters
        guard let realm = parameters["realm"], let nonce = parameters["nonce"] else { return nil }

        let algorithm: DigestAlgorithm
        if let name = parameters["algorithm"] {
            guard let known = DigestAlgorithm(parameter: name) else { return nil }
            algorithm = known
        } else {
            algorithm = .md5
        }

        // qop-options = "qop" "=" DQUOTE qop-value *("," qop-value) DQUOTE; tokens, so compared lowercased.
        let qop = (parameters["qop"] ?? "").split(separator: ",").map {
            $0.trimmingASCIIWhitespace().lowercased()
        }.filter { !$0.isEmpty }
        if !qop.isEmpty && !qop.contains("auth") && !qop.contains("auth-int") { return nil }
        if qop.isEmpty && algorithm.isSession { return nil }

        self.realm = realm
        self.nonce = nonce
        self.opaque = parameters["opaque"]
        self.algorithm = algorithm
        self.algorithmIsExplicit = parameters["algorithm"] != nil
        self.qop = qop
        self.stale = parameters["stale"]?.lowercased() == "true"
        self.userhash = parameters["userhash"]?.lowercased() == "true"
        self.domain = (parameters["domain"] ?? "").split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        self.charsetUTF8 = parameters["charset"]?.lowercased() == "utf-8"
    }

    /// The first Digest challenge in `challenges` that this client can answer.
    ///
    /// A server that supports several algorithms sends one challenge for each, most preferred first, and the
    /// client uses the first one it supports (RFC 7616 §3.7).
    static func preferred(in challenges: [AuthChallenge]) -> DigestChallenge? {
        for challenge in challenges {
            if let digest = DigestChallenge(challenge) { return digest }
        }
        return nil
    }
}

/// Digest authentication for one protection space: the challenge, and how often its nonce has been used.
///
/// Keep one per realm and reuse it for every request into that space, so that the nonce count goes up
/// (`nc`, RFC 7616 §3.4): a server may refuse a count it has already seen, as a replay.
///
/// ```swift
/// var state = DigestState(challenge: digest)
/// let value = try state.authorization(
///     username: "Mufasa", password: "Circle of Life", method: "GET", uri: "/dir/index.html",
///     body: nil, cnonce: DigestState.makeClientNonce())
/// request.headers[.authorization] = value   // "Digest username=\"Mufasa\", realm=..."
/// ```
struct DigestState: Sendable {
    /// The challenge being answered; its nonce changes with ``useNextNonce(_:)``.
    private(set) var challenge: DigestChallenge
    /// How many requests have been sent with the current nonce and a `qop`: the last `nc` sent.
    private(set) var nonceCount: UInt32 = 0
    /// For a `-sess` algorithm, the cnonce that A1 was keyed on: the first one used with the current nonce.
    /// Later requests keep sending it, so that servers that recompute A1 from each request's cnonce (Apache)
    /// and servers that keep the first one (RFC 2617 §3.2.2.2: "A1 is calculated only once, on the first
    /// request") agree. curl also keeps one cnonce per nonce.
    private var sessionClientNonce: String?

    /// Starts answering `challenge`, with a nonce count of zero.
    init(challenge: DigestChallenge) {
        self.challenge = challenge
    }

    /// Switches to a nonce the server gave in advance (`nextnonce` in `Authentication-Info`, RFC 7616 §3.5),
    /// or after a `stale=true` challenge with the same realm. The nonce count starts again from one.
    mutating func useNextNonce(_ nonce: String) {
        challenge.nonce = nonce
        nonceCount = 0
        sessionClientNonce = nil
    }

    /// The `nextnonce` of an `Authentication-Info` (or `Proxy-Authentication-Info`) field's values, or nil when
    /// there is none or it could not be sent back in a quoted-string.
    ///
    /// The field is a list of auth-params with no scheme (RFC 9110 §11.6.3, RFC 7616 §3.5:
    /// `nextnonce="…", qop=auth, rspauth="…", cnonce="…", nc=00000001`); with a scheme in front, the
    /// challenge parser reads it as one challenge's parameters, quoted-strings and all.
    static func nextNonce(inAuthenticationInfo fieldValues: [String]) -> String? {
        for challenge in AuthChallenge.parse(fieldValues.map { "Digest " + $0 }) {
            if let nonce = challenge.parameters["nextnonce"], !nonce.isEmpty, AuthChallenge.canBeQuoted(nonce) {
                return nonce
            }
        }
        return nil
    }

    /// A fresh client nonce: 16 random bytes in hex (curl sends 12 random bytes in base64; either is far more
    /// than RFC 7616 §3.4's "unpredictable" needs, and hex never needs escaping).
    static func makeClientNonce() -> String {
        hexString(secureRandomBytes(16))
    }

    /// The value for `Authorization` (or `Proxy-Authorization`) answering the challenge for one request, and
    /// advances the nonce count when a `qop` is used.
    ///
    /// - Parameters:
    ///   - username: in clear; sent as `username`, as `username*` (RFC 8187) when it is not printable ASCII,
    ///     or hashed when the server asked for `userhash`.
    ///   - password: never sent, only hashed.
    ///   - method: the request method, exactly as on the request line.
    ///   - uri: the request-target, exactly as on the request line (RFC 7616 §3.4.6: the server compares them).
    ///   - body: the complete request body for `qop=auth-int`; `[]` when the request has none, `nil` when it
    ///     is not available in memory (a stream), in which case `auth` is used, and a server offering only
    ///     `auth-int` cannot be answered.
    ///   - cnonce: the client nonce; use ``makeClientNonce()``. Printable ASCII without `"` or `\`.
    ///   - preferAuthInt: use `auth-int` when the server offers both it and `auth`, and `body` is given.
    ///     `auth` is the default, as in curl and Chromium: few servers check the body, and it must be in memory.
    /// - Throws: `HTTPClientError.Code.invalidRequest` for a method, URI or cnonce that cannot be sent;
    ///   `HTTPClientError.Code.authenticationFailed` when only `auth-int` is offered and there is no body,
    ///   the nonce count is exhausted, or OpenSSL refuses the hash.
    mutating func authorization(
        username: String, password: String, method: String, uri: String, body: [UInt8]?, cnonce: String,
        preferAuthInt: Bool = false
    ) throws(HTTPClientError) -> String {
        guard !method.isEmpty, method.utf8.allSatisfy(AuthChallenge.isTokenCharacter) else {
            throw .invalidRequest("Digest: the method \(AuthChallenge.quoted(method)) is not a token")
        }
        guard !uri.isEmpty, AuthChallenge.canBeQuoted(uri) else {
            throw .invalidRequest("Digest: the request target must be printable ASCII")
        }

        // Choose the quality of protection (RFC 7616 §3.4: one of the offered options).
        let qop: String?
        let offered = challenge.qop
        if offered.isEmpty {
            qop = nil
        } else if offered.contains("auth-int") && body != nil && (preferAuthInt || !offered.contains("auth")) {
            qop = "auth-int"
        } else if offered.contains("auth") {
            qop = "auth"
        } else {
            throw HTTPClientError(
                .authenticationFailed,
                "Digest: the server accepts only qop=auth-int, which needs the whole request body")
        }

        // The client nonce: pinned for -sess (see sessionClientNonce), fresh otherwise.
        var clientNonce = cnonce
        if qop != nil {
            guard !cnonce.isEmpty, AuthChallenge.canBeQuoted(cnonce),
                !cnonce.contains(where: { $0 == "\"" || $0 == "\\" })
            else {
                throw .invalidRequest("Digest: the cnonce must be printable ASCII without quotes or backslashes")
            }
            guard nonceCount < UInt32.max else {
                throw HTTPClientError(
                    .authenticationFailed, "Digest: the nonce count is exhausted; a new nonce is needed")
            }
            if challenge.algorithm.isSession {
                if let pinned = sessionClientNonce { clientNonce = pinned } else { sessionClientNonce = cnonce }
            }
        }

        let h = challenge.algorithm.hashFunction
        func hex(_ text: String) throws(HTTPClientError) -> String { hexString(try h.hash(text)) }

        // RFC 7616 §3.4.2, A1.
        var ha1 = try hex("\(username):\(challenge.realm):\(password)")
        if challenge.algorithm.isSession {
            ha1 = try hex("\(ha1):\(challenge.nonce):\(clientNonce)")
        }

        // §3.4.3, A2.
        var a2 = "\(method):\(uri)"
        if qop == "auth-int", let body {
            a2 += ":" + hexString(try h.hash(body))
        }
        let ha2 = try hex(a2)

        // §3.4.1, the response.
        let nc: String
        let response: String
        if let qop {
            nonceCount += 1
            nc = Self.eightHexDigits(nonceCount)
            response = try hex("\(ha1):\(challenge.nonce):\(nc):\(clientNonce):\(qop):\(ha2)")
        } else {
            nc = ""
            response = try hex("\(ha1):\(challenge.nonce):\(ha2)")
        }

        // The field, in the order of RFC 7616 §3.9.1's example.
        var fields: [String] = []
        if challenge.userhash {
            // §3.4.4: username = H(unq(username) ":" unq(realm)); A1 above keeps the clear name, as the
            // server looks the user up by the hash and then computes with what it stored.
            fields.append("username=" + AuthChallenge.quoted(try hex("\(username):\(challenge.realm)")))
        } else if AuthChallenge.canBeQuoted(username) {
            fields.append("username=" + AuthChallenge.quoted(username))
        } else {
            // §3.4: a username that cannot go in a quoted-string goes in username*, an RFC 8187 ext-value.
            fields.append("username*=" + Self.extValue(username))
        }
        fields.append("realm=" + AuthChallenge.quoted(challenge.realm))
        fields.append("uri=" + AuthChallenge.quoted(uri))
        if challenge.algorithmIsExplicit {
            fields.append("algorithm=" + challenge.algorithm.rawValue)
        }
        fields.append("nonce=" + AuthChallenge.quoted(challenge.nonce))
        if let qop {
            // nc and qop are sent as tokens, without quotes (§3.4; RFC 2617's errata); cnonce is quoted.
            fields.append("nc=" + nc)
            fields.append("cnonce=" + AuthChallenge.quoted(clientNonce))
            fields.append("qop=" + qop)
        }
        fields.append("response=" + AuthChallenge.quoted(response))
        if let opaque = challenge.opaque {
            fields.append("opaque=" + AuthChallenge.quoted(opaque))
        }
        if challenge.userhash {
            fields.append("userhash=true")
        }
        return "Digest " + fields.joined(separator: ", ")
    }

    // MARK: Helpers

    /// `n` as exactly eight lowercase hex digits: nc-value = 8LHEX (RFC 7616 §3.4).
    static func eightHexDigits(_ n: UInt32) -> String {
        let digits = String(n, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// An RFC 8187 §3.2 ext-value in UTF-8 with no language: `UTF-8''J%C3%A4s%C3%B8n%20Doe`.
    /// Bytes outside attr-char are percent-encoded with uppercase hex, as the RFC's examples are.
    static func extValue(_ value: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded = Array("UTF-8''".utf8)
        for byte in value.utf8 {
            if isAttributeCharacter(byte) {
                encoded.append(byte)
            } else {
                encoded.append(UInt8(ascii: "%"))
                encoded.append(hex[Int(byte >> 4)])
                encoded.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// attr-char (RFC 8187 §3.2.1): a token character other than `*`, `'` and `%`.
    private static func isAttributeCharacter(_ byte: UInt8) -> Bool {
        AuthChallenge.isTokenCharacter(byte) && byte != UInt8(ascii: "*") && byte != UInt8(ascii: "'")
            && byte != UInt8(ascii: "%")
    }
}

extension Substring {
    /// Without leading and trailing SP and HTAB (OWS).
    fileprivate func trimmingASCIIWhitespace() -> Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" { result.removeFirst() }
        while let last = result.last, last == " " || last == "\t" { result.removeLast() }
        return result
    }
}
