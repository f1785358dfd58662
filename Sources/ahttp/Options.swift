// What the command line asked for, resolved: `AhttpCommand` (Arguments.swift) is what ArgumentParser read;
// `Options` is what the transfers use, with values checked, files named by `@` read, and curl's rules for order
// applied (data joined in the order given, the last proxy option winning).

import AsyncHTTP
import HTTPTypes

struct Options {
    var method: HTTPRequest.Method?
    var headOnly = false
    /// -H, in order; an empty value with `remove` set is curl's `Name:` (drop the header ahttp would send).
    var headers: [(name: String, value: String, remove: Bool)] = []
    var data: [UInt8]?
    /// --json was given: Content-Type and Accept are application/json.
    var json = false
    /// -G: the data goes into the URL's query.
    var getWithQuery = false
    /// --path-as-is: the URL's `/./` and `/../` are sent as they are (curl squashes them by default).
    var pathAsIs = false
    /// --url-query parts, already encoded, joined with '&'.
    var urlQuery: [String] = []
    /// -o values, the n-th for the n-th URL.
    var outputs: [String] = []
    /// How many -O were given (each names the next URL's file after the URLs -o took); all with --remote-name-all.
    var remoteNames = 0
    var remoteNameAll = false
    /// -J: a file -O names takes the response's Content-Disposition name instead, when it has one.
    var remoteHeaderName = false
    var createDirs = false
    /// --post301, --post302, --post303: the redirect codes a POST stays a POST on under -L.
    var keepPost: Set<Int> = []
    /// -4/-6: connect to addresses of one family only.
    var ipAddressFamily: IPAddressFamily?
    /// --output-dir: the directory -o and -O paths are put in (curl: `DIR/` + the path, whatever it is).
    var outputDir: String?
    /// --max-filesize: a response whose Content-Length is larger fails with exit 63 before its body is read.
    var maxFilesize: Int?
    /// -r/--range: the byte ranges asked for (`Range: bytes=…`).
    var range: String?
    var dumpHeader: String?
    var includeHeaders = false
    var verbose = false
    var silent = false
    var showError = false
    var traceASCII: String?
    var insecure = false
    var caFile: String?
    /// --capath: a hashed CA directory trusted besides the system's store or --cacert (curl keeps its default bundle).
    var caPath: String?
    /// --tlsv1.2 / --tlsv1.3: the oldest TLS version accepted (the library's default, 1.2, otherwise).
    var tlsMinimum: TLSConfiguration.Version?
    /// --no-progress-meter: no meter or bar, errors still shown.
    var noProgressMeter = false
    /// --proto and --proto-redir: the schemes allowed for the URLs given and for redirects (of those ahttp speaks).
    var protocols: Set<String> = ["http", "https"]
    var redirectProtocols: Set<String> = ["http", "https"]
    /// -m: nil (or curl's -m 0) for no limit.
    var maxTime: Double?
    /// --connect-timeout: nil (or curl's 0) for curl's default, 300 s.
    var connectTimeout: Double?
    /// -Y/--speed-limit and -y/--speed-time as given (whole numbers, 0 or more); see ``lowSpeedLimit``.
    var speedLimit: Int?
    var speedTime: Int?
    var writeOut: String?
    /// -A: nil keeps AsyncHTTP's User-Agent; "" sends none.
    var userAgent: String?
    var referer: String?
    /// -e ';auto': under -L, each hop's Referer is the URL that redirected to it.
    var autoReferer = false
    var http10 = false
    /// -f: an HTTP error (≥ 400) writes no body and exits 22; --fail-with-body writes it and exits 22.
    var fail = false
    var failWithBody = false
    /// -L: follow redirects (curl does not by default).
    var followRedirects = false
    /// --location-trusted: -u, -H Authorization and -H Cookie go on to the other hosts -L is sent to.
    var locationTrusted = false
    var maxRedirects: Int?
    /// -b: cookie files to read, and `name=value` strings to send as they are.
    var cookieFiles: [String] = []
    var cookieStrings: [String] = []
    /// -c: where to write every cookie at the end, session cookies too (as curl).
    var cookieJarFile: String?
    /// --compressed: ask for gzip/deflate and decode (curl sends no Accept-Encoding without it).
    var compressed = false
    /// -u: credentials for the server. With no scheme option they go out as Basic before any challenge, as curl.
    var user: HTTPCredentials?
    /// --basic / --digest / --ntlm / --anyauth: which scheme answers (curl's default is Basic, sent at once).
    var authSchemes: Set<HTTPAuthenticationScheme>?
    var bearer: String?
    /// --aws-sigv4: -u is the key pair, and every request is signed (AWSSigV4Option.swift), never sent as Basic.
    var awsSigV4: String?
    /// --archive OUT: the page and its resources for offline reading (ArchiveCommand.swift).
    var archiveOutput: String?
    /// -x, --socks5, --socks5-hostname, --socks4, --socks4a: the proxy (the last one given wins, as curl).
    var proxy: ProxyConfiguration?
    var proxyUser: HTTPCredentials?
    /// -x "": no proxy at all, the environment's neither (curl).
    var proxyDisabled = false
    var noProxy: String?
    /// -p, --proxytunnel: the -x proxy tunnels plain http too.
    var proxyTunnel = false
    /// --proxy-insecure, --proxy-cacert, --proxy-cert, --proxy-key: the TLS to an https:// proxy, given with -x or
    /// found in the environment.
    var proxyInsecure = false
    var proxyCAFile: String?
    var proxyCertificate: String?
    var proxyKey: String?
    /// --proxy-basic (the default), --proxy-digest, --proxy-ntlm, --proxy-anyauth: how -U answers the proxy.
    var proxyScheme: ProxyAuthSchemeFlag = .basic
    /// --suppress-connect-headers: -i and -D leave out the proxy's answers to CONNECT.
    var suppressConnectHeaders = false
    var certificate: String?
    var key: String?
    /// --resolve, --connect-to, --unix-socket / --abstract-unix-socket, --happy-eyeballs-timeout-ms.
    var resolve: [ResolveOverride] = []
    var connectTo: [ConnectToOverride] = []
    var unixSocket: UnixSocketAddress?
    var happyEyeballsDelay: Int?
    /// --cache DIR, --cache-policy NAME: the download cache (see Cache.swift).
    var cacheDirectory: String?
    var cachePolicy: HTTPCachePolicy?
    var urls: [String] = []
    /// -F, --data-urlencode, --data-binary @file, -T, -O, -C -, --expect100-timeout (Bodies.swift).
    var bodies = BodyOptions()
    /// --limit-rate, -#, -Z, --parallel-max, --fail-early, --retry* (Flow.swift).
    var flow = FlowOptions()

