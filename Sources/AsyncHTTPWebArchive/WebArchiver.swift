import AsyncHTTP

/// Saves a web page with its images, stylesheets, scripts and frames for offline reading (ASIHTTPRequest's
/// `ASIWebPageRequest`).
///
/// The page is fetched and parsed with libxml2's HTML parser; its resources — `<img src/srcset>`,
/// `<link rel=stylesheet|icon>`, `<script src>`, `<iframe|frame src>`, `<object data>`, `<embed src>`, and
/// `url(…)`/`@import` in `<style>`, `style` attributes and the stylesheets themselves, recursively — are fetched
/// concurrently through one `HTTPClient/withBatch(_:handler:_:)` batch of the same client, so its cookies,
/// credentials, proxy and cache apply. Frames are archived as pages of their own.
///
/// ```swift
/// let archiver = WebArchiver(client: client)
/// let result = try await archiver.archive("https://example.com/", to: .singleFile("/tmp/example.html"))
/// for resource in result.missing { print(resource) }      // "image https://example.com/x.png: HTTP 404"
/// ```
///
/// A resource that fails, or that a limit or the origin policy leaves out, does not fail the page: it is reported
/// in ``WebArchiveResult/resources`` and its reference is made absolute. A page that cannot be fetched, is not
/// HTML or cannot be written throws a ``WebArchiveError``.
public struct WebArchiver: Sendable {
    /// The client every request goes through.
    public let client: HTTPClient
    /// Limits and the origin policy.
    public var options: WebArchiveOptions
    /// The page request's authentication, for the page and the resources on its origin
    /// (`archive(_:to:)` given a request); nil for an archive of a bare URL.
    private var pageAuthentication: PageAuthentication?

    /// An archiver using `client` (its configuration: cookies, authentication, proxy, cache, TLS, timeouts).
    public init(client: HTTPClient, options: WebArchiveOptions = WebArchiveOptions()) {
        self.client = client
        self.options = options
    }

    /// Fetches the page `request` asks for, with its authentication, and its resources; keeps them as `output` says.
    ///
    /// ```swift
    /// var page = HTTPClientRequest(url: "https://intranet.example/report.html")
    /// page.credentials = HTTPCredentials(username: "alice", password: secret)
    /// page.sendsCredentialsPreemptively = true
    /// let result = try await archiver.archive(page, to: .directory("/tmp/report"))
    /// ```
    ///
    /// Of the request, its URL and its authentication are used: `HTTPClientRequest.credentials`,
    /// `HTTPClientRequest.authenticationSchemes`,
    /// `HTTPClientRequest.sendsCredentialsPreemptively` and `HTTPClientRequest.bearerToken`
    /// go with the page's request and with each resource on the page's origin (ASIWebPageRequest's resources
    /// inherit the page request's credentials), never to another origin, as a redirect would not carry them there.
    ///
    /// - Throws: what `archive(_:to:)` given the URL throws.
    public func archive(_ request: HTTPClientRequest, to output: WebArchiveOutput) async throws(WebArchiveError)
        -> WebArchiveResult
    {
        var archiver = self
        if let url = try? HTTPURL(request.url) {
            archiver.pageAuthentication = PageAuthentication(
                origin: ArchiveCrawl.origin(url), credentials: request.credentials, schemes: request.authenticationSchemes,
                preemptive: request.sendsCredentialsPreemptively, bearerToken: request.bearerToken)
        }
        return try await archiver.archive(request.url, to: output)
    }

    /// Fetches the page at `url` and its resources, and keeps them as `output` says.
    ///
    /// - Throws: ``WebArchiveError``: `.invalidURL`, `.pageFailed` (with the client's error), `.pageStatus`
    ///   (not 2xx), `.notHTML`, `.pageTooLarge`, `.noCache`, `.outputFailed`, `.cancelled`.
    public func archive(_ url: String, to output: WebArchiveOutput) async throws(WebArchiveError) -> WebArchiveResult {
        do {
            return try await run(url, output)
        } catch let error as WebArchiveError {
            throw error
        } catch let error as HTTPClientError {
            if error.code == .cancelled { throw WebArchiveError(.cancelled, "cancelled") }
            throw WebArchiveError(.pageFailed, "\(error)", underlying: error)
        } catch {
            // Only the two above are thrown below; anything else would be a cancellation of the batch's task.
            throw WebArchiveError(.cancelled, "\(error)")
        }
    }

