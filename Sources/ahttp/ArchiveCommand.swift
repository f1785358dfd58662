import AsyncHTTP
import AsyncHTTPWebArchive

/// `ahttp --archive OUT URL`: saves the page at `url` with its resources for offline reading (AsyncHTTPWebArchive).
///
/// `OUT` ending in `.html` (or `.htm`) is one self-contained file with `data:` URIs; anything else is a directory
/// with `index.html` and `resources/`. Resources from other origins are fetched too, as a browser viewing the page
/// would (the library's default is the page's origin only). `page` carries -u (or the URL's userinfo), the auth
/// scheme options and --oauth2-bearer: they go with the page and the resources on its origin, as a normal transfer's
/// go only to the host it names. Each resource that could not be archived is listed on stderr unless `silent`; a
/// resource's failure does not fail the command. The page's failure is shown unless `showsErrors` is off (-s without
/// -S, as curl).
///
/// Returns curl-style exit status: 0; the client's code for a page that could not be fetched (6, 7, 28, …);
/// 22 for a page answered with 4xx/5xx (as `curl -f`); 23 when the archive cannot be written; 1 for a page that is
/// not HTML; 63 for a page past the size limit; 3 for an invalid URL; 42 when cancelled.
func runArchive(client: HTTPClient, page: HTTPClientRequest, output: String, silent: Bool, showsErrors: Bool) async -> Int32 {
    var options = WebArchiveOptions()
    options.origins = .any
    let archiver = WebArchiver(client: client, options: options)
    let lowercased = output.lowercased()
    let format: WebArchiveOutput = lowercased.hasSuffix(".html") || lowercased.hasSuffix(".htm")
        ? .singleFile(output) : .directory(output)
    do {
        let result = try await archiver.archive(page, to: format)
        if !silent {
            for resource in result.missing { printError("not archived: \(resource)") }
        }
        return 0
    } catch {
        if showsErrors { printError(HTTPURL.redacting(error.description)) }
        switch error.code {
        case .invalidURL: return 3
        case .pageFailed: return error.underlying.map(curlExitCode) ?? 1
        case .pageStatus: return 22  // CURLE_HTTP_RETURNED_ERROR
        case .notHTML: return 1
        case .pageTooLarge: return 63  // CURLE_FILESIZE_EXCEEDED
        case .noCache: return 2
        case .outputFailed: return 23  // CURLE_WRITE_ERROR
        case .outputTooLarge: return 63  // CURLE_FILESIZE_EXCEEDED
        case .cancelled: return 42  // CURLE_ABORTED_BY_CALLBACK
        case .parserUnavailable: return 2  // CURLE_FAILED_INIT
        }
    }
}