    /// Whether an error message is shown: always, unless -s without -S.
    var showsErrors: Bool { !silent || showError }
    /// The body goes to a file (for the progress meter): some -o or -O.
    var output: String? { outputs.first ?? (remoteNames > 0 || remoteNameAll ? "-O" : nil) }
}

/// A warning on stderr, as curl prints them (`Warning: …`), unless -s.
func warn(_ text: String, _ options: Options?) {
    warn(text, silent: options?.silent == true)
}

/// ``warn(_:_:)`` for a caller that has only the -s flag (options still being read).
func warn(_ text: String, silent: Bool) {
    if silent { return }
    try? writeAll(2, Array("Warning: \(text)\n".utf8)[...])
}

extension AhttpCommand {
    /// The options resolved, or a `UsageError` saying which value was wrong.
    func options() throws -> Options {
        var options = Options()
        // First: -s mutes the warnings resolving the options may give (-H @FILE, -d @FILE that cannot be read).
        options.silent = verbose.silent
        // --- http
        if let name = http.method {
            guard let method = HTTPRequest.Method(name) else { throw UsageError(message: "invalid method '\(name)'") }
            options.method = method
        }
        for line in http.headers {
            if line.hasPrefix("@") {
                // curl: a file that cannot be read is a warning, and no header (tool_getparam.c).
                let path = String(line.dropFirst())
                guard let bytes = try? readFile(path == "-" ? "/dev/stdin" : path) else {
                    warn("Failed to open \(path)!", options)
                    continue
                }
                let text = String(decoding: bytes, as: UTF8.self)
                // "\r\n" is one Character in Swift: a file with CRLF line ends splits on it too.
                for header in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) where !header.isEmpty {
                    if let header = parseHeader(String(header)) { options.headers.append(header) }
                }
            } else if let header = parseHeader(line) {
                options.headers.append(header)
            }
        }
        options.userAgent = http.userAgent
        // curl's -e: ';auto' anywhere turns on the automatic Referer and ends the value there; what is before it,
        // if anything, is the first request's Referer (tool_getparam.c).
        if let text = http.referer, let auto = text.firstRange(of: ";auto") {
            options.autoReferer = true
            options.referer = auto.lowerBound == text.startIndex ? nil : String(text[..<auto.lowerBound])
        } else {
            options.referer = http.referer
        }
        options.headOnly = http.head
        options.getWithQuery = http.get
        options.followRedirects = http.location || http.locationTrusted
        options.locationTrusted = http.locationTrusted
        options.keepPost = Set([(http.post301, 301), (http.post302, 302), (http.post303, 303)].filter(\.0).map(\.1))
        if let text = http.maxRedirs {
            guard let count = Int(text), count >= -1 else { throw UsageError(message: "invalid --max-redirs '\(text)'") }
            options.maxRedirects = count == -1 ? Int.max : count  // curl: -1 means no limit
        }
        for text in http.cookies {
            // curl: an argument with '=' is cookie data to send; otherwise a file to read.
            if text.contains("=") { options.cookieStrings.append(text) } else { options.cookieFiles.append(text) }
        }
        options.cookieJarFile = http.cookieJar
        options.compressed = http.compressed
        options.http10 = http.http10 && !http.http11
        options.urlQuery = try http.urlQuery.map(encodeURLQuery)
        options.fail = http.fail
        options.failWithBody = http.failWithBody

