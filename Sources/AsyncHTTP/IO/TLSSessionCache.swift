/// The bookkeeping of ``TLSContext``'s session cache, as a value with the clock passed in, so that its bounds
/// are tested without OpenSSL or waiting. `Session` is an owned reference: every session handed to
/// ``store(_:for:created:lifetime:now:)`` comes back exactly once, as evicted, replaced, expired or cleared,
/// for the caller to free.
///
/// Bounds (docs/architecture.md, "TLS"):
/// - one session per host and port: the newest ticket replaces the older one (a TLS 1.3 server sends two per
///   handshake; the newer lives at least as long), as curl keeps one per peer;
/// - ``totalLimit`` sessions in all, the least recently used evicted first;
/// - a session expires at the end of its own lifetime (`SSL_SESSION_get_time` + `get_timeout`, the server's
///   ticket lifetime hint for TLS 1.3), and after ``maxAge`` at most.
struct TLSSessionCache<Session> {
    /// 64: Go's `tls.NewLRUClientSessionCache` default capacity. A session costs a few KiB (the ticket and the
    /// peer's certificate chain), so this keeps the cache under a megabyte however many hosts a client visits.
    static var defaultTotalLimit: Int { 64 }
    /// 24 hours: `ssl_session_timeout 1d` of Mozilla's server configuration guide. RFC 8446 §4.6.1 allows a
    /// ticket up to 7 days; resuming reuses the first handshake's secrets, so a shorter age limits how long
    /// a stolen ticket or a TLS 1.2 master secret is good for.
    static var defaultMaxAge: Int64 { 24 * 60 * 60 }

    let totalLimit: Int
    let maxAge: Int64
    private var entries: [String: Entry] = [:]
    private var uses: UInt64 = 0

    private struct Entry {
        var session: Session
        /// Seconds since the epoch after which the session is not offered.
        var expires: Int64
        var lastUsed: UInt64
    }

    init(totalLimit: Int = defaultTotalLimit, maxAge: Int64 = defaultMaxAge) {
        precondition(totalLimit > 0 && maxAge > 0)
        self.totalLimit = totalLimit
        self.maxAge = maxAge
    }

    var count: Int { entries.count }

    /// Keeps `session` for `key`; returns the sessions given up (the one it replaces, one evicted, or `session`
    /// itself when it is already expired).
    mutating func store(_ session: Session, for key: String, created: Int64, lifetime: Int64, now: Int64) -> [Session] {
        let expires = created + min(max(lifetime, 0), maxAge)
        guard expires > now else { return [session] }
        uses &+= 1
        var released: [Session] = []
        if let old = entries.updateValue(Entry(session: session, expires: expires, lastUsed: uses), forKey: key) {
            released.append(old.session)
        }
        if entries.count > totalLimit {
            released += removeExpired(now: now)
        }
        while entries.count > totalLimit, let oldest = entries.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
            entries[oldest.key] = nil
            released.append(oldest.value.session)
        }
        return released
    }

    /// The session for `key` if it has not expired (still owned by the cache), and the sessions given up: an
    /// expired one for `key`.
    mutating func session(for key: String, now: Int64) -> (session: Session?, released: [Session]) {
        guard let entry = entries[key] else { return (nil, []) }
        guard entry.expires > now else {
            entries[key] = nil
            return (nil, [entry.session])
        }
        uses &+= 1
        entries[key]?.lastUsed = uses
        return (entry.session, [])
    }

    /// Forgets every expired session, returning them.
    mutating func removeExpired(now: Int64) -> [Session] {
        var released: [Session] = []
        for (key, entry) in entries where entry.expires <= now {
            entries[key] = nil
            released.append(entry.session)
        }
        return released
    }

    /// Forgets every session, returning them.
    mutating func removeAll() -> [Session] {
        defer { entries.removeAll() }
        return entries.values.map(\.session)
    }
}
