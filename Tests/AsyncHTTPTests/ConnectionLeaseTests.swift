import Logging
import XCTest

@testable import AsyncHTTP

/// The lease's rules with neither sockets nor a pool: it is settled exactly once, by whoever finishes first.
final class ConnectionLeaseTests: XCTestCase {
    final class FakeConnection: LeasedConnection, @unchecked Sendable {
        // @unchecked: the flags are behind `Locked`.
        let state = Locked((reusable: true, drainable: true, closes: 0))
        var isReusable: Bool { state.withLock { $0.reusable } }
        func drainResponse(limit: Int) async -> Bool { state.withLock { $0.drainable } }
        func close() { state.withLock { $0.closes += 1 } }
    }

    /// Records what the lease handed back, and lets a test await the first settlement without sleeping.
    final class RecordingHome: LeaseHome, @unchecked Sendable {
        // @unchecked: `events` and `waiter` are behind `Locked`.
        enum Event: Equatable { case takenBack(reusable: Bool), forgotten }
        private let state = Locked((events: [Event](), waiter: CheckedContinuation<Void, Never>?.none))

        var events: [Event] { state.withLock { $0.events } }

        func take(back connection: FakeConnection, reusable: Bool) async { record(.takenBack(reusable: reusable)) }
        func forget(_ connection: FakeConnection) async { record(.forgotten) }

        private func record(_ event: Event) {
            let waiter = state.withLock { state in
                state.events.append(event)
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        func firstEvent() async -> Event {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.events.isEmpty { state.waiter = continuation; return false }
                    return true
                }
                if ready { continuation.resume() }
            }
            return events[0]
        }
    }

    func testResponseEndedHandsTheConnectionBackOnceAndLaterDiscardDoesNothing() async {
        let connection = FakeConnection()
        let home = RecordingHome()
        let lease = ConnectionLease(connection, home: home)
        await lease.responseEnded()
        await lease.discard()
        await lease.responseEnded()
        XCTAssertEqual(home.events, [.takenBack(reusable: true)])
        XCTAssertEqual(connection.state.withLock { $0.closes }, 0)
        XCTAssertTrue(lease.isSettled)
    }

    func testDiscardClosesAndForgetsOnceAndALateEndDoesNothing() async {
        let connection = FakeConnection()
        let home = RecordingHome()
        let lease = ConnectionLease(connection, home: home)
        await lease.discard()
        await lease.responseEnded()
        await lease.discard()
        XCTAssertEqual(home.events, [.forgotten])
        XCTAssertEqual(connection.state.withLock { $0.closes }, 1)
    }

    func testANonReusableConnectionIsHandedBackAsNotReusable() async {
        let connection = FakeConnection()
        connection.state.withLock { $0.reusable = false }
        let home = RecordingHome()
        await ConnectionLease(connection, home: home).responseEnded()
        XCTAssertEqual(home.events, [.takenBack(reusable: false)])
    }

    func testConcurrentSettlersSettleExactlyOnce() async {
        for _ in 0..<50 {
            let connection = FakeConnection()
            let home = RecordingHome()
            let lease = ConnectionLease(connection, home: home)
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<8 {
                    group.addTask { if index.isMultiple(of: 2) { await lease.responseEnded() } else { await lease.discard() } }
                }
            }
            XCTAssertEqual(home.events.count, 1, "\(home.events)")
            let closes = connection.state.withLock { $0.closes }
            XCTAssertEqual(closes, home.events == [.forgotten] ? 1 : 0)
        }
    }

    func testADroppedBodyThatDrainsIsHandedBackForReuse() async {
        let home = RecordingHome()
        let lease = ConnectionLease(FakeConnection(), home: home)
        lease.settleDropped(drainLimit: 1024, logger: Logger(label: "test"))
        let event = await home.firstEvent()
        XCTAssertEqual(event, .takenBack(reusable: true))
    }

    func testADroppedBodyThatCannotDrainIsClosed() async {
        let connection = FakeConnection()
        connection.state.withLock { $0.drainable = false }
        let home = RecordingHome()
        let lease = ConnectionLease(connection, home: home)
        lease.settleDropped(drainLimit: 1024, logger: Logger(label: "test"))
        let event = await home.firstEvent()
        XCTAssertEqual(event, .forgotten)
        XCTAssertEqual(connection.state.withLock { $0.closes }, 1)
    }

    func testDroppingASettledLeaseDoesNothing() async {
        let home = RecordingHome()
        let lease = ConnectionLease(FakeConnection(), home: home)
        await lease.discard()
        lease.settleDropped(drainLimit: 1024, logger: Logger(label: "test"))
        // settleDropped returns before starting a task when the lease is settled; a second settle would show here.
        await lease.responseEnded()
        XCTAssertEqual(home.events, [.forgotten])
    }
}
