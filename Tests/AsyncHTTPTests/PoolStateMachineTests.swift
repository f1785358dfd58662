import XCTest
@testable import AsyncHTTP

/// The pool's decisions as action sequences, with made-up time and no sockets.
final class PoolStateMachineTests: XCTestCase {
    final class FakeConnection: CustomStringConvertible {
        let id: Int
        init(_ id: Int) { self.id = id }
        var description: String { "c\(id)" }
    }

    typealias Machine = PoolStateMachine<FakeConnection>
    let t0 = MonotonicTime.now

    func at(_ seconds: Int) -> MonotonicTime { t0 + .seconds(seconds) }

    func waiter(_ id: UInt64, fresh: Bool = false) -> Machine.Waiter { .init(id: id, fresh: fresh) }

    func expectConnect(_ result: (action: Machine.LeaseAction, close: [FakeConnection]), file: StaticString = #filePath, line: UInt = #line) {
        guard case .connect = result.action else { return XCTFail("expected connect, got \(result.action)", file: file, line: line) }
    }

    func testFirstLeaseConnectsAndReleasedConnectionIsReused() {
        var machine = Machine(limit: 2)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        let c1 = FakeConnection(1)
        let (handOff, close) = machine.released(c1, reusable: true, expires: at(60), now: at(1))
        guard case .none = handOff else { return XCTFail("\(handOff)") }
        XCTAssertNil(close)
        XCTAssertEqual(machine.idle.count, 1)
        guard case .reuse(let reused) = machine.leaseRequested(waiter(2), now: at(2)).action else { return XCTFail() }
        XCTAssertTrue(reused === c1)
        XCTAssertEqual(machine.leased, 1)
    }

    func testLimitQueuesWaitersFirstInFirstOut() {
        var machine = Machine(limit: 1)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        guard case .wait = machine.leaseRequested(waiter(2), now: at(0)).action else { return XCTFail() }
        guard case .wait = machine.leaseRequested(waiter(3), now: at(0)).action else { return XCTFail() }
        XCTAssertEqual(machine.waiters.map(\.id), [2, 3])
        let c1 = FakeConnection(1)
        guard case .reuse(let handed, let to) = machine.released(c1, reusable: true, expires: at(60), now: at(1)).handOff else { return XCTFail() }
        XCTAssertTrue(handed === c1)
        XCTAssertEqual(to, 2)
        XCTAssertEqual(machine.leased, 1, "a handed-over connection stays leased")
        guard case .reuse(_, 3) = machine.released(c1, reusable: true, expires: at(60), now: at(2)).handOff else { return XCTFail() }
    }

    func testClosedConnectionLetsTheNextWaiterConnect() {
        var machine = Machine(limit: 1)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        _ = machine.leaseRequested(waiter(2), now: at(0))
        let (handOff, close) = machine.released(FakeConnection(1), reusable: false, expires: at(60), now: at(1))
        XCTAssertEqual(close?.id, 1)
        guard case .connect(waiter: 2) = handOff else { return XCTFail("\(handOff)") }
        XCTAssertEqual(machine.leased, 1)
    }

    func testFailedConnectFreesTheSlotForAWaiter() {
        var machine = Machine(limit: 1)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        _ = machine.leaseRequested(waiter(2), now: at(0))
        guard case .connect(waiter: 2) = machine.closed() else { return XCTFail() }
        guard case .none = machine.closed() else { return XCTFail() }
        XCTAssertTrue(machine.isUnused)
    }

    func testCancelledWaiterLeavesTheQueue() {
        var machine = Machine(limit: 1)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        _ = machine.leaseRequested(waiter(2), now: at(0))
        _ = machine.leaseRequested(waiter(3), now: at(0))
        XCTAssertTrue(machine.waiterLeft(2))
        XCTAssertFalse(machine.waiterLeft(2), "leaving twice finds nothing")
        guard case .reuse(_, 3) = machine.released(FakeConnection(1), reusable: true, expires: at(60), now: at(1)).handOff else {
            return XCTFail("the cancelled waiter must be skipped")
        }
    }

    func testIdleConnectionExpiresAtCheckout() {
        var machine = Machine(limit: 2)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        let c1 = FakeConnection(1)
        _ = machine.released(c1, reusable: true, expires: at(60), now: at(1))
        let result = machine.leaseRequested(waiter(2), now: at(61))
        expectConnect(result)
        XCTAssertEqual(result.close.map(\.id), [1], "the expired connection is closed, not reused")
    }

    func testSweepClosesOnlyExpiredIdleConnections() {
        var machine = Machine(limit: 3)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        expectConnect(machine.leaseRequested(waiter(2), now: at(0)))
        _ = machine.released(FakeConnection(1), reusable: true, expires: at(10), now: at(1))
        _ = machine.released(FakeConnection(2), reusable: true, expires: at(30), now: at(1))
        XCTAssertEqual(machine.nextExpiry, at(10))
        XCTAssertEqual(machine.sweep(now: at(9)).count, 0)
        XCTAssertEqual(machine.sweep(now: at(10)).map(\.id), [1])
        XCTAssertEqual(machine.idle.count, 1)
        XCTAssertEqual(machine.nextExpiry, at(30))
        XCTAssertEqual(machine.sweep(now: at(31)).map(\.id), [2])
        XCTAssertTrue(machine.isUnused)
    }

