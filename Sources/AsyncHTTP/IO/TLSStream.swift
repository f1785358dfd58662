import COpenSSL

/// One OpenSSL `SSL_CTX` per `TLSConfiguration`, with a per-host session cache.
///
/// `SSL_CTX` is safe to share once configured (OpenSSL takes its own locks for `SSL_new` and the
/// reference counts); the only mutable Swift state, the session cache, sits behind `sessions`' lock.
final class TLSContext: @unchecked Sendable {
    // @unchecked: `context` is configured in init and only read after; `sessions` is a Mutex.
    let context: OpaquePointer
    let configuration: TLSConfiguration
    /// The most recent resumable session per "host:port", bounded in number and age (``TLSSessionCache``).
    /// Owned references: each holds the one the new-session callback handed over, freed exactly once when the
    /// cache gives it up (replaced, evicted, expired) or in deinit.
    private let sessions: Locked<TLSSessionCache<SessionReference>>

    /// An owned `SSL_SESSION` reference.
    struct SessionReference: @unchecked Sendable {
        // @unchecked: SSL_SESSION objects are reference counted by OpenSSL with atomic counts; this one is
        // only read or freed while `sessions`' lock is held.
        let pointer: OpaquePointer
    }

    init(configuration: TLSConfiguration, sessionCache: TLSSessionCache<SessionReference> = TLSSessionCache()) throws(HTTPClientError) {
        sessions = Locked(sessionCache)
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw HTTPClientError(.tlsHandshakeFailed, "SSL_CTX_new failed", tlsReason: takeOpenSSLErrors())
        }
        self.context = context
        self.configuration = configuration
        _ = ahttp_SSL_CTX_set_mode(context, ahttp_SSL_MODE_defaults())
        _ = ahttp_SSL_CTX_set_options(context, ahttp_SSL_OP_defaults())
        // One recv per read instead of two per record (header, then body). Bytes read ahead stay inside
        // OpenSSL, where the socket's readiness cannot see them: `HTTP1Connection` always calls `SSL_read`
        // before it waits, and `hasUnexpectedInput` asks OpenSSL, not the socket, whether an idle
        // connection received something.
        _ = ahttp_SSL_CTX_set_read_ahead(context, 1)
        let minimum: Int32
        switch configuration.minimumVersion {
        case .tls1_0: minimum = ahttp_TLS1_VERSION()
        case .tls1_1: minimum = ahttp_TLS1_1_VERSION()
        case .tls1_2: minimum = ahttp_TLS1_2_VERSION()
        case .tls1_3: minimum = ahttp_TLS1_3_VERSION()
        }
        _ = ahttp_SSL_CTX_set_min_proto_version(context, minimum)

        if configuration.certificateVerification {
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            switch configuration.trustRoots {
            case .system:
                SSL_CTX_set_default_verify_paths(context)
            case .file(let path):
                try Self.loadTrust(context, path)
            case .systemAndFile(let path):
                SSL_CTX_set_default_verify_paths(context)
                try Self.loadTrust(context, path)
            }
            if let directory = configuration.additionalTrustDirectory { try Self.loadTrustDirectory(context, directory) }
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
        if let client = configuration.clientCertificate {
            guard SSL_CTX_use_certificate_chain_file(context, client.certificateFile) == 1 else {
                throw HTTPClientError(.tlsHandshakeFailed, "cannot load client certificate '\(client.certificateFile)'",
                                      tlsReason: takeOpenSSLErrors())
            }
            // No passphrase: without a callback OpenSSL would prompt for one on the controlling terminal, holding the
            // context's creation (and every https request waiting for it) until someone typed.
            SSL_CTX_set_default_passwd_cb(context) { _, _, _, _ in 0 }
            guard SSL_CTX_use_PrivateKey_file(context, client.privateKeyFile, SSL_FILETYPE_PEM) == 1,
                  SSL_CTX_check_private_key(context) == 1 else {
                let reasons = takeOpenSSLErrors()
                let encrypted = reasons?.contains("bad password read") == true
                    || reasons?.contains("bad decrypt") == true || reasons?.contains("password") == true
                let hint = encrypted ? ": it is encrypted, and no passphrase can be given; decrypt it first (openssl pkey -in KEY -out PLAIN)" : ""
                throw HTTPClientError(.tlsHandshakeFailed,
                                      "cannot load private key '\(client.privateKeyFile)' for the client certificate\(hint)",
                                      tlsReason: reasons)
            }
        }
        if configuration.sessionResumption {
            _ = ahttp_SSL_CTX_set_session_cache_mode(context, ahttp_SSL_SESS_CACHE_client_external())
            SSL_CTX_sess_set_new_cb(context) { ssl, session in
                // TLS 1.3 delivers tickets after the handshake; this callback sees every one.
                guard let ssl, let session, let stream = TLSStream.owner(of: ssl) else { return 0 }
                stream.context.store(session, for: stream.cacheKey)
                return 1 // we keep the reference
            }
        }
    }

