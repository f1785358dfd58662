import AsyncHTTP

/// What `WebArchiver.archive(_:to:)` made: the page and, resource by resource, what happened to each.
///
/// A resource that could not be archived does not fail the page: it is listed here with the reason, and its
/// reference in the archive is left pointing at its absolute URL (so it still loads when a network is there).
public struct WebArchiveResult: Sendable {
    /// The page's URL after redirects: the base its relative references were resolved against (unless the
    /// page has a `<base href>`).
    public var pageURL: HTTPURL
    /// The page as archived: for ``WebArchiveOutput/singleFile(_:)`` the whole self-contained file; for
    /// ``WebArchiveOutput/directory(_:)`` its `index.html`; for ``WebArchiveOutput/downloadCache`` the bytes the
    /// server sent.
    public var document: [UInt8]
    /// Every resource the page (and its frames and stylesheets) referred to, in the order they were found;
    /// each URL once.
    public var resources: [WebArchiveResource]
    /// Bytes fetched and kept: the page and every archived resource, as received.
    public var totalBytes: Int

    /// The resources that were archived.
    public var archived: [WebArchiveResource] { resources.filter { $0.isArchived } }
    /// The resources that were not: failed, or skipped by a limit or the origin policy.
    public var missing: [WebArchiveResource] { resources.filter { !$0.isArchived } }

    /// The entry for `url` (absolute, without a fragment), if the page referred to it.
    public func resource(_ url: String) -> WebArchiveResource? { resources.first { $0.url.description == url } }
}

/// One resource a page referred to, and what happened to it.
public struct WebArchiveResource: Sendable, CustomStringConvertible {
    /// What kind of reference found the resource.
    public enum Kind: String, Sendable, Hashable {
        /// `<img src>`, `<img srcset>`, `<picture><source srcset>`, `<input type=image>`, `<video poster>`.
        case image
        /// `<link rel=stylesheet href>`.
        case stylesheet
        /// `@import` in a stylesheet (a stylesheet too).
        case styleImport
        /// `url(…)` in a stylesheet, a `<style>` element or a `style` attribute (images, fonts, cursors).
        case styleResource
        /// `<script src>`.
        case script
        /// `<iframe src>`, `<frame src>`: an HTML document archived with its own resources.
        case frame
        /// `<link rel=icon href>` (and `shortcut icon`, `apple-touch-icon`).
        case icon
        /// `<object data>`, `<embed src>`.
        case embedded
    }

    /// Why a resource was not fetched at all.
    public enum SkipReason: String, Sendable, Hashable {
        /// Another origin, and ``WebArchiveOptions/origins`` does not allow it.
        case crossOrigin = "cross-origin"
        /// ``WebArchiveOptions/maxResources`` resources were already taken.
        case resourceLimit = "resource limit"
        /// The resource would have taken the archive past ``WebArchiveOptions/maxTotalBytes``.
        case byteLimit = "byte limit"
        /// A frame or stylesheet nested deeper than ``WebArchiveOptions/maxDepth``.
        case depthLimit = "depth limit"
    }

    /// What happened.
    public enum Outcome: Sendable {
        /// Fetched and archived: its size as received, its media type, and for ``WebArchiveOutput/directory(_:)``
        /// its file, relative to the directory (`resources/3f2a9c1e-logo.png`).
        case archived(byteCount: Int, mediaType: String, file: String?)
        /// The server answered with a status other than 2xx.
        case httpStatus(Int)
        /// The request failed (connection refused, timeout, TLS, …): the client's error.
        case failed(HTTPClientError)
        /// Not fetched.
        case skipped(SkipReason)
    }

    /// The resource's absolute URL, without a fragment.
    public var url: HTTPURL
    /// The reference that found it first.
    public var kind: Kind
    /// How many frames or stylesheets deep it was found: 1 for what the page itself refers to.
    public var depth: Int
    /// What happened to it.
    public var outcome: Outcome

    /// Whether the resource is in the archive.
    public var isArchived: Bool {
        if case .archived = outcome { return true }
        return false
    }

    /// One line: `image http://host/logo.png: archived (1234 bytes, image/png)`; passwords are not shown.
    public var description: String {
        let what: String
        switch outcome {
        case .archived(let count, let type, _): what = "archived (\(count) bytes, \(type))"
        case .httpStatus(let code): what = "HTTP \(code)"
        case .failed(let error): what = "failed: \(error)"
        case .skipped(let reason): what = "skipped (\(reason.rawValue))"
        }
        return "\(kind.rawValue) \(url.redactedDescription): \(what)"
    }
}

/// Why a page could not be archived. A resource's failure is never one of these (see ``WebArchiveResource``).
public struct WebArchiveError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, Hashable {
        /// The page's URL is not an absolute `http` or `https` URL.
        case invalidURL = "invalid URL"
        /// Fetching the page failed; ``underlying`` is the client's error.
        case pageFailed = "page failed"
        /// The server answered the page with a status other than 2xx; see ``status``.
        case pageStatus = "page status"
        /// The page is not HTML (its `Content-Type` says otherwise), or libxml2 could not read it.
        case notHTML = "not HTML"
        /// The page alone is larger than ``WebArchiveOptions/maxTotalBytes``.
        case pageTooLarge = "page too large"
        /// ``WebArchiveOutput/downloadCache`` was asked of a client without a cache.
        case noCache = "no cache"
        /// The archive could not be written (the message names the file and the OS error).
        case outputFailed = "output failed"
        /// A single-file archive would be larger than ``WebArchiveOptions/maxSingleFileBytes``: every reference
        /// to a resource holds its whole `data:` URI, so a page that references one resource many times grows
        /// without bound. Nothing is written; archive into a directory instead.
        case outputTooLarge = "output too large"
        /// The task was cancelled.
        case cancelled
        /// libxml2, which parses the page, could not be loaded (it is loaded on first use, not at program start);
        /// the message gives the dynamic loader's reason. Install the system's libxml2 (Debian: `libxml2`).
        case parserUnavailable = "parser unavailable"
    }

    /// What went wrong.
    public var code: Code
    /// One line saying what, with the URL (without its password) or file.
    public var message: String
    /// The HTTP status, for ``Code/pageStatus``.
    public var status: Int?
    /// The client's error, for ``Code/pageFailed`` and ``Code/invalidURL``.
    public var underlying: HTTPClientError?

    /// Makes an error; the library's own errors are made for you.
    public init(_ code: Code, _ message: String, status: Int? = nil, underlying: HTTPClientError? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.underlying = underlying
    }

    /// `web archive: <code>: <message>`.
    public var description: String { "web archive: \(code.rawValue): \(message)" }
}