    private func run(_ url: String, _ output: WebArchiveOutput) async throws -> WebArchiveResult {
        let pageURL: HTTPURL
        do {
            pageURL = try HTTPURL(url)
        } catch {
            throw WebArchiveError(.invalidURL, error.message, underlying: error)
        }
        if output == .downloadCache && client.configuration.cache == nil {
            throw WebArchiveError(.noCache, "the download cache output needs a client with configuration.cache set")
        }
        if let reason = HTMLDocument.loadParser() {
            throw WebArchiveError(.parserUnavailable, "libxml2 could not be loaded: \(reason)")
        }
        let storesInCache = output == .downloadCache
        let page = try await fetchPage(pageURL, storesInCache: storesInCache)
        let crawl = ArchiveCrawl(pageURL: page.url, pageBody: page.body, options: options)
        guard let document = HTMLDocument(page.body, encoding: page.contentType.flatMap(MediaTypes.charset)) else {
            throw WebArchiveError(.notHTML, "\(page.url.redactedDescription): libxml2 found no HTML document")
        }
        let base = crawl.base(of: document, at: page.url)
        var found: [(String, WebArchiveResource.Kind)] = []
        document.forEachReference { reference, kind in
            found.append((reference, kind))
            return nil
        }
        try await fetchResources(crawl, initial: crawl.discover(found, base: base, depth: 0), storesInCache: storesInCache)

        var written = page.body
        switch output {
        case .downloadCache:
            break
        case .singleFile(let path):
            let limit = options.maxSingleFileBytes ?? options.maxTotalBytes.multipliedReportingOverflow(by: 4).partialValue
            crawl.inlineBudget = max(0, limit)
            crawl.rewrite(document, base: base) { crawl.inlinedDataURI($0) }
            if crawl.inliningExceeded {
                throw WebArchiveError(.outputTooLarge,
                    "\(page.url.redactedDescription): the single file would hold more than \(limit) bytes of data: URIs"
                        + " (maxSingleFileBytes); archive into a directory instead")
            }
            written = document.serialized()
            try WebArchiveFiles.writeAtomically(written, to: path)
        case .directory(let path):
            try WebArchiveFiles.makeDirectory(path + "/resources")
            crawl.assignFiles()
            for index in crawl.entries.indices {
                guard let name = crawl.entries[index].file else { continue }
                try WebArchiveFiles.writeAtomically(crawl.localBytes(index), to: path + "/resources/" + name)
            }
            crawl.rewrite(document, base: base) { index in crawl.entries[index].file.map { "resources/" + $0 } }
            written = document.serialized()
            try WebArchiveFiles.writeAtomically(written, to: path + "/index.html")
        }
        return WebArchiveResult(
            pageURL: page.url, document: written, resources: crawl.report(output), totalBytes: crawl.totalBytes)
    }

    /// The page: 2xx, HTML (or no `Content-Type`), at most `maxTotalBytes`.
    private func fetchPage(_ url: HTTPURL, storesInCache: Bool) async throws -> Fetched {
        let response: HTTPClientResponse
        do {
            response = try await client.send(request(for: url, storesInCache: storesInCache))
        } catch {
            throw Self.pageError(url, error)
        }
        let code = Int(response.status.code)
        guard (200..<300).contains(code) else {
            throw WebArchiveError(.pageStatus, "\(url.redactedDescription): HTTP \(code)", status: code)
        }
        let contentType = response.headers[.contentType]
        if let contentType, !MediaTypes.isHTML(MediaTypes.essence(contentType)) {
            throw WebArchiveError(.notHTML, "\(url.redactedDescription) is \(MediaTypes.essence(contentType)), not HTML")
        }
        do {
            let body = try await response.body.collect(upTo: options.maxTotalBytes)
            return Fetched(status: code, contentType: contentType, url: response.url, body: body)
        } catch let error as HTTPClientError where error.code == .bodyLimitExceeded {
            throw WebArchiveError(.pageTooLarge, "\(url.redactedDescription) is larger than maxTotalBytes (\(options.maxTotalBytes))")
        } catch {
            throw Self.pageError(url, error)
        }
    }

