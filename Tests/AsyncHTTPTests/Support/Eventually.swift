import AsyncHTTP

/// Waits until `condition` holds, checking every 2 ms, and throws after `timeout` naming what was awaited.
///
/// For tests that must know another task has reached a state (a connection leased, a request queued) before
/// they act: a fixed sleep guesses at the scheduler and fails on a slow or loaded machine, this does not.
func waitUntil(_ what: String, timeout: Duration = .seconds(10),
               _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw PeerError("timed out after \(timeout) waiting until \(what)") }
        try await Task.sleep(for: .milliseconds(2))
    }
}

/// Waits until `client`'s pool counts `leased` connections in use and `waiting` requests queued.
func waitUntilPool(of client: HTTPClient, leases leased: Int, andQueues waiting: Int = 0) async throws {
    try await waitUntil("the pool leases \(leased) connection(s) and queues \(waiting) request(s)") {
        let statistics = await client.poolStatistics()
        return statistics.leasedConnections == leased && statistics.waitingRequests == waiting
    }
}
