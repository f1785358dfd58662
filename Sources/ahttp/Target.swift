// One URL of the command line, made ready as curl makes it: a missing scheme means http://, the userinfo becomes
// that URL's credentials (and leaves the URL, so nothing downstream can echo the password), -G data and
// --url-query parts join the query, and the n-th -o (or -O) names its output.

import AsyncHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where one URL's body goes.
enum Destination {
    case stdout
    /// A device or FIFO (`/dev/null`): written as a stream, since a rename would replace the device itself.
    case stream(String)
    /// A regular file: written atomically (Bodies.swift).
    case file(String)
    /// -O with -J: a new file in `directory` (the working directory when nil) named by the response's
    /// Content-Disposition, else `fallback` (-O's name); written atomically, never over an existing file.
    case namedByServer(directory: String?, fallback: String)
}

struct TransferTarget {
    /// The URL to send: scheme added, userinfo removed, query extended, and the bytes a URL may not hold raw in
    /// its path, query and fragment percent-encoded (``curlReadyURL(_:)``).
    var url: String
    /// The URL as curl shows it in %{url_effective} and messages: as given (nothing encoded), the scheme in lower
    /// case, an empty path as "/", an empty query or fragment left out; without the userinfo (``shown(_:)`` puts
    /// the user name back).
    var display: String
    /// The URL's `user:password@`, as -u for this URL.
    var credentials: HTTPCredentials?
    /// The user name from the URL, shown in -w's %{url_effective} as curl shows it, without the password.
    var user: String?

    init(_ raw: String, options: Options) {
        // curl: no scheme means http:// (it guesses others from the host name; ahttp speaks only http(s)).
        var url = raw.contains("://") ? raw : "http://" + raw
        if let (userinfo, range) = Self.userinfo(in: url) {
            // Split at the first ':' before decoding, and each half decoded on its own: a name with an encoded
            // ':' (`a%3Ab:pw@`) is the name "a:b", not "a" with the password "b:pw".
            let parts = userinfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            self.credentials = makeCredentials(user: percentDecoded(String(parts[0])),
                                              password: parts.count > 1 ? percentDecoded(String(parts[1])) : "")
            user = String(parts[0])
            url.removeSubrange(range)
        }
        var query: [String] = options.urlQuery
        if options.getWithQuery, let data = options.data { query.insert(String(decoding: data, as: UTF8.self), at: 0) }
        if !query.isEmpty {
            let fragmentStart = url.firstIndex(of: "#") ?? url.endIndex
            let fragment = url[fragmentStart...]
            var base = String(url[..<fragmentStart])
            if !base.contains("?") {
                // A URL without a path gets one before its query: http://host?q is http://host/?q.
                if let schemeEnd = Substring(base).range(of: "://"), !base[schemeEnd.upperBound...].contains("/") { base += "/" }
                base += "?" + query.joined(separator: "&")
            } else {
                base += (base.hasSuffix("?") || base.hasSuffix("&") ? "" : "&") + query.joined(separator: "&")
            }
            url = base + fragment
        }
        (self.url, self.display) = Self.curlReadyURL(url, pathAsIs: options.pathAsIs)
    }