    /// The page could not be fetched: `.cancelled` for a cancelled task, else `.pageFailed` with the cause.
    private static func pageError(_ url: HTTPURL, _ error: any Error) -> WebArchiveError {
        let clientError = error as? HTTPClientError
        if clientError?.code == .cancelled || error is CancellationError {
            return WebArchiveError(.cancelled, "\(url.redactedDescription): cancelled")
        }
        return WebArchiveError(.pageFailed, "\(url.redactedDescription): \(error)", underlying: clientError)
    }

    /// Fetches `initial` and everything they lead to (stylesheets' imports and images, frames' resources)
    /// through one batch, adding members as their referrers arrive.
    private func fetchResources(_ crawl: ArchiveCrawl, initial: [Int], storesInCache: Bool) async throws {
        guard !initial.isEmpty else { return }
        let limit = options.maxTotalBytes
        var configuration = HTTPBatchConfiguration()
        configuration.maxConcurrentRequests = max(1, options.maxConcurrentRequests)
        configuration.cancelsAllOnFailure = false  // one resource failing is reported, not fatal
        let origins = crawl.restrictedOrigins
        try await client.withBatch(configuration, handler: { first -> Fetched in
            var response = first
            if let origins {
                // Under an origin policy a resource's redirects are followed here, not by the client, so that a hop
                // to another origin is never requested: it is reported as cross-origin instead.
                switch try await followSameOriginRedirects(from: first, allowed: origins, storesInCache: storesInCache) {
                case .arrived(let final):
                    response = final
                case .leftOrigin(let status, let target):
                    return Fetched(status: status, contentType: nil, url: target, body: [], leftOrigin: true)
                }
            }
            let code = Int(response.status.code)
            guard (200..<300).contains(code) else {
                // Read a small error body so the connection can be reused; a large one is dropped (closed).
                _ = try? await response.body.collect(upTo: 64 << 10)
                return Fetched(status: code, contentType: nil, url: response.url, body: [])
            }
            let body = try await response.body.collect(upTo: limit)
            return Fetched(status: code, contentType: response.headers[.contentType], url: response.url, body: body)
        }) { batch in
            var members: [Int: Int] = [:]  // batch member id → entry index
            func add(_ indices: [Int]) {
                for index in indices {
                    members[batch.add(request(for: crawl.entries[index].url, storesInCache: storesInCache,
                                              followsRedirects: origins == nil))] = index
                }
            }
            add(initial)
            var outstanding = initial.count
            // Bounded: every member ends with exactly one result; at most maxResources members are ever added.
            for await member in batch.results {
                outstanding -= 1
                if let index = members[member.id] {
                    let more = crawl.received(member.result, for: index)
                    add(more)
                    outstanding += more.count
                }
                if outstanding == 0 { batch.finish() }
            }
        }
    }

    /// Where a resource's redirects led: a response that is no redirect (or the last one allowed), or the first hop
    /// that would leave the allowed origins, which was not requested.
    enum RedirectsFollowed {
        case arrived(HTTPClientResponse)
        case leftOrigin(status: Int, target: HTTPURL)
    }

