import AsyncHTTP

/// Where and how ``WebArchiver`` keeps a page: ASIWebPageRequest's three `urlReplacementMode`s.
public enum WebArchiveOutput: Sendable, Hashable {
    /// One self-contained HTML file at this path: every resource replaced by a `data:` URI, stylesheets and
    /// frames inlined recursively (ASI's `ASIReplaceExternalResourcesWithData`). Written to a temporary file
    /// beside it and renamed into place.
    case singleFile(String)
    /// A directory (created if needed): `index.html` and `resources/HASH-name.ext`, the references rewritten to
    /// relative paths (ASI's `ASIReplaceExternalResourcesWithLocalURLs`). Each file is written to a temporary
    /// file and renamed into place; `index.html` last, so it never names a file that is not complete.
    case directory(String)
    /// Nothing written: the page and every resource are fetched through the client's
    /// `HTTPClient/Configuration/cache` with the `HTTPCacheStoragePolicy/permanent` storage policy, and the
    /// page keeps its references (ASI's `ASIDontModifyURLs`). Read it later with `.dontLoad` (no network).
    case downloadCache
}

/// Which origins a page's resources may come from.
public enum WebArchiveOrigins: Sendable, Hashable {
    /// Only the page's own origin (scheme, host and port) — the default.
    case sameOrigin
    /// The page's origin and these (`"https://cdn.example.com"`, `"http://127.0.0.1:8081"`; a default port may be
    /// left out).
    case sameOriginAnd([String])
    /// Any `http` or `https` origin.
    case any
}

/// Limits and policies of one archive.
///
/// ```swift
/// var options = WebArchiveOptions()
/// options.origins = .sameOriginAnd(["https://cdn.example.com"])
/// options.maxTotalBytes = 32 << 20
/// ```
public struct WebArchiveOptions: Sendable {
    /// The most bytes the page and its resources may take together, as received (before `data:` encoding).
    /// A resource that would go past it is skipped (``WebArchiveResource/SkipReason/byteLimit``); a page
    /// larger than it is an error. 64 MiB by default: the cache's default `maxSize`, a generous page.
    public var maxTotalBytes = 64 << 20
    /// The most bytes of `data:` URIs a ``WebArchiveOutput/singleFile(_:)`` archive may hold: each reference
    /// holds the resource's whole URI (base64, a third larger than the bytes), so a page that references one
    /// image thousands of times would otherwise grow past any memory. Past it the archive fails with
    /// ``WebArchiveError/Code/outputTooLarge`` and nothing is written. nil: four times ``maxTotalBytes``.
    public var maxSingleFileBytes: Int? = nil
    /// The most resources fetched; the rest are skipped (``WebArchiveResource/SkipReason/resourceLimit``).
    /// 1000 by default: a heavy page has a few hundred (HTTP Archive's 90th percentile is about 200).
    public var maxResources = 1000
    /// How deep frames and stylesheet `@import`s may nest: the page's own frames and stylesheets are depth
    /// 1, what they frame or import depth 2, … Images, scripts and fonts are fetched at any depth their
    /// document reached. 5 by default (a page rarely nests more than two or three).
    public var maxDepth = 5
    /// Which origins resources may come from; the page's own only, by default.
    public var origins: WebArchiveOrigins = .sameOrigin
    /// Resources fetched at once, through one `HTTPClient/withBatch(_:handler:_:)` batch. 6: what browsers
    /// open per host.
    public var maxConcurrentRequests = 6
    /// For ``WebArchiveOutput/downloadCache``: how long the stored responses count as fresh
    /// (`HTTPClientRequest/secondsToCache`), which also makes responses without freshness information
    /// storable. nil leaves freshness to the server. Offline reading with `.dontLoad` serves stale entries too.
    public var secondsToCache: Double? = nil

    /// The defaults.
    public init() {}
}