        // --- post, in the order given
        try resolveData(into: &options)

        // -F and --form-string parts, in the order given.
        let parts = post.form.map { ($0, false) } + post.formString.map { ($0, true) }
        let silent = options.silent
        options.bodies.formParts = try parts.sorted { $0.0.sequence < $1.0.sequence }.map {
            try parseFormPart($0.0.text, literal: $0.1, warn: { warn($0, silent: silent) })
        }

        try checkOneRequestMethod()

        // --- upload
        options.bodies.uploadFile = upload.uploadFile
        if let text = upload.expect100Timeout {
            let seconds = try parseSeconds(text, "--expect100-timeout")
            options.bodies.expect100Timeout = seconds
        }

        // --- output
        options.outputs = output.output.sorted { $0.sequence < $1.sequence }.map(\.text)
        options.remoteNames = output.remoteName
        options.remoteNameAll = output.remoteNameAll
        options.remoteHeaderName = output.remoteHeaderName
        options.bodies.remoteName = output.remoteName > 0 || output.remoteNameAll
        options.createDirs = output.createDirs
        options.outputDir = output.outputDir.flatMap { $0.isEmpty ? nil : $0 }
        if let text = output.maxFilesize {
            do {
                options.maxFilesize = try parseRate(text)
            } catch {
                throw UsageError(message: "invalid --max-filesize '\(text)' (a number of bytes, with K, M or G)")
            }
        }
        options.dumpHeader = output.dumpHeader
        options.includeHeaders = output.include
        if let format = output.writeOut {
            // curl: @FILE reads the format from a file, @- from standard input.
            let path = format.dropFirst()
            options.writeOut = format.hasPrefix("@") ? String(decoding: try readFile(path == "-" ? "/dev/stdin" : String(path)), as: UTF8.self)
                : format
        }
        if let text = output.continueAt {
            guard text == "-" else { throw UsageError(message: "-C: only '-C -' (resume from the partial file) is supported") }
            options.bodies.resume = true
        }
        // curl refuses these pairs whatever their order: -J learns the file's name from the response, after a
        // resumed request would have had to read the partial file, and -J's file could not hold the head.
        if options.remoteHeaderName {
            if options.includeHeaders || options.headOnly {
                throw UsageError(message: "showing headers and --remote-header-name cannot be combined")
            }
            if options.bodies.resume { throw UsageError(message: "--continue-at and --remote-header-name cannot be combined") }
        }

