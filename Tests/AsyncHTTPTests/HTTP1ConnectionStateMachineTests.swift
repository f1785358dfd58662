import XCTest

@testable import AsyncHTTP1

/// The connection's life as action sequences, with no socket (async-http-client's
/// `HTTP1ConnectionStateMachineTests` are the model).
final class HTTP1ConnectionStateMachineTests: XCTestCase {
    func testKeepAliveRequestResponseReturnsTheConnectionToThePool() {
        var machine = HTTP1ConnectionStateMachine()
        XCTAssertEqual(machine.requestStarted(persistent: true), .writeRequest)
        XCTAssertEqual(machine.state, .writing)
        machine.wrote(40)
        machine.wrote(2)
        XCTAssertEqual(machine.requestBytesWritten, 42)
        XCTAssertEqual(machine.requestWritten(), .readHead)
        XCTAssertEqual(machine.headReceived(keepAlive: true, keepAliveMax: nil, keepAliveTimeout: 5), .readBody)
        XCTAssertFalse(machine.isReusable, "not reusable while the body is being read")
        XCTAssertFalse(machine.wasReused, "the first request is on a new connection")
        XCTAssertEqual(machine.bodyEnded(), .returnToPool)
        XCTAssertEqual(machine.state, .done)
        XCTAssertTrue(machine.isReusable)
        XCTAssertEqual(machine.keepAliveTimeout, 5)

        XCTAssertEqual(machine.requestStarted(persistent: true), .writeRequest)
        XCTAssertTrue(machine.wasReused)
        XCTAssertEqual(machine.requestBytesWritten, 0, "the counter is per request")
    }

    func testConnectionCloseFromTheServerEndsInMustClose() {
        var machine = HTTP1ConnectionStateMachine()
        _ = machine.requestStarted(persistent: true)
        _ = machine.requestWritten()
        _ = machine.headReceived(keepAlive: false, keepAliveMax: nil, keepAliveTimeout: nil)
        XCTAssertEqual(machine.bodyEnded(), .close)
        XCTAssertEqual(machine.state, .mustClose)
        XCTAssertFalse(machine.isReusable)
        guard case .refuse = machine.requestStarted(persistent: true) else {
            return XCTFail("a connection that must close cannot start another request")
        }
        XCTAssertEqual(machine.state, .closed)
    }

    func testRequestWithConnectionCloseIsNotReusedEvenIfTheServerKeepsAlive() {
        var machine = HTTP1ConnectionStateMachine()
        _ = machine.requestStarted(persistent: false)
        _ = machine.requestWritten()
        _ = machine.headReceived(keepAlive: true, keepAliveMax: nil, keepAliveTimeout: nil)
        XCTAssertEqual(machine.bodyEnded(), .close)
    }

    func testKeepAliveMaxBudgetCountsDownAndClosesWhenUsedUp() {
        var machine = HTTP1ConnectionStateMachine()
        var actions: [HTTP1ConnectionStateMachine.Action] = []
        // Apache: max=2 on the first response, then no Keep-Alive field; the budget counts down by one.
        for max in [2, nil, nil] as [Int?] {
            actions.append(machine.requestStarted(persistent: true))
            actions.append(machine.requestWritten())
            actions.append(machine.headReceived(keepAlive: true, keepAliveMax: max, keepAliveTimeout: nil))
            actions.append(machine.bodyEnded())
        }
        XCTAssertEqual(actions, [
            .writeRequest, .readHead, .readBody, .returnToPool,
            .writeRequest, .readHead, .readBody, .returnToPool,
            .writeRequest, .readHead, .readBody, .close,
        ])
        XCTAssertEqual(machine.remainingRequests, 0)
    }

    func testAnEarlyResponseHeadWhileStillWritingIsAccepted() {
        var machine = HTTP1ConnectionStateMachine()
        _ = machine.requestStarted(persistent: true)
        machine.wrote(100)
        // A 413 or 401 may arrive before the whole body went out.
        XCTAssertEqual(machine.headReceived(keepAlive: false, keepAliveMax: nil, keepAliveTimeout: nil), .readBody)
        XCTAssertEqual(machine.bodyEnded(), .close)
    }

    func testFailureClosesFromEveryState() {
        let prefixes: [(inout HTTP1ConnectionStateMachine) -> Void] = [
            { _ in },
            { _ = $0.requestStarted(persistent: true) },
            { _ = $0.requestStarted(persistent: true); _ = $0.requestWritten() },
            { _ = $0.requestStarted(persistent: true); _ = $0.requestWritten(); _ = $0.headReceived(keepAlive: true, keepAliveMax: nil, keepAliveTimeout: nil) },
        ]
        for prefix in prefixes {
            var machine = HTTP1ConnectionStateMachine()
            prefix(&machine)
            XCTAssertEqual(machine.failed(), .close)
            XCTAssertEqual(machine.state, .closed)
            XCTAssertFalse(machine.isReusable)
        }
    }

    func testEventsOutOfOrderAreRefusedNotTrapped() {
        var machine = HTTP1ConnectionStateMachine()
        guard case .refuse = machine.bodyEnded() else { return XCTFail("a body cannot end before a request") }
        machine = HTTP1ConnectionStateMachine()
        _ = machine.requestStarted(persistent: true)
        guard case .refuse = machine.requestStarted(persistent: true) else {
            return XCTFail("a second request cannot start while one is being written")
        }
        XCTAssertEqual(machine.state, .closed)
        machine = HTTP1ConnectionStateMachine()
        guard case .refuse = machine.headReceived(keepAlive: true, keepAliveMax: nil, keepAliveTimeout: nil) else {
            return XCTFail("a head cannot arrive on an idle connection")
        }
    }

    func testClosedIsFinal() {
        var machine = HTTP1ConnectionStateMachine()
        machine.closed()
        guard case .refuse = machine.requestStarted(persistent: true) else { return XCTFail("closed is final") }
        XCTAssertEqual(machine.state, .closed)
    }
}
