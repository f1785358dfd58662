/// The progress handler of a resumable download (``HTTPClient/download(_:to:options:)`` with
/// ``DownloadOptions/resume``), which may send twice: it owns the user's handler across the attempts, so that
/// the user sees one transfer with one final value, counted as curl's meter and ASIHTTPRequest count a resumed
/// download, from the start of the file.
///
/// Each attempt reports through ``handler(round:)``. Its values are held until the download has decided what
/// the response is (``decide(offset:)``): then they go on, with the bytes kept from the partial file added to
/// the received count and to the total (a `206` counts only the rest). A response that is dropped for a start
/// over (``startOver(round:)``) is hidden, its final value too. The decided round's final value waits for
/// ``close(failed:)``, which knows whether the file was completed. ``finish(with:)`` and ``close(failed:)`` make
/// sure the user gets a final value however the download ends, and nothing after it.
///
/// Valid sequences: for each round, ``startOver(round:)`` (round 0 too, to begin), then at most one
/// ``decide(offset:)`` or ``finish(with:)``; ``close(failed:)`` last, once.
final class ResumedDownloadProgress: Sendable {
    private enum Phase {
        /// The current round's response is not decided on yet: its values are held.
        case holding
        /// The current round's values go to the user, shifted by the bytes kept.
        case passing(offset: Int)
        /// The user has had the final value.
        case closed
    }

    private struct State {
        var round = 0
        var phase = Phase.holding
        /// The newest held value of the current round.
        var held: HTTPTransferProgress?
        /// The newest value the user was given.
        var last: HTTPTransferProgress?
        /// The decided round's final value, held until the download returns or throws (``close(failed:)``): the
        /// file may still fail to be completed (a length that does not add up, a failed move into place).
        var final: HTTPTransferProgress?
    }

    private let user: HTTPProgressHandler
    private let state = Locked(State())

    init(_ user: HTTPProgressHandler) { self.user = user }

    /// The handler for round `round`'s request: the user's throttle settings, reporting here.
    func handler(round: Int) -> HTTPProgressHandler {
        HTTPProgressHandler(minimumInterval: user.minimumInterval, minimumFraction: user.minimumFraction) { [self] progress in
            receive(progress, round: round)
        }
    }

    /// A new round begins; what the previous one reports from now on (its dropped response's final value) is
    /// hidden.
    func startOver(round: Int) {
        state.withLock { state in
            if case .closed = state.phase { return }
            state.round = round
            state.phase = .holding
            state.held = nil
        }
    }

    /// The current round's response is the download's: its values go to the user, `offset` bytes (those kept
    /// from the partial file) added.
    func decide(offset: Int) {
        let out = state.withLock { state -> HTTPTransferProgress? in
            guard case .holding = state.phase else { return nil }
            state.phase = .passing(offset: offset)
            guard let held = state.held else { return nil }
            state.held = nil
            return Self.pass(held, offset: offset, &state)
        }
        if let out { user.report(out) }
    }

    /// The download ended without reading the current round's body (the kept file was already complete): `value`
    /// is the final one.
    func finish(with value: HTTPTransferProgress) {
        let out = state.withLock { state -> HTTPTransferProgress? in
            if case .closed = state.phase { return nil }
            var value = value
            value.isFinal = true
            state.phase = .closed
            state.last = value
            return value
        }
        if let out { user.report(out) }
    }

    /// The download returned or threw (`failed`): the user gets a final value if none came yet (the newest
    /// value, made final), and nothing more.
    func close(failed: Bool) {
        let out = state.withLock { state -> HTTPTransferProgress? in
            if case .closed = state.phase { return nil }
            // Held values (a send that threw before the response was decided on) are the attempt's own, unshifted.
            var value = state.final ?? state.held ?? state.last ?? HTTPTransferProgress()
            value.isFinal = true
            value.didFail = value.didFail || failed
            state.phase = .closed
            state.last = value
            return value
        }
        if let out { user.report(out) }
    }

    private func receive(_ progress: HTTPTransferProgress, round: Int) {
        let out = state.withLock { state -> HTTPTransferProgress? in
            guard round == state.round else { return nil }
            switch state.phase {
            case .holding:
                state.held = progress
                return nil
            case .passing(let offset):
                return Self.pass(progress, offset: offset, &state)
            case .closed:
                return nil
            }
        }
        if let out { user.report(out) }
    }

    private static func pass(_ progress: HTTPTransferProgress, offset: Int, _ state: inout State) -> HTTPTransferProgress? {
        let value = shifted(progress, by: offset)
        if value.isFinal {
            state.final = value
            return nil
        }
        state.last = value
        return value
    }

    private static func shifted(_ progress: HTTPTransferProgress, by offset: Int) -> HTTPTransferProgress {
        guard offset > 0 else { return progress }
        var value = progress
        value.bytesReceived = saturatingSum(value.bytesReceived, offset)
        value.bytesExpectedToReceive = value.bytesExpectedToReceive.map { saturatingSum($0, offset) }
        return value
    }
}
