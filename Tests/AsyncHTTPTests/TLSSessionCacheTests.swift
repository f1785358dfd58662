import COpenSSL
import XCTest

@testable import AsyncHTTP

/// The TLS session cache's bounds (docs/architecture.md, "TLS"): the value type with an injected clock, and
/// one real handshake showing that resumption still works and that an evicted session is not offered.
final class TLSSessionCacheTests: XCTestCase {
    /// A session that counts how often it is given back (the real cache frees what it is given back).
    final class FakeSession {
        let name: String
        var releases = 0
        init(_ name: String) { self.name = name }
    }

    func release(_ sessions: [FakeSession]) {
        for session in sessions { session.releases += 1 }
    }

    func testTotalBoundEvictsTheLeastRecentlyUsedAndReleasesEachSessionOnce() {
        XCTAssertEqual(TLSSessionCache<FakeSession>.defaultTotalLimit, 64)
        XCTAssertEqual(TLSSessionCache<FakeSession>.defaultMaxAge, 86_400)
        var cache = TLSSessionCache<FakeSession>(totalLimit: 64)
        var all: [FakeSession] = []
        for index in 0..<1_000 {
            let session = FakeSession("host\(index % 300):\(443 + index % 7)")
            all.append(session)
            release(cache.store(session, for: session.name, created: 1_000, lifetime: 7_200, now: 1_000 + Int64(index)))
            XCTAssertLessThanOrEqual(cache.count, 64)
            // The first host is used on every new connection: it stays while others come and go.
            let first = cache.session(for: all[0].name, now: 1_000 + Int64(index))
            XCTAssertNotNil(first.session)
            release(first.released)
        }
        XCTAssertEqual(cache.count, 64)
        release(cache.removeAll())
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(all.filter { $0.releases != 1 }.map(\.name), [], "every session released exactly once")
    }

    func testOneSessionPerHostAndPortTheNewestReplacingTheOlder() {
        var cache = TLSSessionCache<FakeSession>()
        let older = FakeSession("a"), newer = FakeSession("b")
        release(cache.store(older, for: "h:443", created: 0, lifetime: 100, now: 0))
        release(cache.store(newer, for: "h:443", created: 1, lifetime: 100, now: 1))
        XCTAssertEqual(cache.count, 1)
        XCTAssertEqual(older.releases, 1)
        XCTAssertTrue(cache.session(for: "h:443", now: 2).session === newer)
        XCTAssertNil(cache.session(for: "h:8443", now: 2).session, "another port is another peer")
        release(cache.removeAll())
        XCTAssertEqual(newer.releases, 1)
    }

    func testSessionsExpireWithTheirOwnLifetimeAndTheMaxAge() {
        var cache = TLSSessionCache<FakeSession>(totalLimit: 10, maxAge: 1_000)
        let short = FakeSession("short"), long = FakeSession("long"), dead = FakeSession("dead")
        release(cache.store(short, for: "s:443", created: 100, lifetime: 300, now: 100))
        release(cache.store(long, for: "l:443", created: 100, lifetime: 7 * 86_400, now: 100))
        release(cache.store(dead, for: "d:443", created: 100, lifetime: 0, now: 100))
        XCTAssertEqual(dead.releases, 1, "a ticket with lifetime 0 is never kept (RFC 8446 §4.6.1)")
        XCTAssertEqual(cache.count, 2)

        XCTAssertNotNil(cache.session(for: "s:443", now: 399).session)
        let expired = cache.session(for: "s:443", now: 400)
        XCTAssertNil(expired.session, "the session's own lifetime")
        release(expired.released)
        XCTAssertEqual(short.releases, 1)

        XCTAssertNotNil(cache.session(for: "l:443", now: 1_099).session)
        release(cache.removeExpired(now: 1_100))
        XCTAssertEqual(long.releases, 1, "capped at maxAge though the ticket said a week")
        XCTAssertEqual(cache.count, 0)
    }