    deinit {
        sessions.withLock { sessions in
            for session in sessions.removeAll() { SSL_SESSION_free(session.pointer) }
        }
        SSL_CTX_free(context)
    }

    /// OpenSSL reads the directory only when a chain needs it, and takes a missing one without a word: checked here.
    private static func loadTrustDirectory(_ context: OpaquePointer, _ path: String) throws(HTTPClientError) {
        var info = stat()
        let found = stat(path, &info) == 0
        let code = errno
        guard found, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw HTTPClientError(.tlsHandshakeFailed, "cannot use CA directory '\(path)': "
                + (found ? "it is not a directory" : code == ENOENT ? "it does not exist" : errnoText(code)))
        }
        guard SSL_CTX_load_verify_locations(context, nil, path) == 1 else {
            throw HTTPClientError(.tlsHandshakeFailed, "cannot use CA directory '\(path)'", tlsReason: takeOpenSSLErrors())
        }
    }

    private static func loadTrust(_ context: OpaquePointer, _ path: String) throws(HTTPClientError) {
        guard SSL_CTX_load_verify_locations(context, path, nil) == 1 else {
            throw HTTPClientError(.tlsHandshakeFailed, "cannot load CA file '\(path)'", tlsReason: takeOpenSSLErrors())
        }
    }

    /// Takes over the reference to `session` (the new-session callback's) and keeps it for `key`.
    func store(_ session: OpaquePointer, for key: String) {
        let reference = SessionReference(pointer: session)
        let created = Int64(SSL_SESSION_get_time(session))
        let lifetime = Int64(SSL_SESSION_get_timeout(session))
        let now = Int64(time(nil))
        sessions.withLock { sessions in
            for released in sessions.store(reference, for: key, created: created, lifetime: lifetime, now: now) {
                SSL_SESSION_free(released.pointer)
            }
        }
    }

    /// A new reference to the cached session for `key`, or nil.
    func cachedSession(for key: String) -> OpaquePointer? {
        let now = Int64(time(nil))
        return sessions.withLock { sessions -> OpaquePointer? in
            let (session, released) = sessions.session(for: key, now: now)
            for old in released { SSL_SESSION_free(old.pointer) }
            guard let session else { return nil }
            SSL_SESSION_up_ref(session.pointer)
            return session.pointer
        }
    }

    /// How many sessions are cached (for tests).
    var cachedSessionCount: Int { sessions.withLock { $0.count } }
}

/// TLS over a non-blocking ``Socket``: OpenSSL reads and writes the descriptor itself (through a BIO that
/// sends with `MSG_NOSIGNAL`), and `WANT_READ` / `WANT_WRITE` suspend on the event loop.
///
/// Ownership: like its socket, a TLS stream belongs to one connection used by one task at a time.
final class TLSStream: @unchecked Sendable {
    // @unchecked: `ssl` is used only by the task that leases the owning connection; `freed` is guarded by `lock`.
    let socket: Socket
    let context: TLSContext
    let sessionKey: String
    /// The session cache's key: ``sessionKey`` and the route (a proxy, a `connectTo` endpoint, a Unix socket), so
    /// that a session got directly is never offered through a proxy, or the other way round (a ticket would let the
    /// server link the two visits).
    let cacheKey: String
    /// Who the stream talks to, in the messages of errors after the handshake: ``sessionKey``, or the proxy's URL for
    /// the TLS to an HTTPS proxy (whose handshake errors the connector prefixes itself).
    private let peer: String
    private let ssl: OpaquePointer
    private let lock = Locked(false)
    /// The TLS connection to an HTTPS proxy this one runs inside (a `CONNECT` tunnel), or nil when this one reads
    /// and writes the socket itself. Held so that it outlives this stream's `SSL`, whose BIO points at it.
    let outer: TLSStream?