    /// Follows `response`'s redirects (301, 302, 303, 307, 308 with a `Location`; each hop a `GET` with redirects
    /// off) while they stay within `allowed` origins, under the client's ``RedirectPolicy``: none when it follows
    /// none, at most its `maxRedirects` (one more is `tooManyRedirects`), and https → http only when it allows that
    /// (else `redirectRefused`), as the client's own redirect step would.
    private func followSameOriginRedirects(
        from response: HTTPClientResponse, allowed: Set<String>, storesInCache: Bool
    ) async throws -> RedirectsFollowed {
        let policy = client.configuration.redirectPolicy
        guard policy.followsRedirects else { return .arrived(response) }
        var response = response
        var hops = 0
        while [301, 302, 303, 307, 308].contains(response.status.code), let location = response.headers[.location],
              let target = try? response.url.resolving(location), target.scheme == "http" || target.scheme == "https" {
            // Read a redirect's small body so the connection can be reused; a large one is dropped (closed).
            _ = try? await response.body.collect(upTo: 64 << 10)
            var next = target
            next.fragment = nil
            guard allowed.contains(ArchiveCrawl.origin(next)) else {
                return .leftOrigin(status: response.status.code, target: next)
            }
            guard hops < policy.maxRedirects else {
                throw HTTPClientError(.tooManyRedirects, "more than \(policy.maxRedirects) redirects from \(response.url.redactedDescription)")
            }
            if response.url.scheme == "https", next.scheme == "http", !policy.allowsHTTPSToHTTP {
                throw HTTPClientError(.redirectRefused, "refused to follow a redirect from https to plain http "
                    + "(\(response.url.redactedDescription) → \(next.redactedDescription)); set RedirectPolicy.allowsHTTPSToHTTP to allow it")
            }
            hops += 1
            response = try await client.send(request(for: next, storesInCache: storesInCache, followsRedirects: false))
        }
        return .arrived(response)
    }

    /// A resource's or the page's request. `followsRedirects: false` for a resource under an origin policy: the
    /// archiver follows its redirects itself (``followSameOriginRedirects(from:allowed:storesInCache:)``).
    private func request(for url: HTTPURL, storesInCache: Bool, followsRedirects: Bool = true) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url.description)
        if let pageAuthentication, pageAuthentication.origin == ArchiveCrawl.origin(url) {
            request.credentials = pageAuthentication.credentials
            request.authenticationSchemes = pageAuthentication.schemes
            request.sendsCredentialsPreemptively = pageAuthentication.preemptive
            request.bearerToken = pageAuthentication.bearerToken
        }
        if !followsRedirects { request.redirectPolicy = .disabled }
        if storesInCache {
            request.cacheStoragePolicy = .permanent
            if let seconds = options.secondsToCache { request.secondsToCache = seconds }
        }
        return request
    }
}

/// The authentication of the page's request (`WebArchiver.archive(_:to:)` given a request), given to every
/// request to `origin` (`scheme://host:port`, ``ArchiveCrawl/origin(_:)``).
private struct PageAuthentication: Sendable {
    var origin: String
    var credentials: HTTPCredentials?
    var schemes: Set<HTTPAuthenticationScheme>?
    var preemptive: Bool
    var bearerToken: String?
}

/// A response as the batch hands it over: head facts and the whole body.
struct Fetched: Sendable {
    var status: Int
    var contentType: String?
    var url: HTTPURL
    var body: [UInt8]
    /// A redirect led to another origin than the policy allows; `url` is where, and it was not requested.
    var leftOrigin = false
}

/// The state of one archive: what was found, fetched and kept, and how references map to the archive.
/// Not `Sendable`: one task (the one running `WebArchiver.archive(_:to:)`) owns it, including inside the
/// batch's body closure, which runs in that task.
final class ArchiveCrawl {
    struct Entry {
        var url: HTTPURL
        var kind: WebArchiveResource.Kind
        var depth: Int
        var outcome: WebArchiveResource.Outcome?
        var body: [UInt8] = []
        /// The response's `Content-Type`, or a guess from the URL's extension.
        var contentType = ""
        /// Where the resource came from after redirects: its own references resolve against this.
        var finalURL: HTTPURL
        /// The file name in the directory form.
        var file: String?
    }

    let pageURL: HTTPURL
    let options: WebArchiveOptions
    private(set) var entries: [Entry] = []
    private var byURL: [String: Int] = [:]
    private(set) var totalBytes: Int
    private var fetchCount = 0
    private let allowedOrigins: Set<String>
    private var dataURIs: [Int: String] = [:]
    private var inlining: Set<Int> = []
    /// What the `data:` URIs placed so far may still add, in bytes; each use counts, since each reference holds
    /// the whole URI. Past it ``inliningExceeded`` is set and nothing more is inlined.
    var inlineBudget = Int.max
    private(set) var inliningExceeded = false