    /// curl sends what the user typed where AsyncHTTP's `HTTPURL` (RFC 3986, strictly) refuses it: JSON in a query
    /// (`{"a":[1]}`), `|`, non-ASCII, a `%` that starts no escape. So in the path, query and fragment, each byte a URL
    /// may not hold raw is percent-encoded: non-ASCII (its UTF-8 bytes), `"` `<` `>` `\` `^` `` ` `` `{` `|` `}`,
    /// `[` and `]` (ahttp never globs, so they are data; an IPv6 host's brackets are in the authority, left alone),
    /// a `%` not followed by two hex digits (as `%25`), and a `#` inside the fragment. White space and control
    /// characters stay: curl refuses them too (exit 3). The scheme and the authority are left as they are, but for a
    /// non-ASCII host, which is sent in its IDNA ASCII form (`bücher.example` as `xn--bcher-kva.example`, as curl
    /// converts it with libidn2; ``IDNA/withASCIIHost(_:)``) and shown as typed.
    /// The path's `.` and `..` segments are removed (RFC 3986 §5.2.4, as curl squashes them) unless `pathAsIs`
    /// (--path-as-is). Returns the URL to send and the URL to show (`display`).
    static func curlReadyURL(_ url: String, pathAsIs: Bool = false) -> (send: String, display: String) {
        let bytes = Array(url.utf8)
        guard let colon = (0..<max(0, bytes.count - 2)).first(where: {
            bytes[$0] == UInt8(ascii: ":") && bytes[$0 + 1] == UInt8(ascii: "/") && bytes[$0 + 2] == UInt8(ascii: "/")
        }) else { return (url, url) }
        var index = colon + 3
        while index < bytes.count, bytes[index] != UInt8(ascii: "/"), bytes[index] != UInt8(ascii: "?"), bytes[index] != UInt8(ascii: "#") {
            index += 1
        }
        let prefix = Array(bytes[..<index])
        var pathEnd = index
        while pathEnd < bytes.count, bytes[pathEnd] != UInt8(ascii: "?"), bytes[pathEnd] != UInt8(ascii: "#") { pathEnd += 1 }
        let path = pathAsIs ? bytes[index..<pathEnd]
            : Array(URIReference.removeDotSegments(String(decoding: bytes[index..<pathEnd], as: UTF8.self)).utf8)[...]
        var query: ArraySlice<UInt8>?
        var fragment: ArraySlice<UInt8>?
        var position = pathEnd
        if position < bytes.count, bytes[position] == UInt8(ascii: "?") {
            var queryEnd = position + 1
            while queryEnd < bytes.count, bytes[queryEnd] != UInt8(ascii: "#") { queryEnd += 1 }
            query = bytes[(position + 1)..<queryEnd]
            position = queryEnd
        }
        if position < bytes.count { fragment = bytes[(position + 1)...] }

        var send = prefix
        send += encodedURLPart(path, fragment: false)
        if let query { send += [UInt8(ascii: "?")] + encodedURLPart(query, fragment: false) }
        if let fragment { send += [UInt8(ascii: "#")] + encodedURLPart(fragment, fragment: true) }

        // curl's %{url_effective}: the scheme lowered, the authority as typed, "/" for no path, no empty query or fragment.
        var display = bytes[..<colon].map { $0 &- UInt8(ascii: "A") < 26 ? $0 | 0x20 : $0 }
        display += bytes[colon..<index]
        display += path.isEmpty ? [UInt8(ascii: "/")] : Array(path)
        if let query, !query.isEmpty { display += [UInt8(ascii: "?")] + query }
        if let fragment, !fragment.isEmpty { display += [UInt8(ascii: "#")] + fragment }
        return (IDNA.withASCIIHost(String(decoding: send, as: UTF8.self)), String(decoding: display, as: UTF8.self))
    }