    func testExpiredSessionsGoBeforeLiveOnesWhenFull() {
        var cache = TLSSessionCache<FakeSession>(totalLimit: 2)
        let stale = FakeSession("stale"), live = FakeSession("live"), new = FakeSession("new")
        release(cache.store(live, for: "live", created: 0, lifetime: 1_000, now: 0))
        release(cache.store(stale, for: "stale", created: 0, lifetime: 10, now: 0))
        _ = cache.session(for: "stale", now: 5)  // most recently used, but about to expire
        release(cache.store(new, for: "new", created: 20, lifetime: 1_000, now: 20))
        XCTAssertEqual(stale.releases, 1)
        XCTAssertEqual(live.releases, 0)
        XCTAssertEqual(cache.count, 2)
        release(cache.removeAll())
    }

    // MARK: A real handshake

    /// One https request on a fresh connection through `context`; whether the handshake resumed.
    func fetch(port: Int, context: TLSContext) async throws -> Bool {
        let address = try XCTUnwrap(SocketAddress(numericHost: "127.0.0.1", port: port))
        let deadline = MonotonicTime.now + .seconds(10)
        let socket = try await Socket.connect(to: address, deadline: deadline, notifier: IOBackend.notifier)
        defer { socket.close() }
        let stream = try TLSStream(socket: socket, context: context, host: "localhost", port: port, hostIsIPAddress: false)
        try await stream.handshake(deadline: deadline)
        let resumed = stream.sessionWasReused
        var request = Array("GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8)[...]
        while !request.isEmpty {
            switch request.withUnsafeBytes({ stream.tryWrite($0) }) {
            case .done(let n): request = request.dropFirst(n)
            case .wantRead: try await socket.waitUntil(.readable, deadline: deadline, phase: .tlsHandshake)
            case .wantWrite: try await socket.waitUntil(.writable, deadline: deadline, phase: .tlsHandshake)
            case .uncleanEnd: XCTFail("closed while writing"); return resumed
            case .failed(let error): throw error
            }
        }
        // Read to the end: TLS 1.3 tickets arrive after the handshake, with the response.
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        reading: while true {
            switch buffer.withUnsafeMutableBytes({ stream.tryRead(into: $0) }) {
            case .done(0), .uncleanEnd: break reading
            case .done: continue
            case .wantRead: try await socket.waitUntil(.readable, deadline: deadline, phase: .tlsHandshake)
            case .wantWrite: try await socket.waitUntil(.writable, deadline: deadline, phase: .tlsHandshake)
            case .failed(let error): throw error
            }
        }
        stream.shutdown()
        return resumed
    }

    func testResumptionStillWorksAndAnEvictedSessionIsNotOffered() async throws {
        let server = try await NIOTestServer(tls: .trusted)
        var tls = TLSConfiguration()
        tls.trustRoots = .file(TestTLS.shared.caFile)
        let context = try TLSContext(configuration: tls, sessionCache: TLSSessionCache(totalLimit: 2))

        let first = try await fetch(port: server.port, context: context)
        XCTAssertFalse(first)
        XCTAssertEqual(context.cachedSessionCount, 1)
        let second = try await fetch(port: server.port, context: context)
        XCTAssertTrue(second, "a reconnect resumes the cached session")

        // Two other peers fill the cache (sessions that were never used for anything; the cache owns them).
        for port in [1, 2] {
            let session = try XCTUnwrap(SSL_SESSION_new())
            _ = SSL_SESSION_set_time(session, Int(time(nil)))
            _ = SSL_SESSION_set_timeout(session, 3_600)
            context.store(session, for: "other.test:\(port)")
        }
        XCTAssertEqual(context.cachedSessionCount, 2)
        let afterEviction = try await fetch(port: server.port, context: context)
        XCTAssertFalse(afterEviction, "the evicted session is not offered: a full handshake")
        let again = try await fetch(port: server.port, context: context)
        XCTAssertTrue(again, "and the new session is cached again")
        XCTAssertEqual(context.cachedSessionCount, 2)
        try await server.shutdown()
    }
}
