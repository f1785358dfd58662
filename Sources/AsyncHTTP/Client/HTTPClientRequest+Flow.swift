/// The throttle step's option: this request's own bandwidth limit, on top of the client's.
enum BandwidthLimitOption: HTTPRequestOption {
    static let defaultValue: Int? = nil
}

extension HTTPClientRequest {
    /// The most bytes per second this request may move, both directions together, in addition to the client's
    /// shared ``HTTPClient/maxBandwidthPerSecond`` (the stricter one wins). nil, 0 or less: only the client's limit
    /// (curl's `--limit-rate 0` and ASIHTTPRequest's 0 mean no limit too).
    ///
    /// Applied where bytes cross the socket: a throttled download is paced by reading slower, so TCP pushes back
    /// on the server and nothing unread piles up in memory. Each hop of a redirect starts its own allowance.
    ///
    /// ```swift
    /// var request = HTTPClientRequest(url: "https://example.com/big.iso")
    /// request.maxBandwidthPerSecond = 512 * 1024
    /// ```
    public var maxBandwidthPerSecond: Int? {
        get { self[BandwidthLimitOption.self] }
        set { self[BandwidthLimitOption.self] = newValue }
    }

    /// Receives this request's upload and download progress, throttled (see ``HTTPProgressHandler`` and
    /// ``HTTPTransferProgress`` for what is counted and what a resend looks like). nil: none.
    public var progressHandler: HTTPProgressHandler? {
        get { storedProgressHandler }
        set { storedProgressHandler = newValue }
    }

    /// Sets a progress handler that feeds the returned stream, which ends after the final value.
    ///
    /// ```swift
    /// var request = HTTPClientRequest(url: "https://example.com/big.iso")
    /// let progress = request.progressUpdates()
    /// async let response = client.send(request)
    /// for await step in progress { print(step.bytesReceived, step.bytesExpectedToReceive ?? -1) }
    /// ```
    ///
    /// The stream keeps only the newest value for a slow reader; the final one is never lost. Every send ends
    /// it, also one that fails before the request leaves the client (``HTTPTransferProgress/didFail`` is then
    /// set); a request that is never sent never ends the stream.
    public mutating func progressUpdates(
        minimumInterval: Duration = .milliseconds(100), minimumFraction: Double = 0.01
    ) -> AsyncStream<HTTPTransferProgress> {
        let (stream, continuation) = AsyncStream<HTTPTransferProgress>.makeStream(bufferingPolicy: .bufferingNewest(1))
        progressHandler = HTTPProgressHandler(minimumInterval: minimumInterval, minimumFraction: minimumFraction) { progress in
            continuation.yield(progress)
            if progress.isFinal { continuation.finish() }
        }
        return stream
    }
}