        // --- connection and dns
        if let text = connection.maxTime {
            // curl: 0 means no limit.
            let seconds = try parseSeconds(text, "--max-time")
            options.maxTime = seconds > 0 ? seconds : nil
        }
        if let text = connection.connectTimeout {
            // curl: 0 means its default (300 s).
            let seconds = try parseSeconds(text, "--connect-timeout")
            options.connectTimeout = seconds > 0 ? seconds : nil
        }
        if let text = connection.limitRate { options.flow.limitRate = try parseRate(text) }
        if let text = connection.speedLimit { options.speedLimit = try parseWholeNumber(text, "--speed-limit", "bytes per second") }
        if let text = connection.speedTime { options.speedTime = try parseWholeNumber(text, "--speed-time", "seconds", maximum: Int(maxSecondsInAFlag)) }
        if let path = connection.unixSocket { options.unixSocket = .path(path) }
        if let name = connection.abstractUnixSocket { options.unixSocket = .abstract(name) }
        options.ipAddressFamily = connection.ipFamily.map { $0 == .ipv4 ? .ipv4 : .ipv6 }
        if let text = connection.happyEyeballsTimeout {
            guard let milliseconds = Int(text), milliseconds >= 10 else {
                throw UsageError(message: "--happy-eyeballs-timeout-ms: '\(text)' is not a whole number of at least 10")
            }
            options.happyEyeballsDelay = milliseconds
        }
        if let text = connection.proto { options.protocols = try parseProtocols(text, "--proto") }
        if let text = connection.protoRedir { options.redirectProtocols = try parseProtocols(text, "--proto-redir") }
        options.resolve = try dns.resolve.map { text in try targetOption { try ResolveOverride(text) } }
        options.connectTo = try dns.connectTo.map { text in try targetOption { try ConnectToOverride(text) } }

        // --- auth
        if let text = auth.user { options.user = parseUser(text) }
        switch auth.scheme {
        case .basic: options.authSchemes = [.basic]
        case .digest: options.authSchemes = [.digest]
        case .ntlm: options.authSchemes = [.ntlm]
        case .anyauth: options.authSchemes = Set(HTTPAuthenticationScheme.allCases)
        case nil: break
        }
        options.bearer = auth.bearer
        options.awsSigV4 = auth.awsSigV4
        options.archiveOutput = output.archive

        // --- tls
        options.insecure = tls.insecure
        options.caFile = tls.caCert
        options.caPath = tls.caPath
        options.tlsMinimum = tls.tlsMinimum.map { $0 == .tls13 ? .tls1_3 : .tls1_2 }
        if let text = tls.cert {
            guard !text.contains(":") else {
                throw UsageError(message: "-E: encrypted keys (CERT:PASSWORD) are not supported; give an unencrypted key with --key")
            }
            options.certificate = text
        }
        options.key = tls.key

        // --- proxy: the last of -x, --socks5, --socks5-hostname, --socks4, --socks4a wins
        let proxies = proxy.proxy.map { ($0, ProxyConfiguration.Kind?.none) } + proxy.socks5.map { ($0, .socks5) }
            + proxy.socks5Hostname.map { ($0, .socks5h) } + proxy.socks4.map { ($0, .socks4) } + proxy.socks4a.map { ($0, .socks4a) }
        if let (value, kind) = proxies.max(by: { $0.0.sequence < $1.0.sequence }) {
            if value.text.isEmpty, kind == nil {
                options.proxyDisabled = true  // curl: -x "" turns every proxy off, the environment's too
            } else {
                options.proxy = try parseProxy(value.text, kind: kind)
            }
        }
        if let text = proxy.proxyUser { options.proxyUser = parseUser(text) }
        options.noProxy = proxy.noProxy
        options.proxyTunnel = proxy.proxyTunnel
        options.proxyInsecure = proxy.proxyInsecure
        options.proxyCAFile = proxy.proxyCACert
        if let text = proxy.proxyCert {
            guard !text.contains(":") else {
                throw UsageError(message: "--proxy-cert: encrypted keys (CERT:PASSWORD) are not supported; give an unencrypted key with --proxy-key")
            }
            options.proxyCertificate = text
        }
        options.proxyKey = proxy.proxyKey
        options.suppressConnectHeaders = proxy.suppressConnectHeaders
        if let scheme = proxy.proxyScheme { options.proxyScheme = scheme }

        // --- verbose
        options.verbose = verbose.verbose
        options.silent = verbose.silent
        if let text = http.range { options.range = try parseRange(text, options) }
        options.showError = verbose.showError
        options.traceASCII = verbose.traceASCII
        options.flow.progressBar = verbose.progressBar
        options.noProgressMeter = verbose.noProgressMeter

