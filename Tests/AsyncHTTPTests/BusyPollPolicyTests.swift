import XCTest
@testable import AsyncHTTP

/// The busy-poll decision as a sequence of observations (``BusyPollPolicy``; no clock, no socket).
final class BusyPollPolicyTests: XCTestCase {
    let limit = Duration.microseconds(100)

    func testAFreshFastConnectionPollsForUpToTheLimit() {
        let policy = BusyPollPolicy(limit: limit, opening: 30_000)
        XCTAssertEqual(policy.budget(transfersInFlight: 1, processors: 2), 100_000)
        XCTAssertEqual(policy.budget(transfersInFlight: 0, processors: 8), 100_000)
    }

    func testNoPollingWhenOffWithOtherTransfersOrOnOneProcessor() {
        XCTAssertNil(BusyPollPolicy(limit: .zero).budget(transfersInFlight: 1, processors: 2))
        XCTAssertNil(BusyPollPolicy(limit: .microseconds(-5)).budget(transfersInFlight: 1, processors: 2))
        XCTAssertEqual(BusyPollPolicy(limit: .microseconds(-5)).limit, 0)
        let policy = BusyPollPolicy(limit: limit)
        XCTAssertNil(policy.budget(transfersInFlight: 2, processors: 2), "another transfer needs the thread")
        XCTAssertNil(policy.budget(transfersInFlight: 1, processors: 1), "the server or the rest of the process needs the processor")
    }

    /// A slow opening (a distant server, a TLS handshake) keeps the first requests from polling; fast answers,
    /// observed while parked, earn polling: each observation halves the weight of the estimate before it.
    func testASlowOpeningDelaysPollingUntilFastAnswersBringTheEstimateDown() {
        var policy = BusyPollPolicy(limit: limit, opening: 1_000_000)
        var parked = 0
        for _ in 0..<10 {
            if policy.budget(transfersInFlight: 1, processors: 2) != nil { break }
            policy.observe(wait: 20_000)
            parked += 1
        }
        // 1 ms → 510, 265, 142.5, 81.25 µs.
        XCTAssertEqual(parked, 4)
        XCTAssertEqual(policy.estimate, 81_250)
    }

    func testOneSlowAnswerStopsPollingForAFewRequestsThenItComesBack() {
        var policy = BusyPollPolicy(limit: limit, opening: 10_000)
        policy.observe(wait: 10_000)
        XCTAssertNotNil(policy.budget(transfersInFlight: 1, processors: 2))
        policy.observe(wait: 50_000_000)  // a 50 ms answer
        XCTAssertNil(policy.budget(transfersInFlight: 1, processors: 2))
        var requests = 0
        while policy.budget(transfersInFlight: 1, processors: 2) == nil, requests < 100 {
            policy.observe(wait: 10_000)
            requests += 1
        }
        // 25 ms halves to under 100 µs in 9 observations.
        XCTAssertEqual(requests, 9)
    }

    func testAServerAtTheLimitKeepsPollingAndOneAboveItStops() {
        var atLimit = BusyPollPolicy(limit: limit)
        var above = BusyPollPolicy(limit: limit)
        for _ in 0..<20 {
            atLimit.observe(wait: 100_000)
            above.observe(wait: 100_002)
        }
        XCTAssertNotNil(atLimit.budget(transfersInFlight: 1, processors: 2))
        XCTAssertNil(above.budget(transfersInFlight: 1, processors: 2))
    }
}
