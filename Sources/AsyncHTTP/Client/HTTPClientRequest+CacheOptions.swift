// The cache step's per-request settings (see ``HTTPRequestOption``), ASIHTTPRequest's `cachePolicy`,
// `cacheStoragePolicy` and `secondsToCache`.

/// ``CacheMiddleware``'s settings for one request.
struct CacheOptions: HTTPRequestOption, Sendable {
    var policy: HTTPCachePolicy = .useDefault
    var storagePolicy: HTTPCacheStoragePolicy?
    var secondsToCache: Double?
    static var defaultValue: Self { Self() }
}

extension HTTPClientRequest {
    /// How this request uses the client's ``HTTPClient/Configuration/cache`` (ASIHTTPRequest's
    /// `cachePolicy`); ``HTTPCachePolicy/useDefault`` takes the cache's ``HTTPCache/defaultPolicy``.
    ///
    /// ```swift
    /// request.cachePolicy = .dontLoad          // offline: from the cache or a 504
    /// ```
    public var cachePolicy: HTTPCachePolicy {
        get { option(CacheOptions.self) { $0.policy } }
        set { self[CacheOptions.self].policy = newValue }
    }
    /// Where this request's response is stored; nil: the cache's ``HTTPCache/defaultStoragePolicy``
    /// (ASIHTTPRequest's `cacheStoragePolicy`).
    public var cacheStoragePolicy: HTTPCacheStoragePolicy? {
        get { option(CacheOptions.self) { $0.storagePolicy } }
        set { self[CacheOptions.self].storagePolicy = newValue }
    }
    /// Keep the stored response fresh this many seconds, whatever the server's `Cache-Control`, `Expires`
    /// or `Last-Modified` say (ASIHTTPRequest's `secondsToCache`). It also makes a response without explicit
    /// freshness storable. Applied when the response is stored.
    public var secondsToCache: Double? {
        get { option(CacheOptions.self) { $0.secondsToCache } }
        set { self[CacheOptions.self].secondsToCache = newValue }
    }
}