    init(pageURL: HTTPURL, pageBody: [UInt8], options: WebArchiveOptions) {
        self.pageURL = pageURL
        self.options = options
        self.totalBytes = pageBody.count
        var allowed: Set<String> = [Self.origin(pageURL)]
        if case .sameOriginAnd(let others) = options.origins {
            for other in others { if let url = try? HTTPURL(other) { allowed.insert(Self.origin(url)) } }
        }
        allowedOrigins = allowed
    }

    /// The origins resources may come from, or nil when any may (``WebArchiveOrigins/any``).
    var restrictedOrigins: Set<String>? { options.origins == .any ? nil : allowedOrigins }

    // MARK: - Finding

    /// What a document's relative references resolve against: its first `<base href>` if that resolves,
    /// else its own URL.
    func base(of document: HTMLDocument, at url: HTTPURL) -> HTTPURL {
        if let href = document.baseHref, let base = Self.resolve(href, against: url) { return base.url }
        return url
    }

    /// Records the references a document at `depth` makes; returns the entries to fetch now.
    func discover(_ references: [(String, WebArchiveResource.Kind)], base: HTTPURL, depth: Int) -> [Int] {
        var toFetch: [Int] = []
        for (reference, kind) in references {
            guard let (url, _) = Self.resolve(reference, against: base) else { continue }
            let key = url.description
            guard byURL[key] == nil else { continue }
            let index = entries.count
            byURL[key] = index
            var entry = Entry(url: url, kind: kind, depth: depth + 1, finalURL: url)
            let isDocument = kind == .frame || kind == .stylesheet || kind == .styleImport
            if options.origins != .any && !allowedOrigins.contains(Self.origin(url)) {
                entry.outcome = .skipped(.crossOrigin)
            } else if isDocument && depth + 1 > options.maxDepth {
                entry.outcome = .skipped(.depthLimit)
            } else if fetchCount >= options.maxResources {
                entry.outcome = .skipped(.resourceLimit)
            } else {
                fetchCount += 1
                toFetch.append(index)
            }
            entries.append(entry)
        }
        return toFetch
    }

    /// Takes a member's result; returns what it leads to (a stylesheet's imports and images, a frame's resources).
    func received(_ result: Result<Fetched, HTTPClientError>, for index: Int) -> [Int] {
        let fetched: Fetched
        switch result {
        case .failure(let error) where error.code == .bodyLimitExceeded:
            entries[index].outcome = .skipped(.byteLimit)
            return []
        case .failure(let error):
            entries[index].outcome = .failed(error)
            return []
        case .success(let value):
            fetched = value
        }
        guard !fetched.leftOrigin else {
            entries[index].outcome = .skipped(.crossOrigin)
            return []
        }
        guard (200..<300).contains(fetched.status) else {
            entries[index].outcome = .httpStatus(fetched.status)
            return []
        }
        guard totalBytes + fetched.body.count <= options.maxTotalBytes else {
            entries[index].outcome = .skipped(.byteLimit)
            return []
        }
        totalBytes += fetched.body.count
        let contentType = fetched.contentType ?? MediaTypes.guess(path: fetched.url.path)
        entries[index].body = fetched.body
        entries[index].contentType = contentType
        entries[index].finalURL = fetched.url
        entries[index].outcome = .archived(byteCount: fetched.body.count, mediaType: contentType, file: nil)
        let entry = entries[index]
        if isStylesheet(entry) {
            let references = CSSURLScanner.references(in: entry.body).map {
                ($0.url, $0.isImport ? WebArchiveResource.Kind.styleImport : .styleResource)
            }
            return discover(references, base: entry.finalURL, depth: entry.depth)
        }
        if isFrameDocument(entry), let document = HTMLDocument(entry.body, encoding: MediaTypes.charset(contentType)) {
            var found: [(String, WebArchiveResource.Kind)] = []
            document.forEachReference { reference, kind in
                found.append((reference, kind))
                return nil
            }
            return discover(found, base: base(of: document, at: entry.finalURL), depth: entry.depth)
        }
        return []
    }