    func testReleaseAlreadyPastItsExpiryClosesTheConnection() {
        var machine = Machine(limit: 1)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        let (_, close) = machine.released(FakeConnection(1), reusable: true, expires: at(5), now: at(5))
        XCTAssertEqual(close?.id, 1)
    }

    func testMostRecentlyParkedConnectionIsReusedFirst() {
        var machine = Machine(limit: 2)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        expectConnect(machine.leaseRequested(waiter(2), now: at(0)))
        _ = machine.released(FakeConnection(1), reusable: true, expires: at(60), now: at(1))
        _ = machine.released(FakeConnection(2), reusable: true, expires: at(60), now: at(2))
        guard case .reuse(let warm) = machine.leaseRequested(waiter(3), now: at(3)).action else { return XCTFail() }
        XCTAssertEqual(warm.id, 2)
    }

    func testFreshLeaseNeverGetsAnIdleConnection() {
        var machine = Machine(limit: 2)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        _ = machine.released(FakeConnection(1), reusable: true, expires: at(60), now: at(1))
        let result = machine.leaseRequested(waiter(2, fresh: true), now: at(2))
        expectConnect(result)
        XCTAssertTrue(result.close.isEmpty, "below the limit the idle connection may stay")
        XCTAssertEqual(machine.idle.count, 1)
    }

    func testFreshLeaseAtTheLimitEvictsTheOldestIdleConnection() {
        var machine = Machine(limit: 1)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        _ = machine.released(FakeConnection(1), reusable: true, expires: at(60), now: at(1))
        let result = machine.leaseRequested(waiter(2, fresh: true), now: at(2))
        expectConnect(result)
        XCTAssertEqual(result.close.map(\.id), [1])
        XCTAssertEqual(machine.leased, 1)
        XCTAssertTrue(machine.idle.isEmpty)
    }

    func testFreshWaiterIsNotHandedAReleasedConnection() {
        var machine = Machine(limit: 1)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        guard case .wait = machine.leaseRequested(waiter(2, fresh: true), now: at(0)).action else { return XCTFail() }
        let (handOff, close) = machine.released(FakeConnection(1), reusable: true, expires: at(60), now: at(1))
        guard case .connect(waiter: 2) = handOff else { return XCTFail("\(handOff)") }
        XCTAssertEqual(close?.id, 1)
        XCTAssertEqual(machine.leased, 1)
    }

    func testDrainReturnsIdleConnectionsAndWaiters() {
        var machine = Machine(limit: 1)
        expectConnect(machine.leaseRequested(waiter(1), now: at(0)))
        _ = machine.leaseRequested(waiter(2), now: at(0))
        let (close, waiters) = machine.drain()
        XCTAssertTrue(close.isEmpty)
        XCTAssertEqual(waiters, [2])
        XCTAssertTrue(machine.waiters.isEmpty)
    }
}

/// The stale-connection retry rule, case by case.
final class StaleConnectionRetryTests: XCTestCase {
    let closed = HTTPClientError.connectionClosed("closed", bytesReceived: 0)

    func attempt(reused: Bool = true, written: Int = 100, received: Int = 0, idempotent: Bool = true, replayable: Bool = true)
        -> StaleConnectionRetry.Attempt {
        .init(connectionWasReused: reused, requestBytesWritten: written, responseBytesReceived: received,
              isIdempotent: idempotent, bodyIsReplayable: replayable)
    }

    func testStaleKeepAliveConnectionIsRetriedOnceForGET() {
        XCTAssertTrue(StaleConnectionRetry.mayRetry(attempt(), after: closed))
        XCTAssertTrue(StaleConnectionRetry.mayRetry(attempt(), after: HTTPClientError(.ioFailure, "reset", errno: 104)))
    }

    func testPOSTWhoseBytesWentOutIsNeverRetried() {
        XCTAssertFalse(StaleConnectionRetry.mayRetry(attempt(written: 10, idempotent: false), after: closed))
    }

    func testPOSTWithNothingWrittenIsRetried() {
        XCTAssertTrue(StaleConnectionRetry.mayRetry(attempt(written: 0, idempotent: false), after: closed))
    }

    func testFreshConnectionFailureIsNotRetried() {
        XCTAssertFalse(StaleConnectionRetry.mayRetry(attempt(reused: false), after: closed))
    }

    func testFailureAfterResponseBytesIsNotRetried() {
        XCTAssertFalse(StaleConnectionRetry.mayRetry(attempt(received: 1), after: closed))
    }

    func testOneShotBodyIsNotRetried() {
        XCTAssertFalse(StaleConnectionRetry.mayRetry(attempt(replayable: false), after: closed))
    }

    func testRequestTimeoutOnAReusedConnectionIsResentForAnIdempotentReplayableRequest() {
        XCTAssertTrue(StaleConnectionRetry.mayResend(after408: attempt(received: 80)))
        XCTAssertFalse(StaleConnectionRetry.mayResend(after408: attempt(reused: false, received: 80)), "a new connection's 408 is the answer")
        XCTAssertFalse(StaleConnectionRetry.mayResend(after408: attempt(written: 0, received: 80, idempotent: false)), "never a POST")
        XCTAssertFalse(StaleConnectionRetry.mayResend(after408: attempt(received: 80, replayable: false)))
    }

    func testTimeoutsAndProtocolErrorsAreNotRetried() {
        XCTAssertFalse(StaleConnectionRetry.mayRetry(attempt(), after: .timeout(.head, "slow")))
        XCTAssertFalse(StaleConnectionRetry.mayRetry(attempt(), after: .malformedResponse("garbage")))
    }
}
