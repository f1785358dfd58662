/// How a request uses the cache: ASIHTTPRequest's `ASICachePolicy`, with the same names, bits and meanings.
///
/// The RFC 9111 rules always apply underneath; the policies only make the cache more or less eager. An
/// empty set (``useDefault``) takes the cache's ``HTTPCache/defaultPolicy``, itself
/// ``askServerIfModifiedWhenStale`` unless set otherwise, as ASIDownloadCache's.
///
/// | ASIHTTPRequest | AsyncHTTP | meaning |
/// |---|---|---|
/// | `ASIUseDefaultCachePolicy` | ``useDefault`` | the cache's default policy |
/// | `ASIDoNotReadFromCacheCachePolicy` | ``doNotRead`` | never answer from the cache (still writes) |
/// | `ASIDoNotWriteToCacheCachePolicy` | ``doNotWrite`` | never store this response |
/// | `ASIAskServerIfModifiedWhenStaleCachePolicy` | ``askServerIfModifiedWhenStale`` | fresh: from the cache; stale: revalidate (RFC 9111 behaviour) |
/// | `ASIAskServerIfModifiedCachePolicy` | ``askServerIfModified`` | always revalidate a stored response |
/// | `ASIOnlyLoadIfNotCachedCachePolicy` | ``onlyLoadIfNotCached`` | use any stored response, even stale; the network only on a miss |
/// | `ASIDontLoadCachePolicy` | ``dontLoad`` | offline: a stored response, even stale, or a `504` |
/// | `ASIFallbackToCacheIfLoadFailsCachePolicy` | ``fallbackToCacheIfLoadFails`` | a network failure serves the stale response, marked ``HTTPCacheStatus/stale`` |
///
/// ```swift
/// var request = HTTPClientRequest(url: "https://example.com/feed.json")
/// request.cachePolicy = [.askServerIfModifiedWhenStale, .fallbackToCacheIfLoadFails]
/// ```
///
/// A stored response whose server said `no-cache` or `must-revalidate` is never served stale (nor, for
/// `no-cache`, unvalidated), whatever the policy, unless the cache was made with
/// ``HTTPCache/ignoresServerDontCacheHeaders`` (RFC 9111 §4.2.4, §5.2.2.2, §5.2.2.4).
public struct HTTPCachePolicy: OptionSet, Sendable, Hashable {
    /// The policy's bits, ASIHTTPRequest's values (`ASICachePolicy`).
    public let rawValue: Int
    /// A policy from ASIHTTPRequest's bit values.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The cache's ``HTTPCache/defaultPolicy`` (`ASIUseDefaultCachePolicy`, 0).
    public static let useDefault: HTTPCachePolicy = []
    /// Never answer from the cache; the response may still be stored (`ASIDoNotReadFromCacheCachePolicy`).
    public static let doNotRead = HTTPCachePolicy(rawValue: 1)
    /// Never store the response (`ASIDoNotWriteToCacheCachePolicy`).
    public static let doNotWrite = HTTPCachePolicy(rawValue: 2)
    /// Serve a fresh stored response; revalidate a stale one with `If-None-Match` / `If-Modified-Since`
    /// (`ASIAskServerIfModifiedWhenStaleCachePolicy`, ASI's default and plain RFC 9111 behaviour).
    public static let askServerIfModifiedWhenStale = HTTPCachePolicy(rawValue: 4)
    /// Revalidate a stored response every time, fresh or not (`ASIAskServerIfModifiedCachePolicy`).
    public static let askServerIfModified = HTTPCachePolicy(rawValue: 8)
    /// Serve any stored response, stale too; go to the network only when nothing is stored
    /// (`ASIOnlyLoadIfNotCachedCachePolicy`).
    public static let onlyLoadIfNotCached = HTTPCachePolicy(rawValue: 16)
    /// Never touch the network: a stored response, stale too, or a `504 Gateway Timeout` made by the cache
    /// as for `only-if-cached` (`ASIDontLoadCachePolicy`, for offline reading).
    public static let dontLoad = HTTPCachePolicy(rawValue: 32)
    /// When the network fails (connect, DNS, timeout, a broken response), serve the stored response even
    /// though stale, with ``HTTPClientResponse/cacheStatus`` ``HTTPCacheStatus/stale``
    /// (`ASIFallbackToCacheIfLoadFailsCachePolicy`). Combine it with another policy.
    public static let fallbackToCacheIfLoadFails = HTTPCachePolicy(rawValue: 64)

    /// The names the command line's `--cache-policy` takes, ASI's without prefix and suffix.
    public static let names: [(name: String, policy: HTTPCachePolicy)] = [
        ("useDefault", .useDefault), ("doNotRead", .doNotRead), ("doNotWrite", .doNotWrite),
        ("askServerIfModifiedWhenStale", .askServerIfModifiedWhenStale), ("askServerIfModified", .askServerIfModified),
        ("onlyLoadIfNotCached", .onlyLoadIfNotCached), ("dontLoad", .dontLoad),
        ("fallbackToCacheIfLoadFails", .fallbackToCacheIfLoadFails),
    ]
}

/// Where a stored response lives (ASIHTTPRequest's `ASICacheStoragePolicy`).
public enum HTTPCacheStoragePolicy: Sendable, Hashable {
    /// Until the last client using the cache shuts down, or ``HTTPCache/clearCachedResponses(for:)``
    /// (`ASICacheForSessionDurationCacheStoragePolicy`). Kept in a directory of this cache object's own,
    /// which a later run removes if a crash left it behind.
    case session
    /// On disk until evicted or cleared; survives restarts (`ASICachePermanentlyCacheStoragePolicy`).
    case permanent
}

/// What the cache did for one response: curl-style `%{cache_status}` and ASI's `didUseCachedResponse`.
public enum HTTPCacheStatus: String, Sendable, Hashable {
    /// Nothing usable was stored: the response came from the network (and may have been stored).
    /// A `504` made by the cache for `only-if-cached` or ``HTTPCachePolicy/dontLoad`` is a miss too.
    case miss
    /// A fresh stored response (or, under ``HTTPCachePolicy/onlyLoadIfNotCached``, any stored one that is
    /// still fresh), served without touching the network.
    case hit
    /// The stored response, confirmed by the server with `304 Not Modified` (RFC 9111 §4.3.4).
    case revalidated
    /// A stale stored response served without the server's confirmation: the network failed and the policy
    /// has ``HTTPCachePolicy/fallbackToCacheIfLoadFails``, or the request allowed it (`max-stale`,
    /// ``HTTPCachePolicy/onlyLoadIfNotCached``, ``HTTPCachePolicy/dontLoad``).
    case stale
}

extension HTTPClientResponse {
    /// Whether the body comes from the cache (ASIHTTPRequest's `didUseCachedResponse`): a hit, a
    /// revalidated or a stale response.
    public var didUseCachedResponse: Bool {
        switch cacheStatus {
        case .hit, .revalidated, .stale: true
        case .miss, nil: false
        }
    }
}