    /// Whether the entry is applied as a stylesheet, and so scanned for `url(…)`s and `@import`s: only what a
    /// `<link rel=stylesheet>` or an `@import` loaded, as browsers apply only those. A `url(…)` (or an image, a
    /// script) that happens to name a `text/css` file is kept as bytes, not followed: followed, a chain
    /// `a.css → url(b.css) → url(c.css) …` escaped ``WebArchiveOptions/maxDepth``, which counts only stylesheets.
    private func isStylesheet(_ entry: Entry) -> Bool {
        guard entry.kind == .stylesheet || entry.kind == .styleImport else { return false }
        let essence = MediaTypes.essence(entry.contentType)
        return MediaTypes.isCSS(essence) || essence == "text/plain"
    }

    private func isFrameDocument(_ entry: Entry) -> Bool {
        entry.kind == .frame && MediaTypes.isHTML(MediaTypes.essence(entry.contentType))
    }

    // MARK: - Writing

    /// Replaces a document's references by what `locate` gives for archived entries, and by absolute URLs for
    /// the rest; then detaches it from its `<base>`.
    func rewrite(_ document: HTMLDocument, base: HTTPURL, locate: (Int) -> String?) {
        document.forEachReference { reference, _ in replacement(reference, base: base, locate: locate) }
        document.detachFromBase { reference in
            guard let (url, fragment) = Self.resolve(reference, against: base) else { return nil }
            return url.description + (fragment.map { "#" + $0 } ?? "")
        }
    }

    private func replacement(_ reference: String, base: HTTPURL, locate: (Int) -> String?) -> String? {
        guard let (url, fragment) = Self.resolve(reference, against: base) else { return nil }
        let suffix = fragment.map { "#" + $0 } ?? ""
        if let index = byURL[url.description], entries[index].isArchived, let local = locate(index) {
            return local + suffix
        }
        return url.description + suffix
    }

    /// The entry as a `data:` URI, its stylesheet or frame rewritten to `data:` URIs first (memoized). A cycle
    /// (a stylesheet importing itself through others, a frame framing its ancestor) is cut with an empty
    /// document of the same type, as browsers ignore a cyclic `@import`.
    func dataURI(_ index: Int) -> String? {
        guard entries[index].isArchived else { return nil }
        if let known = dataURIs[index] { return known }
        let entry = entries[index]
        if inlining.contains(index) { return MediaTypes.dataURI([], mediaType: MediaTypes.essence(entry.contentType)) }
        inlining.insert(index)
        defer { inlining.remove(index) }
        let (bytes, mediaType) = rewritten(index) { self.inlinedDataURI($0) }
        let uri = MediaTypes.dataURI(bytes, mediaType: mediaType)
        dataURIs[index] = uri
        return uri
    }

    /// ``dataURI(_:)`` for one more reference, counted against ``inlineBudget``: nil once the budget is spent
    /// (a stylesheet that references an image thousands of times stops there, not after building them all).
    func inlinedDataURI(_ index: Int) -> String? {
        guard !inliningExceeded, let uri = dataURI(index) else { return nil }
        guard uri.utf8.count <= inlineBudget else {
            inliningExceeded = true
            return nil
        }
        inlineBudget -= uri.utf8.count
        return uri
    }

    /// Gives each archived entry a file name in `resources/`: a digest of its URL and its last path segment
    /// (`3f2a9c1e-logo.png`), so archiving the same page again replaces the same files whatever order the
    /// responses arrived in. Two URLs with the same digest and name (improbable) get `-2`, `-3`, … in order found.
    func assignFiles() {
        var taken: Set<String> = []
        for index in entries.indices where entries[index].isArchived {
            let base = MediaTypes.fileName(
                prefix: MediaTypes.digest(entries[index].url.description), path: entries[index].finalURL.path,
                mediaType: entries[index].contentType)
            var name = base
            var suffix = 1
            // Bounded: each pass tries a new suffix; at most entries.count names are taken.
            while taken.contains(name) {
                suffix += 1
                name = base + "-\(suffix)"
            }
            taken.insert(name)
            entries[index].file = name
        }
    }

