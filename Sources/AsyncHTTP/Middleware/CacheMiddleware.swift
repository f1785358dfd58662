import HTTPTypes

/// Answers GET requests from an ``HTTPCache`` when RFC 9111 and the request's ``HTTPCachePolicy`` allow,
/// revalidates stale responses with `If-None-Match` / `If-Modified-Since`, stores responses as their bodies
/// stream through, and invalidates after unsafe methods (§4.4).
///
/// It sits below compression, so it stores bodies as the server sent them (compressed) and the compression
/// step decodes hits and misses alike; and above throttling, so a hit is not paced.
///
/// Requests other than GET pass through (after an unsafe one, its URL is invalidated), as do GET requests
/// that carry their own `If-*` or `Range` fields: the caller is doing validation or ranges itself.
///
/// The client's own middleware runs below it (and sees the conditionals it adds, which a signer must), so an
/// `Authorization` one of them adds is not in the request here: the transport marks the response instead
/// (``HTTPClientResponse/requestCarriedAuthorization``), and §3.5 reads both.
struct CacheMiddleware: HTTPClientMiddleware {
    let cache: HTTPCache

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        let url = try request.httpURL()
        guard request.method == .get else {
            let response = try await next(request)
            for key in CacheRules.invalidatedKeys(method: request.method, url: url, status: response.status.code,
                                                  headers: response.headers) {
                cache.remove(key: key)
            }
            return response
        }
        if CacheRules.callerConditionals.contains(where: { request.headers.contains($0) }) {
            var response = try await next(request)
            response.cacheStatus = .miss
            return response
        }
        let exchange = Exchange(
            cache: cache, request: request, url: url, key: CacheRules.cacheKey(url), options: request[CacheOptions.self])
        let stored = exchange.policy.contains(.doNotRead)
            ? nil : cache.lookup(key: exchange.key, requestHeaders: request.headers)
        let now = cache.now()
        switch CacheRules.decide(stored: stored?.head, facts: stored?.facts, requestHeaders: request.headers,
                                 policy: exchange.policy, now: now) {
        case .serveFresh:
            return exchange.serve(stored!, as: .hit, now: now)
        case .serveStale:
            return exchange.serve(stored!, as: .stale, now: now)
        case .unavailable:
            var response = HTTPClientResponse(status: .gatewayTimeout, headers: [.contentLength: "0"], url: url)
            response.cacheStatus = .miss
            return response
        case .fetch:
            return try await exchange.fetch(exchange.request, fallback: stored, next: next)
        case .validate:
            return try await exchange.validate(stored!, next: next)
        }
    }

    /// A network failure, as opposed to a refusal of the request itself or a cancellation.
    static func isNetworkFailure(_ error: HTTPClientError) -> Bool {
        switch error.code {
        case .dnsFailure, .connectFailed, .tlsHandshakeFailed, .timeout, .connectionClosed, .ioFailure,
             .malformedResponse, .proxyFailed:
            true
        default:
            false
        }
    }
}

/// One GET request's way through the cache.
private struct Exchange {
    let cache: HTTPCache
    let request: HTTPClientRequest
    let url: HTTPURL
    let key: String
    let options: CacheOptions
    var policy: HTTPCachePolicy { options.policy == .useDefault ? cache.defaultPolicy : options.policy }

    /// A stored response as the answer, with its current `Age` (§5.1, §4.2.3).
    func serve(_ stored: HTTPCache.Stored, as status: HTTPCacheStatus, now: Double) -> HTTPClientResponse {
        let head = stored.head
        var headers = head.headers
        // An entry stored before `Set-Cookie` was left out of stored heads must not set its cookie again either.
        if headers.contains(.setCookie) { headers[.setCookie] = nil }
        let age = stored.facts.age(head, now: now)
        headers[.age] = String(Int(Swift.min(age, Double(CacheControl.deltaSecondsCeiling))))
        let body: HTTPClientResponse.Body
        switch stored.record.body {
        case .inline(let bytes):
            body = HTTPClientResponse.Body(bytes: bytes)
        case .file(_, let length, let crc):
            let cache = self.cache, storage = stored.storage, hash = HTTPCache.hash(head.key)
            body = HTTPClientResponse.Body(CachedFileBody(file: stored.bodyFile!, length: length, crc: crc) {
                cache.discardCorrupt(storage: storage, hash: hash, why: "its body fails its checksum")
            })
        }
        var response = HTTPClientResponse(
            status: HTTPResponse.Status(code: head.status, reasonPhrase: head.reasonPhrase), headers: headers,
            version: head.version, body: body, url: url)
        response.cacheStatus = status
        return response
    }