    private static let exDataIndex: Int32 = ahttp_SSL_get_ex_new_index()
    private static let bioMethod = BIOMethod(layered: false)
    private static let layeredBIOMethod = BIOMethod(layered: true)

    /// The stream whose `SSL` this is, for OpenSSL callbacks.
    static func owner(of ssl: OpaquePointer) -> TLSStream? {
        guard let pointer = SSL_get_ex_data(ssl, exDataIndex) else { return nil }
        return Unmanaged<TLSStream>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// TLS on `socket`, or, with `outer`, inside that TLS connection (to an HTTPS proxy, through its tunnel), whose
    /// socket must be `socket`.
    /// `peer` names the other end in the errors of reads and writes (default `host:port`).
    init(socket: Socket, context: TLSContext, host: String, port: Int, hostIsIPAddress: Bool, route: String = "",
         peer: String? = nil, over outer: TLSStream? = nil) throws(HTTPClientError) {
        guard let ssl = SSL_new(context.context) else {
            throw HTTPClientError(.tlsHandshakeFailed, "SSL_new failed", tlsReason: takeOpenSSLErrors())
        }
        self.ssl = ssl
        self.socket = socket
        self.context = context
        self.outer = outer
        self.sessionKey = "\(host):\(port)"
        self.cacheKey = sessionKey + route
        self.peer = peer ?? sessionKey
        let bio: OpaquePointer?
        if let outer {
            bio = Self.layeredBIOMethod.pointer.flatMap { ahttp_bio_new_layered($0, outer.ssl) }
            _ = ahttp_SSL_set_inner_max_send_fragment(ssl)
        } else {
            bio = Self.bioMethod.pointer.flatMap { ahttp_bio_new_socket($0, socket.fd) }
        }
        guard let bio else {
            throw HTTPClientError(.tlsHandshakeFailed, "cannot create the socket BIO", tlsReason: takeOpenSSLErrors())
        }
        SSL_set_bio(ssl, bio, bio)
        // Unretained: the stream frees `ssl` in deinit, so it always outlives the pointer.
        SSL_set_ex_data(ssl, Self.exDataIndex, Unmanaged.passUnretained(self).toOpaque())
        if context.configuration.certificateVerification {
            let parameters = SSL_get0_param(ssl)
            if hostIsIPAddress {
                X509_VERIFY_PARAM_set1_ip_asc(parameters, host)
            } else {
                X509_VERIFY_PARAM_set_hostflags(parameters, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
                X509_VERIFY_PARAM_set1_host(parameters, Self.certificateName(host), 0)
            }
        }
        // RFC 6066 §3: SNI carries host names only, never IP literals, and "without a trailing dot".
        if !hostIsIPAddress { _ = ahttp_SSL_set_tlsext_host_name(ssl, Self.certificateName(host)) }
        let alpn: [UInt8] = [8] + Array("http/1.1".utf8)
        _ = SSL_set_alpn_protos(ssl, alpn, UInt32(alpn.count))
        if context.configuration.sessionResumption, let session = context.cachedSession(for: cacheKey) {
            SSL_set_session(ssl, session)
            SSL_SESSION_free(session)
        }
    }

    deinit {
        SSL_free(ssl)
    }

    /// The name a certificate and SNI carry for `host`: without one trailing dot. `example.com.` (fully qualified)
    /// names the same host, but OpenSSL's name check does not ignore the dot, so it failed every certificate; curl
    /// strips it the same way.
    static func certificateName(_ host: String) -> String {
        host.count > 1 && host.hasSuffix(".") ? String(host.dropLast()) : host
    }

    /// Whether the last handshake resumed a cached session.
    var sessionWasReused: Bool { ahttp_SSL_session_reused(ssl) == 1 }

    func handshake(deadline: MonotonicTime?) async throws(HTTPClientError) {
        while true {
            ERR_clear_error()
            let result = SSL_connect(ssl)
            if result == 1 { return }
            let code = SSL_get_error(ssl, result)
            switch code {
            case SSL_ERROR_WANT_READ:
                try await socket.waitUntil(.readable, deadline: deadline, phase: .tlsHandshake)
            case SSL_ERROR_WANT_WRITE:
                try await socket.waitUntil(.writable, deadline: deadline, phase: .tlsHandshake)
            default:
                throw handshakeError(code: code)
            }
        }
    }

    private func handshakeError(code: Int32) -> HTTPClientError {
        let reasons = takeOpenSSLErrors()
        let verify = SSL_get_verify_result(ssl)
        if context.configuration.certificateVerification && verify != X509_V_OK {
            let why = String(cString: X509_verify_cert_error_string(verify))
            return HTTPClientError(.certificateInvalid, "certificate of \(sessionKey) rejected: \(why)",
                                   tlsReason: reasons ?? "verify result \(verify)")
        }
        if code == SSL_ERROR_SYSCALL || code == SSL_ERROR_ZERO_RETURN {
            return HTTPClientError(.tlsHandshakeFailed, "connection to \(sessionKey) closed during the TLS handshake",
                                   errno: errno == 0 ? nil : errno, tlsReason: reasons)
        }
        return HTTPClientError(.tlsHandshakeFailed, "TLS handshake with \(sessionKey) failed", tlsReason: reasons ?? "SSL error \(code)")
    }

    /// One `SSL_read` attempt.
    func tryRead(into buffer: UnsafeMutableRawBufferPointer) -> TLSOutcome {
        ERR_clear_error()
        let n = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if n > 0 { return .done(Int(n)) }
        return outcome(of: n)
    }

    /// One `SSL_write` attempt; with partial writes enabled it may write less than all.
    func tryWrite(_ buffer: UnsafeRawBufferPointer) -> TLSOutcome {
        guard buffer.count > 0 else { return .done(0) }
        ERR_clear_error()
        let n = SSL_write(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if n > 0 { return .done(Int(n)) }
        let result = outcome(of: n)
        let closed: Bool
        switch result {
        case .uncleanEnd: closed = true
        case .failed: closed = errno == EPIPE || errno == ECONNRESET
        default: closed = false
        }
        // The peer has closed, and may have said why first: a TLS 1.3 server refusing the client certificate sends
        // its alert after the handshake and closes, so the request's write can meet the close before any read meets
        // the alert. A peek processes a waiting alert record without taking application data.
        return closed ? refusalAlertWaiting() ?? result : result
    }

    /// The client-certificate refusal an alert record waiting in the socket carries, if one does.
    private func refusalAlertWaiting() -> TLSOutcome? {
        ERR_clear_error()
        var byte: UInt8 = 0
        let n = SSL_peek(ssl, &byte, 1)
        guard n <= 0, SSL_get_error(ssl, n) == SSL_ERROR_SSL, let reasons = takeOpenSSLErrors(),
              let refusal = certificateRefusal(reasons) else { return nil }
        return .failed(refusal)
    }

    /// TLS 1.3 (RFC 8446 §4.4.2.4): a server that wanted a client certificate and got none, or refused the one sent,
    /// says so with an alert after the client's Finished, so it reaches the first read or write, not the handshake.
    private func certificateRefusal(_ reasons: String) -> HTTPClientError? {
        guard reasons.contains("alert certificate required") || reasons.contains("alert bad certificate")
            || reasons.contains("alert unknown ca") || reasons.contains("alert certificate unknown") else { return nil }
        return HTTPClientError(.tlsHandshakeFailed,
            "\(peer) refused the TLS client certificate: it requires one, and none was configured for it or it does"
                + " not accept the one sent", tlsReason: reasons)
    }

    private func outcome(of result: Int32) -> TLSOutcome {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        // The peer's close_notify: a clean end of the stream.
        case SSL_ERROR_ZERO_RETURN: return .done(0)
        case SSL_ERROR_SYSCALL:
            // End of stream without close_notify (OpenSSL 1.1: SYSCALL with errno 0), or a reset. Many servers
            // close this way, so it is not an error here: the HTTP layer decides. A body whose framing proves it
            // complete ends; a body delimited by the close is a truncation (RFC 9112 §9.8; docs/framing.md).
            let code = errno
            if code == 0 || code == ECONNRESET { return .uncleanEnd }
            return .failed(HTTPClientError(.ioFailure, "TLS I/O with \(peer) failed: \(errnoText(code))", errno: code))
        default:
            // OpenSSL 3 reports an EOF without close_notify as SSL_ERROR_SSL with
            // SSL_R_UNEXPECTED_EOF_WHILE_READING ("unexpected eof while reading").
            let reasons = takeOpenSSLErrors()
            if let reasons, reasons.contains("unexpected eof") { return .uncleanEnd }
            if let reasons, let refusal = certificateRefusal(reasons) { return .failed(refusal) }
            return .failed(HTTPClientError(.ioFailure, "TLS error on \(peer)", tlsReason: reasons))
        }
    }

    /// Whether OpenSSL's last `recv` on the socket left it empty: it returned less than asked, or `EAGAIN`.
    /// Inside a tunnel: whether the outer connection's last `recv` left the socket empty and it holds no bytes.
    var socketDrained: Bool {
        guard let outer else { return ahttp_SSL_socket_drained(ssl) == 1 }
        return outer.socketDrained && SSL_has_pending(outer.ssl) == 0
    }

    /// Whether an idle connection's OpenSSL buffer holds anything that makes it unfit for reuse: application
    /// data nobody asked for, or the server's close_notify. With read-ahead on, such bytes may already have
    /// left the socket (so `recv(MSG_PEEK)` sees nothing). A post-handshake message (a TLS 1.3 session
    /// ticket or key update) is processed by the peek and does not count.
    var hasUnexpectedInput: Bool {
        // Inside a tunnel, bytes the outer connection holds are this one's records.
        guard SSL_has_pending(ssl) == 1 || outer.map({ SSL_has_pending($0.ssl) == 1 }) == true else { return false }
        ERR_clear_error()
        var byte: UInt8 = 0
        let n = SSL_peek(ssl, &byte, 1)
        if n > 0 { return true }
        let code = SSL_get_error(ssl, n)
        ERR_clear_error()
        return code != SSL_ERROR_WANT_READ && code != SSL_ERROR_WANT_WRITE
    }

    /// What waits on this connection right after a handshake or an exchange that should have left nothing: records
    /// of application data (or a close_notify) OpenSSL holds or can read now, else the socket's own answer, which
    /// also sees a bare close. A post-handshake message (a session ticket) is processed and does not count.
    func pendingInput() -> Socket.PendingInput {
        ERR_clear_error()
        var byte: UInt8 = 0
        let n = SSL_peek(ssl, &byte, 1)
        if n > 0 { return .bytes }
        let code = SSL_get_error(ssl, n)
        ERR_clear_error()
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return socketDrained ? .nothing : socket.pendingInput()
        default: return .closed
        }
    }

    /// Sends close_notify without waiting for the peer's (RFC 8446 §6.1 allows a one-sided close).
    func shutdown() {
        let first = lock.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first {
            _ = SSL_shutdown(ssl)
            // A close_notify that could not go out (a dead outer connection) leaves its reasons behind.
            ERR_clear_error()
        }
        outer?.shutdown()
    }
}

/// What one TLS read or write attempt did.
enum TLSOutcome {
    /// Bytes read or written; a read of 0 is the end of the stream after the peer's close_notify.
    case done(Int)
    /// The stream ended without close_notify: a TCP close (FIN) or a reset underneath TLS.
    case uncleanEnd
    case wantRead
    case wantWrite
    case failed(HTTPClientError)
}

/// The BIO method, created once per process.
private final class BIOMethod: @unchecked Sendable {
    // @unchecked: `pointer` is written once in init and never changed; OpenSSL method tables are read-only after setup.
    let pointer: OpaquePointer?
    init(layered: Bool) { pointer = layered ? ahttp_layered_bio_method_new() : ahttp_bio_method_new() }
}

/// Empties OpenSSL's thread-local error queue into one line.
func takeOpenSSLErrors() -> String? {
    var reasons: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        reasons.append(cString(buffer))
    }
    return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