    /// One component of ``curlReadyURL(_:)`` with the bytes `HTTPURL` refuses raw percent-encoded.
    private static func encodedURLPart(_ part: ArraySlice<UInt8>, fragment: Bool) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        func isHex(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
        }
        var result: [UInt8] = []
        result.reserveCapacity(part.count)
        var index = part.startIndex
        while index < part.endIndex {
            let byte = part[index]
            let encode: Bool
            switch byte {
            case 0x80...0xFF, UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\\"), UInt8(ascii: "^"),
                 UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "|"), UInt8(ascii: "}"), UInt8(ascii: "["), UInt8(ascii: "]"):
                encode = true
            case UInt8(ascii: "%"):
                encode = !(index + 2 < part.endIndex && isHex(part[index + 1]) && isHex(part[index + 2]))
            case UInt8(ascii: "#"):
                encode = fragment
            default:
                encode = false
            }
            if encode {
                result += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            } else {
                result.append(byte)
            }
            index += 1
        }
        return result
    }

    /// -u (else this URL's userinfo: -u wins, as in curl) with the auth scheme options, and --oauth2-bearer: the
    /// request's authentication. -u holds AWS keys instead under --aws-sigv4, and is not sent.
    func applyAuthentication(_ options: Options, to request: inout HTTPClientRequest) {
        if let user = options.user ?? credentials, options.awsSigV4 == nil {
            request.credentials = user
            request.authenticationSchemes = options.authSchemes
            // curl's -u sends Basic at once; with --digest, --ntlm or --anyauth it waits for the challenge.
            request.sendsCredentialsPreemptively = options.authSchemes == nil || options.authSchemes == [.basic]
        }
        if let bearer = options.bearer { request.bearerToken = bearer }
    }

    /// `text` as shown to the user: the URL's user name put back (never the password), as curl's %{url_effective}.
    /// This URL itself (as sent, or as the library gives it back: host lowered, default port left out) is shown as
    /// ``display``, what the user typed; another one (a redirect's) as it is.
    func shown(_ text: String) -> String {
        let text = text == url || text == (try? HTTPURL(url))?.description ? display : text
        guard let user, let schemeEnd = Substring(text).range(of: "://") else { return HTTPURL.redacting(text) }
        return String(text[..<schemeEnd.upperBound]) + user + "@" + String(text[schemeEnd.upperBound...])
    }

    /// The userinfo of `url` and the range to remove (`user:password@`).
    static func userinfo(in url: String) -> (String, Range<String.Index>)? {
        guard let schemeEnd = Substring(url).range(of: "://") else { return nil }
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return nil }
        return (String(rest[..<at]), schemeEnd.upperBound..<rest.index(after: at))
    }

    /// The n-th URL's output: the n-th -o, else the next -O (or --remote-name-all), else standard output.
    func destination(index: Int, options: Options) throws -> Destination {
        var path: String?
        if index < options.outputs.count {
            path = options.outputs[index]
        } else if options.remoteNameAll || index - options.outputs.count < options.remoteNames {
            let name = try remoteFileName(display)  // as curl: the last segment as typed, nothing encoded
            if options.remoteHeaderName {
                // The directory must be there (or be made) before anything is sent, as for -O alone.
                try prepareDirectory(for: (options.outputDir.map { $0 + "/" } ?? "") + name, create: options.createDirs)
                return .namedByServer(directory: options.outputDir, fallback: name)
            }
            path = name
        }
        guard var path, path != "-" else { return .stdout }
        // curl's --output-dir: the directory, a slash, and the path as it was given (even an absolute one).
        if let directory = options.outputDir { path = directory + "/" + path }
        if isSpecialFile(path) { return .stream(path) }
        try prepareDirectory(for: path, create: options.createDirs)
        return .file(path)
    }
}

/// -O: the last segment of the URL's path.
func remoteFileName(_ url: String) throws -> String {
    let withoutQuery = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
    let withoutFragment = withoutQuery.split(separator: "#", maxSplits: 1).first.map(String.init) ?? withoutQuery
    let whole = Substring(withoutFragment)
    let afterScheme = whole.range(of: "://").map { String(whole[$0.upperBound...]) } ?? withoutFragment
    guard let slash = afterScheme.lastIndex(of: "/") else {
        throw UsageError(message: "-O: '\(HTTPURL.redacting(url))' has no file name in its path", exitCode: 23)
    }
    let name = String(afterScheme[afterScheme.index(after: slash)...])
    guard !name.isEmpty, name != ".", name != ".." else {
        throw UsageError(message: "-O: '\(HTTPURL.redacting(url))' has no file name in its path", exitCode: 23)
    }
    return name
}

/// The directory `path` goes in must exist: --create-dirs makes it (mode 0750, as curl), otherwise a missing one
/// is curl's write error (23) before anything is sent.
func prepareDirectory(for path: String, create: Bool) throws {
    guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
    let directory = String(path[..<slash])
    var info = stat()
    if stat(directory, &info) == 0 { return }
    guard create else {
        throw UsageError(message: "cannot write '\(path)': the directory '\(directory)' does not exist (--create-dirs makes it)",
                         exitCode: 23)
    }
    var built = directory.hasPrefix("/") ? "" : "."
    for component in directory.split(separator: "/") {
        built += "/" + component
        if mkdir(built, 0o750) != 0 && errno != EEXIST {
            throw UsageError(message: "--create-dirs: cannot create '\(built)': \(String(cString: strerror(errno)))", exitCode: 23)
        }
    }
}
