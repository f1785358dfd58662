/// Connection racing for a name with several addresses (RFC 8305, "Happy Eyeballs v2", §§4–5).
///
/// The addresses are interleaved by family (IPv6, IPv4, IPv6, … starting with the family the resolver put
/// first), the first attempt starts at once, and each next one starts when the one before fails or after
/// the connection attempt delay (250 ms by default, RFC 8305 §8's recommendation), whichever comes first.
/// The first connection that completes wins; attempts still running are cancelled and connections that
/// complete after the winner are closed. The connect deadline bounds the whole race.
///
/// Before, addresses were tried one after another, so a black-holed first address (a firewall dropping
/// SYNs, a dead IPv6 route) cost the whole connect timeout before the second was tried.
enum HappyEyeballs {
    /// RFC 8305 §4: the addresses in the order they will be tried, families alternating, starting with the
    /// first address's family ("First Address Family Count" of 1); within a family the resolver's order is kept.
    static func interleave<Address>(_ addresses: [Address], family: (Address) -> Int32) -> [Address] {
        guard let first = addresses.first else { return [] }
        let preferred = family(first)
        var primary = addresses.filter { family($0) == preferred }[...]
        var secondary = addresses.filter { family($0) != preferred }[...]
        var ordered: [Address] = []
        ordered.reserveCapacity(addresses.count)
        while !primary.isEmpty || !secondary.isEmpty {
            if let next = primary.popFirst() { ordered.append(next) }
            if let next = secondary.popFirst() { ordered.append(next) }
        }
        return ordered
    }

    /// When the next attempt starts: the race's decisions as a value, driven by events (an attempt failed, the
    /// delay timer fired) and returning what to do, so that the rules are tested without sockets or clocks.
    struct Schedule: Equatable {
        /// What to do after an event.
        enum Action: Equatable {
            /// Start attempt `index`; if `timer` is set, arm the delay timer with that generation.
            case start(index: Int, timer: Int?)
            /// Nothing to do until the next event.
            case wait
            /// Every attempt has failed.
            case giveUp
        }

        let count: Int
        /// Attempts started so far (the next index to start).
        private(set) var started = 0
        /// Attempts started that have not finished.
        private(set) var running = 0
        /// The generation of the armed timer: a timer armed before the latest start is stale and ignored.
        private(set) var timerGeneration = 0

        init(count: Int) {
            precondition(count > 0)
            self.count = count
        }

        /// The race begins: start the first attempt.
        mutating func begin() -> Action { startNext() }

        /// An attempt failed: start the next at once (RFC 8305 §5), or give up when none is left running.
        mutating func attemptFailed() -> Action {
            running -= 1
            if started < count { return startNext() }
            return running == 0 ? .giveUp : .wait
        }

        /// The delay timer of `generation` fired: start the next attempt if that timer is still the current one.
        mutating func timerFired(generation: Int) -> Action {
            guard generation == timerGeneration, started < count else { return .wait }
            return startNext()
        }

        private mutating func startNext() -> Action {
            let index = started
            started += 1
            running += 1
            guard started < count else { return .start(index: index, timer: nil) }
            timerGeneration += 1
            return .start(index: index, timer: timerGeneration)
        }
    }

    /// Races `attempt` over `addresses` (already in the order to try) as RFC 8305 says, and returns the
    /// first connection made. Losers that connect anyway are passed to `discard`. When every attempt fails,
    /// throws a timeout if one timed out (the deadline is shared, so the ones still running did too), and
    /// otherwise a `connectFailed`; either way the message lists each address's failure.
    ///
    /// Cancellation stops the race (RFC 8305 §5: "stop all attempts"): the attempts running are cancelled and
    /// no further address is dialled, and the caller gets `.cancelled` unless an attempt connected meanwhile.
    /// (Before, each cancelled attempt counted as a failure, and a failure starts the next address at once, so
    /// a cancel dialled every remaining address.)
    static func race<Connection: Sendable>(
        _ addresses: [SocketAddress], attemptDelay: Duration, what: String,
        attempt: @escaping @Sendable (SocketAddress) async throws(HTTPClientError) -> Connection,
        discard: @escaping @Sendable (Connection) -> Void
    ) async throws(HTTPClientError) -> Connection {
        guard !addresses.isEmpty else { throw HTTPClientError(.connectFailed, "no address to connect to for \(what)") }
        if addresses.count == 1 { return try await attempt(addresses[0]) }

        typealias Event = RaceEvent<Connection>
        let outcome: Result<Connection, HTTPClientError> = await withTaskGroup(of: Event.self) { group in
            var schedule = Schedule(count: addresses.count)
            var failures: [HTTPClientError] = []
            func perform(_ action: Schedule.Action) -> Bool {
                switch action {
                case .start(let index, let timer):
                    let address = addresses[index]
                    group.addTask {
                        do throws(HTTPClientError) { return .connected(try await attempt(address)) } catch { return .failed(error) }
                    }
                    if let timer {
                        group.addTask {
                            try? await Task.sleep(for: attemptDelay)
                            return .timer(generation: timer)
                        }
                    }
                    return true
                case .wait:
                    return true
                case .giveUp:
                    return false
                }
            }
            _ = perform(schedule.begin())
            var winner: Connection?
            race: while winner == nil, let event = await group.next() {
                switch event {
                case .connected(let connection):
                    winner = connection
                case .failed(let error):
                    failures.append(error)
                    // Cancelled (the caller, whose cancellation reaches every attempt): stop, start nothing more.
                    if error.code == .cancelled || Task.isCancelled { break race }
                    if !perform(schedule.attemptFailed()) {
                        group.cancelAll()
                        return .failure(combine(failures, what: what))
                    }
                case .timer(let generation):
                    if Task.isCancelled { break race }
                    _ = perform(schedule.timerFired(generation: generation))
                }
            }
            // The race is decided (or the caller was cancelled): stop the rest, close late winners.
            group.cancelAll()
            while let event = await group.next() {
                if case .connected(let late) = event {
                    if winner == nil { winner = late } else { discard(late) }
                }
            }
            if let winner { return .success(winner) }
            return .failure(failures.isEmpty || Task.isCancelled ? .cancelled : combine(failures, what: what))
        }
        return try outcome.get()
    }

    /// What a racing child task reports.
    enum RaceEvent<Connection: Sendable>: Sendable {
        case connected(Connection)
        case failed(HTTPClientError)
        case timer(generation: Int)
    }

    /// One error for a race every attempt of which failed: a cancel if one was cancelled; else a timeout if one
    /// timed out (curl's exit 28 for a connect that ran out of time), else the last failure; with a message
    /// that names every address's failure. Before, a timeout was returned alone: an IPv6 address unreachable at
    /// once and an IPv4 one timing out said only "no connection to 192.0.2.1:443 in time".
    private static func combine(_ failures: [HTTPClientError], what: String) -> HTTPClientError {
        if let cancelled = failures.first(where: { $0.code == .cancelled }) { return cancelled }
        guard failures.count > 1, let last = failures.last else {
            return failures.first ?? HTTPClientError(.connectFailed, "no address to connect to")
        }
        var error = failures.first(where: { $0.code == .timeout }) ?? last
        error.message = "could not connect to \(what): " + failures.map(\.message).joined(separator: "; ")
        return error
    }
}
