extension HTTPClient {
    /// The most bytes per second all of this client's requests may move together, uploads and downloads
    /// alike (ASIHTTPRequest's `+setMaxBandwidthPerSecond:`); nil for no limit. Starts at
    /// ``Configuration/maxBandwidthPerSecond``; a change is felt by running transfers within a twentieth of a
    /// second's worth of bytes, and by one waiting for its turn within 250 ms (lowered, it does not make them
    /// repay at the new rate what they ran up at the old one). A value of 0 or less removes the limit, as curl's
    /// `--limit-rate 0` and ASIHTTPRequest's 0.
    ///
    /// ```swift
    /// client.maxBandwidthPerSecond = 4 << 20   // 4 MiB/s shared by everything the client moves
    /// ```
    ///
    /// Bytes are paced where they cross the socket, by a token bucket with a tenth of a second's burst:
    /// downloads are read no faster than allowed (TCP pushes back on the server), uploads written no faster.
    /// Requests sharing the limit take turns, so none starves. A request can have a stricter limit of its own
    /// (``HTTPClientRequest/maxBandwidthPerSecond``).
    public var maxBandwidthPerSecond: Int? {
        get { transport.flow.limiter.bytesPerSecond }
        set { transport.flow.limiter.setLimit(newValue) }
    }

    /// Bytes per second this client moved (both directions, request and response heads included) over the last
    /// five seconds (ASIHTTPRequest's `+averageBandwidthUsedPerSecond`).
    public var averageBandwidthUsedPerSecond: Int { transport.flow.averageBytesPerSecond() }

    /// Exchanges in flight: from the request leaving the chain until its response body ends, fails or is
    /// dropped. Each redirect hop and authentication round is one exchange.
    public var activeTransfers: Int { transport.flow.activity.count }

    /// Whether any exchange is in flight (ASIHTTPRequest's `+isNetworkInUse`).
    public var isNetworkInUse: Bool { activeTransfers > 0 }

    /// ``activeTransfers`` now, then every change, for a network-activity indicator. A slow reader sees the
    /// newest count.
    ///
    /// ```swift
    /// for await count in client.networkActivity() { print(count > 0 ? "busy" : "idle") }
    /// ```
    public func networkActivity() -> AsyncStream<Int> { transport.flow.activity.updates() }
}
