#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import XCTest

@testable import AsyncHTTP

/// The Happy Eyeballs race (RFC 8305) and the socket connect under it, driven through the race's injected attempt:
/// a cancelled race stops (§5), and a race every attempt of which failed says what happened to each address.
/// No network: attempts are closures, and the one real connect goes to a loopback listener.
final class ConnectionRaceTests: XCTestCase {
    private func addresses(_ count: Int) -> [SocketAddress] {
        (1...count).map { SocketAddress(numericHost: "127.0.0.\($0)", port: 9)! }
    }

    func testCancellingTheRaceStartsNoFurtherAttempt() async throws {
        let attempts = Locked(0)
        let (started, report) = AsyncStream.makeStream(of: Void.self)
        let addresses = addresses(4)
        let race = Task { () async throws -> Int in
            try await HappyEyeballs.race(
                addresses, attemptDelay: .seconds(30), what: "four.test",
                attempt: { _ throws(HTTPClientError) -> Int in
                    // As Socket.connect did: the attempt dials whether or not its task is cancelled, then waits for
                    // the handshake until the task is cancelled.
                    attempts.withLock { $0 += 1 }
                    report.yield()
                    do { try await Task.sleep(for: .seconds(30)) } catch { throw .cancelled }
                    return 1
                },
                discard: { _ in })
        }
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        race.cancel()
        let clock = ContinuousClock()
        let began = clock.now
        await assertThrowsHTTPError(.cancelled) { _ = try await race.value }
        XCTAssertLessThan(clock.now - began, .seconds(10), "not after an attempt's own 30 s")
        XCTAssertEqual(attempts.withLock { $0 }, 1, "no address after the cancelled one was dialled (RFC 8305 §5)")
    }

    func testARaceCancelledAsItsFirstAttemptConnectsReturnsThatConnectionAndDialsNoOther() async throws {
        // The connection made is handed back (the pool may keep it, as async-http-client's does for a cancelled
        // request), not dropped; nothing else is dialled or discarded. Guards what the fix above must not change.
        let attempts = Locked(0)
        let discarded = Locked(0)
        let (started, report) = AsyncStream.makeStream(of: Void.self)
        let addresses = addresses(3)
        let race = Task { () async throws -> Int in
            try await HappyEyeballs.race(
                addresses, attemptDelay: .seconds(30), what: "three.test",
                attempt: { _ throws(HTTPClientError) -> Int in
                    let number = attempts.withLock { $0 += 1; return $0 }
                    report.yield()
                    // A handshake already under way completes although the task is cancelled.
                    try? await Task.sleep(for: .seconds(30))
                    if number == 1 { return 1 }
                    throw .cancelled
                },
                discard: { _ in discarded.withLock { $0 += 1 } })
        }
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        race.cancel()
        let connection = try await race.value
        XCTAssertEqual(connection, 1)
        XCTAssertEqual(attempts.withLock { $0 }, 1)
        XCTAssertEqual(discarded.withLock { $0 }, 0)
    }

    func testACancelledTaskDialsNothing() async throws {
        let listener = try LoopbackListener()
        defer { listener.close() }
        let address = SocketAddress(numericHost: "127.0.0.1", port: listener.port)!
        let task = Task { () async throws -> Socket in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await Socket.connect(to: address, deadline: .now + .seconds(5), notifier: IOBackend.notifier)
        }
        let outcome = await task.result
        if case .success(let socket) = outcome { socket.close() }
        XCTAssertEqual((outcome.failureValue as? HTTPClientError)?.code, .cancelled, "\(outcome)")
        XCTAssertFalse(listener.hasPendingConnection, "no connection was opened for a cancelled task")
    }

    func testEveryAddressFailingNamesEachFailureEvenWhenOneTimedOut() async throws {
        // [::1] is unreachable at once; 127.0.0.1 then runs out of the connect deadline. The timeout stays the
        // error's code (a connect timeout, curl's exit 28), but the message names the unreachable address too.
        let addresses = [SocketAddress(numericHost: "::1", port: 80)!, SocketAddress(numericHost: "127.0.0.1", port: 80)!]
        let error = await assertThrowsHTTPError(.timeout) {
            try await HappyEyeballs.race(
                addresses, attemptDelay: .seconds(30), what: "dual.test:80",
                attempt: { address throws(HTTPClientError) -> Int in
                    if address.family == AF_INET6 {
                        throw HTTPClientError(.connectFailed, "connect to \(address) failed: Network is unreachable",
                                              errno: ENETUNREACH)
                    }
                    throw .timeout(.connect, "no connection to \(address) in time")
                },
                discard: { _ in })
        }
        XCTAssertEqual(error?.timeoutPhase, .connect)
        let message = error?.message ?? ""
        XCTAssertTrue(message.contains("dual.test:80"), message)
        XCTAssertTrue(message.contains("[::1]:80 failed: Network is unreachable"), message)
        XCTAssertTrue(message.contains("127.0.0.1:80 in time"), message)
    }

    func testEveryAddressFailingWithoutATimeoutListsEachFailure() async throws {
        let addresses = [SocketAddress(numericHost: "::1", port: 80)!, SocketAddress(numericHost: "127.0.0.1", port: 80)!]
        let error = await assertThrowsHTTPError(.connectFailed) {
            try await HappyEyeballs.race(
                addresses, attemptDelay: .seconds(30), what: "dual.test:80",
                attempt: { address throws(HTTPClientError) -> Int in
                    throw HTTPClientError(.connectFailed, "connect to \(address) failed: Connection refused", errno: ECONNREFUSED)
                },
                discard: { _ in })
        }
        let message = error?.message ?? ""
        XCTAssertTrue(message.contains("[::1]:80 failed") && message.contains("127.0.0.1:80 failed"), message)
    }
}

extension Result {
    fileprivate var failureValue: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}

/// A listener on 127.0.0.1 that accepts nothing, and says whether a connection waits in its queue.
final class LoopbackListener: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard listener >= 0 else { throw PeerError("LoopbackListener: socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 8) == 0 else {
            Glibc.close(listener)
            throw PeerError("LoopbackListener: cannot listen: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        descriptor = listener
    }

    /// Whether a connection is waiting to be accepted (it is accepted and closed to find out).
    var hasPendingConnection: Bool {
        let accepted = accept(descriptor, nil, nil)
        guard accepted >= 0 else { return false }
        Glibc.close(accepted)
        return true
    }

    func close() { Glibc.close(descriptor) }
}
