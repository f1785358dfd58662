extension HTTP1Connection {
    /// Reads and drops the rest of the current response so the connection can carry another request.
    /// Returns false, leaving the connection to be closed, if that would take more than `limit` bytes or
    /// run past `deadline`, or if the connection cannot be reused anyway.
    /// One second is plenty for 64 KiB on any link worth keeping a connection to.
    func drainResponse(limit: Int, deadline: MonotonicTime) async -> Bool {
        // A connection that closes after this response anyway (`Connection: close`, a body read until the close, a
        // withheld body, the last of `Keep-Alive: max`) is closed at once: reading would only hold its pool slot.
        guard isReusableAfterBody else { return false }
        if let remaining = remainingContentLength, remaining > limit { return false }
        // The drain has its own deadline; the request's low-speed window (perhaps nearly used up) is not its rule.
        lowSpeed = nil
        let deadlines = Deadlines(inactivity: nil, total: deadline)
        var drained = 0
        do {
            while let chunk = try await nextBodyChunk(deadlines: deadlines) {
                drained += chunk.count
                if drained > limit { return false }
            }
            return isReusable
        } catch {
            return false
        }
    }
}