    /// The bytes of an entry's file in the directory form: stylesheets and frames refer to their siblings.
    func localBytes(_ index: Int) -> [UInt8] {
        rewritten(index) { self.entries[$0].file }.bytes
    }

    /// An entry's bytes with its references (for stylesheets and frames) replaced, and its media type.
    private func rewritten(_ index: Int, locate: (Int) -> String?) -> (bytes: [UInt8], mediaType: String) {
        let entry = entries[index]
        if isStylesheet(entry) {
            let css = CSSURLScanner.rewrite(entry.body) { replacement($0.url, base: entry.finalURL, locate: locate) }
            return (css, entry.contentType)
        }
        if isFrameDocument(entry), let document = HTMLDocument(entry.body, encoding: MediaTypes.charset(entry.contentType)) {
            rewrite(document, base: base(of: document, at: entry.finalURL), locate: locate)
            // libxml2 writes in the document's encoding, or ASCII with character references when it has none.
            return (document.serialized(), "text/html;charset=" + (document.encoding ?? "utf-8"))
        }
        return (entry.body, entry.contentType)
    }

    /// The public report, in the order resources were found.
    func report(_ output: WebArchiveOutput) -> [WebArchiveResource] {
        entries.map { entry in
            var outcome = entry.outcome ?? .skipped(.resourceLimit)
            if case .archived(let count, let type, _) = outcome, case .directory = output {
                outcome = .archived(byteCount: count, mediaType: type, file: entry.file.map { "resources/" + $0 })
            }
            return WebArchiveResource(url: entry.url, kind: entry.kind, depth: entry.depth, outcome: outcome)
        }
    }

    // MARK: - URLs

    /// `scheme://host:port`.
    static func origin(_ url: HTTPURL) -> String { "\(url.scheme)://\(url.host):\(url.port)" }

    /// A reference resolved against `base`, without its fragment (returned apart), or nil for what is not
    /// fetched: empty, fragment-only, or another scheme (`data:`, `javascript:`, `mailto:`, `about:`, `blob:`),
    /// or not a URL at all. Spaces, non-ASCII characters and the other bytes RFC 3986 forbids are
    /// percent-encoded first, as browsers do.
    static func resolve(_ reference: String, against base: HTTPURL) -> (url: HTTPURL, fragment: String?)? {
        guard !reference.isEmpty, !reference.hasPrefix("#") else { return nil }
        if let scheme = scheme(of: reference), scheme != "http", scheme != "https" { return nil }
        guard var url = try? base.resolving(percentEncoded(reference)) else { return nil }
        let fragment = url.fragment
        url.fragment = nil
        guard url.scheme == "http" || url.scheme == "https" else { return nil }
        return (url, fragment)
    }

    private static func scheme(of reference: String) -> String? {
        var name = ""
        for character in reference {
            if character == ":" { return name.isEmpty ? nil : name.lowercased() }
            guard character.isASCII, character.isLetter || character.isNumber || character == "+" || character == "-" || character == "."
            else { return nil }
            name.append(character)
        }
        return nil
    }

    private static func percentEncoded(_ reference: String) -> String {
        let bytes = Array(reference.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        let hex = Array("0123456789ABCDEF".utf8)
        func isHex(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x66)
        }
        for (offset, byte) in bytes.enumerated() {
            let isValidEscape = byte == UInt8(ascii: "%") && offset + 2 < bytes.count && isHex(bytes[offset + 1]) && isHex(bytes[offset + 2])
            let unsafe = byte <= 0x20 || byte >= 0x7F || "\"<>\\^`{|}".utf8.contains(byte)
                || (byte == UInt8(ascii: "%") && !isValidEscape)
            if unsafe {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension ArchiveCrawl.Entry {
    var isArchived: Bool {
        if case .archived = outcome { return true }
        return false
    }
}