        // --- curl
        // Config files are read before parsing (ConfigFile.swift); one the parser still saw came inside a group of
        // short options (`-sK FILE`), which that step does not split. Said, not silently skipped.
        if !curl.config.isEmpty {
            throw UsageError(message: "-K inside a group of short options (as in -sK) is not read; write it on its own: -s -K FILE")
        }
        options.pathAsIs = curl.pathAsIs
        options.flow.parallel = curl.parallel
        if let text = curl.parallelMax {
            // curl (tool_getparam.c): above 300 is capped at 300, below 1 is its default, 50.
            guard let count = Int(text) else { throw UsageError(message: "invalid --parallel-max '\(text)' (a whole number)") }
            options.flow.parallelMax = count < 1 ? 50 : min(count, 300)
        }
        options.flow.failEarly = curl.failEarly
        if let text = curl.retry { options.flow.retry = try parseCount(text, "--retry", range: 0...1_000_000) }
        options.flow.retryConnectionRefused = curl.retryConnrefused
        options.flow.retryAllErrors = curl.retryAllErrors
        if let text = curl.retryDelay { options.flow.retryDelay = try parseSeconds(text, "--retry-delay") }
        if let text = curl.retryMaxTime { options.flow.retryMaxTime = try parseSeconds(text, "--retry-max-time") }

        // --- cache
        options.cacheDirectory = cache.cache
        if let text = cache.cachePolicy { options.cachePolicy = try parseCachePolicy(text) }

        // --- URLs: --url values, then the plain arguments (ArgumentParser reads plain arguments last)
        options.urls = (connection.url + urls).sorted { $0.sequence < $1.sequence }.map(\.text)
        guard !options.urls.isEmpty else { throw UsageError(message: "no URL specified") }
        return options
    }

    /// curl's rule: -I (HEAD), -d and the other data options (POST; with -G the GET, or HEAD with -I, that carries
    /// the data in its query), -F (a multipart POST) and -T (PUT) each choose the request, and two different
    /// choices are a usage error (exit 2), not one silently winning. -X only renames the method.
    func checkOneRequestMethod() throws {
        let hasData = !(post.data.isEmpty && post.dataASCII.isEmpty && post.dataRaw.isEmpty && post.dataBinary.isEmpty
            && post.dataURLEncode.isEmpty && post.json.isEmpty)
        var chosen: [String] = []
        func choose(_ name: String) { if !chosen.contains(name) { chosen.append(name) } }
        if http.head { choose("HEAD (-I, --head)") }
        if !post.form.isEmpty || !post.formString.isEmpty { choose("multipart formpost (-F, --form)") }
        if hasData { choose(http.get ? (http.head ? "HEAD (-I, --head)" : "GET (-G, --get)") : "POST (-d, --data)") }
        if upload.uploadFile != nil { choose("PUT (-T, --upload-file)") }
        if chosen.count > 1 {
            throw UsageError(message: "You can only select one HTTP request method! You asked for both \(chosen[0]) and \(chosen[1]).")
        }
    }

    /// -d, --data-ascii, --data-raw, --data-binary, --data-urlencode and --json, joined in the order given: with
    /// '&' as curl joins them, --json pieces with nothing between them. A --data-binary @FILE given first is
    /// streamed from disk (Bodies.swift).
    private func resolveData(into options: inout Options) throws {
        enum Kind { case data, raw, binary, urlencode, json }
        let items = (post.data.map { ($0, Kind.data) } + post.dataASCII.map { ($0, .data) } + post.dataRaw.map { ($0, .raw) }
            + post.dataBinary.map { ($0, .binary) } + post.dataURLEncode.map { ($0, .urlencode) } + post.json.map { ($0, .json) })
            .sorted { $0.0.sequence < $1.0.sequence }
        var previous: Kind?
        for (index, (value, kind)) in items.enumerated() {
            let text = value.text
            // With -G the data goes into the URL's query: read it here, as any other data.
            if index == 0, kind == .binary, text.hasPrefix("@"), text != "@-", !http.get {
                options.bodies.dataBinaryFile = String(text.dropFirst())
                previous = kind
                continue
            }
            var bytes: [UInt8]
            switch kind {
            case .data, .binary, .json:
                if text.hasPrefix("@") {
                    bytes = readDataFile(String(text.dropFirst()), options)
                    // curl's -d strips CR and LF from files; --data-binary and --json keep them.
                    if kind == .data { bytes.removeAll { $0 == 0x0D || $0 == 0x0A } }
                } else {
                    bytes = Array(text.utf8)
                }
            case .raw:
                bytes = Array(text.utf8)
            case .urlencode:
                if !text.contains("="), let at = text.firstIndex(of: "@"),
                   (try? readFile(String(text[text.index(after: at)...]))) == nil {
                    // curl: [name]@FILE that cannot be read warns (naming the whole argument) and adds nothing, not
                    // even the name.
                    warn("Couldn't read data from file \"\(text)\", this makes an empty POST.", options)
                    bytes = []
                } else {
                    bytes = try dataURLEncode(text)
                }
            }
            if kind == .json { options.json = true }
            if let existing = options.data {
                options.data = existing + (kind == .json && previous == .json ? [] : Array("&".utf8)) + bytes
            } else {
                options.data = bytes
            }
            previous = kind
        }
    }
}