    /// Sends `request`; a network failure serves `fallback` stale when the policy asks for it (nil response).
    private func send(_ request: HTTPClientRequest, fallback: HTTPCache.Stored?, next: HTTPClientMiddleware.Next)
        async throws -> (response: HTTPClientResponse, requestTime: Double, responseTime: Double)? {
        let requestTime = cache.now()
        do {
            let response = try await next(request)
            return (response, requestTime, cache.now())
        } catch let error as HTTPClientError {
            guard policy.contains(.fallbackToCacheIfLoadFails), CacheMiddleware.isNetworkFailure(error), let fallback,
                  CacheRules.mayServeStaleOnError(fallback.head)
            else { throw error }
            cache.logger.debug("cache: the network failed; serving the stored response", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// An unconditional request; its response is stored as it streams if it may be.
    func fetch(_ request: HTTPClientRequest, fallback: HTTPCache.Stored?, next: HTTPClientMiddleware.Next)
        async throws -> HTTPClientResponse {
        guard let sent = try await send(request, fallback: fallback, next: next) else {
            return serve(fallback!, as: .stale, now: cache.now())
        }
        return record(sent.response, requestTime: sent.requestTime, responseTime: sent.responseTime)
    }

    /// Revalidation (§4.3): the request made conditional on the stored validators; a `304` that selects
    /// the stored response freshens it (§4.3.4), anything else replaces it.
    func validate(_ stored: HTTPCache.Stored, next: HTTPClientMiddleware.Next) async throws -> HTTPClientResponse {
        let conditionals = CacheRules.conditionalHeaders(for: stored.head)
        guard !conditionals.isEmpty else { return try await fetch(request, fallback: stored, next: next) }
        var conditional = request
        for field in conditionals { conditional.headers[field.name] = field.value }
        guard let sent = try await send(conditional, fallback: stored, next: next) else {
            return serve(stored, as: .stale, now: cache.now())
        }
        guard sent.response.status.code == 304 else {
            return record(sent.response, requestTime: sent.requestTime, responseTime: sent.responseTime)
        }
        // A 304 has no body (RFC 9110 §15.4.5); reading its end gives the connection back to the pool at once.
        _ = try await sent.response.body.collect(upTo: 64 * 1024)
        guard CacheRules.notModifiedSelects(stored.head, notModified: sent.response.headers) else {
            // Not about what we hold (another representation's validator): ask again, unconditionally.
            cache.remove(key: key)
            return try await fetch(request, fallback: nil, next: next)
        }
        var head = stored.head
        head.headers = CacheRules.freshenedHeaders(head.headers, with: sent.response.headers)
        head.requestTime = sent.requestTime
        head.responseTime = sent.responseTime
        if let seconds = options.secondsToCache { head.secondsToCache = seconds }
        let facts = CacheRules.StoredFacts(head)
        if !policy.contains(.doNotWrite) {
            // The head file is rewritten only if the freshened response can be used later without asking
            // again. One that is stale at once or no-cache (max-age=0, nginx's `expires -1`) is revalidated on
            // every use anyway, so this object keeps the update in memory and spares the disk a rename per
            // 304 (ext4 writes a file renamed over another out at once: ~1 ms, ten times the round trip).
            let reusable = facts.lifetime > facts.age(head, now: sent.responseTime)
                && (!facts.directives.noCache || head.ignoresServerDirectives)
            cache.update(stored, head: head, persist: reusable)
        }
        var freshened = stored
        freshened.record.head = head
        freshened.facts = facts
        var response = serve(freshened, as: .revalidated, now: sent.responseTime)
        // The 304's own cookies are live (not stored): the cookie step above takes them from this response.
        for field in sent.response.headers where field.name == .setCookie { response.headers.append(field) }
        return response
    }

    /// The response from the network, wrapped to be stored when its body ends cleanly if §3 allows.
    func record(_ response: HTTPClientResponse, requestTime: Double, responseTime: Double) -> HTTPClientResponse {
        var response = response
        response.cacheStatus = .miss
        let status = response.status.code
        if let why = CacheRules.whyNotStorable(
            method: request.method, requestHeaders: request.headers, status: status, responseHeaders: response.headers,
            policy: policy, ignoresServerDirectives: cache.ignoresServerDontCacheHeaders,
            secondsToCache: options.secondsToCache, requestCarriedAuthorization: response.requestCarriedAuthorization) {
            // A final answer the server does not let us keep replaces nothing: drop what was stored.
            if status >= 200, status < 400, status != 304, !policy.contains(.doNotWrite) { cache.remove(key: key) }
            cache.logger.trace("cache: not storing", metadata: ["reason": "\(why)"])
            return response
        }
        let expectedLength = response.headers[.contentLength].flatMap { Int($0) }
        if let expectedLength, expectedLength > cache.maxEntrySize {
            // A new full response too large to keep still replaces what was stored: the old one is out of date.
            cache.remove(key: key)
            cache.logger.trace("cache: not storing", metadata: ["reason": "larger than maxEntrySize"])
            return response
        }
        let head = CachedResponseHead(
            key: key, status: status, reasonPhrase: response.status.reasonPhrase, version: response.version,
            headers: CacheRules.storableHeaders(response.headers), requestTime: requestTime, responseTime: responseTime,
            secondsToCache: options.secondsToCache, ignoresServerDirectives: cache.ignoresServerDontCacheHeaders,
            vary: CacheRules.varyValues(names: CacheRules.varyNames(response.headers) ?? [], requestHeaders: request.headers))
        let recorder = CacheRecorder(cache: cache, head: head, storage: options.storagePolicy ?? cache.defaultStoragePolicy,
                                     expectedLength: expectedLength)
        response.body = HTTPClientResponse.Body(RecordingBody(upstream: response.body, recorder: recorder))
        return response
    }
}
