// ahttp's download cache options: --cache DIR, --cache-policy NAME, and -w '%{cache_status}'.

import AsyncHTTP

/// `--cache-policy NAME[,NAME…]`: ASIHTTPRequest's policy names without prefix and suffix
/// (`askServerIfModifiedWhenStale`, `dontLoad`, `fallbackToCacheIfLoadFails`, …), combinable with commas.
func parseCachePolicy(_ text: String) throws -> HTTPCachePolicy {
    var policy: HTTPCachePolicy = []
    for name in text.split(separator: ",") {
        guard let match = HTTPCachePolicy.names.first(where: { $0.name.lowercased() == name.lowercased() }) else {
            let known = HTTPCachePolicy.names.map(\.name).joined(separator: ", ")
            throw UsageError(message: "unknown cache policy '\(name)' (known: \(known))")
        }
        policy.formUnion(match.policy)
    }
    return policy
}

/// `--cache DIR`: a permanent cache in DIR for this run (created if missing).
func makeCache(directory: String, logger: Logger) throws -> HTTPCache {
    do {
        return try HTTPCache(directory: directory, logger: logger)
    } catch {
        throw UsageError(message: "cannot use the cache directory '\(directory)': \(error.message)")
    }
}

/// `%{cache_status}`: hit, miss, revalidated or stale; empty without --cache.
func cacheStatusText(_ response: HTTPClientResponse) -> String {
    response.cacheStatus?.rawValue ?? ""
}