/// curl's protocol list (--proto, --proto-redir): comma-separated names, each after optional modifiers: `+` adds
/// (the default), `-` removes, `=` allows only these; `all` is every protocol. Starts from every protocol; ahttp
/// speaks http and https, so other names change nothing (curl ignores names it does not know, too).
func parseProtocols(_ text: String, _ flag: String) throws -> Set<String> {
    let spoken: Set<String> = ["http", "https"]
    var allowed = spoken
    for token in text.split(separator: ",") {
        var name = Substring(token.trimmingCharacters(" "))
        var modifier: Character = "+"
        while let first = name.first, first == "+" || first == "-" || first == "=" {
            modifier = first
            name = name.dropFirst().trimmingCharacters(" ")
        }
        guard !name.isEmpty else { throw UsageError(message: "invalid \(flag) '\(text)'") }
        let names: Set<String> = name.lowercased() == "all" ? spoken : [name.lowercased()]
        switch modifier {
        case "=": allowed = names
        case "-": allowed.subtract(names)
        default: allowed.formUnion(names)
        }
    }
    return allowed.intersection(spoken)
}

extension Substring {
    func trimmingCharacters(_ character: Character) -> Substring {
        var text = self
        while text.first == character { text = text.dropFirst() }
        while text.last == character { text = text.dropLast() }
        return text
    }
}

/// A file named by `-d @FILE`: curl warns and sends an empty body when it cannot be read.
private func readDataFile(_ path: String, _ options: Options) -> [UInt8] {
    do {
        return try readFile(path == "-" ? "/dev/stdin" : path)
    } catch {
        warn("Couldn't read data from file \"\(path)\", this makes an empty POST.", options)
        return []
    }
}

/// `-H` as curl reads it: `Name: value`; `Name:` removes a header ahttp would send; `Name;` sends it empty; anything
/// else (`-H ''`, `-H foo`) is nil, no header, as libcurl passes over a custom header without a colon or semicolon.
func parseHeader(_ line: String) -> (name: String, value: String, remove: Bool)? {
    if let colon = line.firstIndex(of: ":") {
        let name = String(line[..<colon])
        let value = String(line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
        return (name, value, value.isEmpty)
    }
    if line.hasSuffix(";") { return (String(line.dropLast()), "", false) }
    return nil
}

/// `--url-query`: as `--data-urlencode` encodes, except that a leading '+' sends the rest as it is.
func encodeURLQuery(_ text: String) throws -> String {
    if text.hasPrefix("+") { return String(text.dropFirst()) }
    return String(decoding: try dataURLEncode(text), as: UTF8.self)
}

/// curl's -r (tool_getparam.c): a number alone (no dash) is read as `N-`, with curl's warning; other characters
/// than digits, `-` and `,` are sent as given, with curl's warning that the answer is uncertain. A range whose
/// start does not fit a 64-bit offset is refused.
func parseRange(_ text: String, _ options: Options) throws -> String {
    if let first = text.unicodeScalars.first, ("0"..."9").contains(first), !text.contains("-") {
        guard let start = Int64(text.prefix { ("0"..."9").contains($0) }) else {
            throw UsageError(message: "-r: unsupported range point '\(text)'")
        }
        warn("A specified range MUST include at least one dash (-). Appending one for you!", options)
        return "\(start)-"
    }
    if text.contains(where: { !("0"..."9").contains($0) && $0 != "-" && $0 != "," }) {
        warn("Invalid character is found in given range. A specified range MUST have only digits in 'start'-'stop'. "
             + "The server's response to this request is uncertain.", options)
    }
    return text
}
