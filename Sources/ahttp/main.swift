// ahttp: a curl-like command line over AsyncHTTP (docs/cli.md).
//
//   Arguments.swift   the options, declared for swift-argument-parser, grouped as curl's --help groups them
//   ConfigFile.swift  -K files, spliced into the arguments before parsing
//   Options.swift     what the arguments ask for, resolved and checked
//   Target.swift      one URL made ready: scheme, credentials, query, its -o
//   WriteOut.swift    -w, -D and -i's heads, from an observer of the client's events
//   WarningLog.swift  the client's log: its warnings as curl's `Warning: …` lines, none under -s
//   Trace.swift       --trace-ascii
//   Bodies.swift, Flow.swift, Cache.swift   bodies on disk; rate, progress, -Z, --retry; the cache
//
// Several URLs are fetched in order over the same pool, as curl does. The exit status is 0 whatever the HTTP
// status (22 with -f), and curl's number for a transport, TLS or protocol failure (6, 7, 28, 35, 60, …), with a
// one-line message on stderr; with several URLs, the last transfer's.

import ArgumentParser
import AsyncHTTP
import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `user:password`, with `DOMAIN\user` for NTLM, as curl's -u and -U take it. No colon: an empty password
/// (curl would prompt).
func parseUser(_ text: String) -> HTTPCredentials {
    let (user, password) = text.firstIndex(of: ":").map { (String(text[..<$0]), String(text[text.index(after: $0)...])) }
        ?? (text, "")
    return makeCredentials(user: user, password: password)
}

/// A user name and its password, the name's `DOMAIN\` (NTLM) split off.
func makeCredentials(user: String, password: String) -> HTTPCredentials {
    if let slash = user.firstIndex(of: "\\") {
        return HTTPCredentials(username: String(user[user.index(after: slash)...]), password: password,
                               domain: String(user[..<slash]))
    }
    return HTTPCredentials(username: user, password: password)
}

func parseProxy(_ text: String, kind: ProxyConfiguration.Kind?) throws -> ProxyConfiguration {
    do {
        var proxy = try ProxyConfiguration(url: kind.map { "\($0.rawValue)://" + text } ?? text)
        if kind == nil, !text.contains("://") { proxy.kind = .http }
        return proxy
    } catch {
        // The value as given may hold a password (`user:secret@host:bad`): it is shown without its userinfo.
        throw UsageError(message: "invalid proxy '\(redactingUserinfo(text))': \(error.message)")
    }
}

/// `[scheme://][userinfo@]rest` without its userinfo, for a message: a proxy value need not have a scheme, so
/// ``HTTPURL/redacting(_:)`` (which looks for `scheme://user@`) would miss `user:secret@host`.
/// Any `@` counts, also one after a `/`: a password may hold `/`, `?` or `#` unencoded (`user:pa/ss@host`), and a
/// proxy value has no path whose `@` would be lost.
func redactingUserinfo(_ text: String) -> String {
    let start = Substring(text).range(of: "://")?.upperBound ?? text.startIndex
    guard let at = text[start...].lastIndex(of: "@") else { return text }
    return String(text[..<start]) + String(text[text.index(after: at)...])
}

/// `-U` without `-x`: curl gives the proxy user to whichever proxy it uses, the environment's too. The library
/// reads the proxy variables when the client is made, so each one set (and valid) is rewritten here, before that,
/// with the user in it (percent-encoded). A `DOMAIN\` in the user name stays part of the name.
func addProxyUserToEnvironment(_ user: HTTPCredentials) {
    let name = (user.domain.map { $0 + "\\" } ?? "") + user.username
    let userinfo = percentEncodedUserinfo(name) + ":" + percentEncodedUserinfo(user.password) + "@"
    for variable in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
        guard let raw = getenv(variable).map({ String(cString: $0) }), !raw.isEmpty,
              let proxy = try? ProxyConfiguration(url: raw) else { continue }
        let hostAndPort = proxy.description.dropFirst(proxy.kind.rawValue.utf8.count + 3)  // after "kind://"
        setenv(variable, "\(proxy.kind.rawValue)://\(userinfo)\(hostAndPort)", 1)
    }
}

/// Every byte but RFC 3986's unreserved ones percent-encoded: safe in a URL's user name or password.
func percentEncodedUserinfo(_ text: String) -> String {
    let hex = Array("0123456789ABCDEF".utf8)
    var bytes: [UInt8] = []
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            bytes.append(byte)
        default:
            bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}

struct UsageError: Error {
    var message: String
    /// 2 for a command line ahttp cannot read; curl's own code where curl has one (49 for a bad --resolve).
    var exitCode: Int32 = 2
}

/// A --resolve or --connect-to value, its error as a usage error.
func targetOption<Value>(_ parse: () throws -> Value) throws -> Value {
    do {
        return try parse()
    } catch let error as HTTPClientError {
        throw UsageError(message: error.message, exitCode: 49)  // CURLE_SETOPT_OPTION_SYNTAX
    }
}

func readFile(_ path: String) throws -> [UInt8] {
    // "e": close-on-exec in the open itself (glibc, the BSDs).
    guard let file = fopen(path, "rbe") else { throw UsageError(message: "cannot read '\(path)': \(String(cString: strerror(errno)))") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let n = fread(&buffer, 1, buffer.count, file)
        if n <= 0 { break }
        bytes.append(contentsOf: buffer[0..<n])
    }
    return bytes
}

/// Where the body goes: stdout or a file (opened once, for every URL, as curl does with one -o).
final class Sink {
    private let fd: Int32
    private let ownsFile: Bool
    init(path: String?) throws {
        if let path {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw UsageError(message: "cannot write '\(path)': \(String(cString: strerror(errno)))") }
            self.fd = fd
            ownsFile = true
        } else {
            fd = 1
            ownsFile = false
        }
    }
    /// Standard output, not closed.
    static var standardOutput: Sink { Sink(fd: 1) }
    private init(fd: Int32) {
        self.fd = fd
        ownsFile = false
    }
    func write(_ bytes: ArraySlice<UInt8>) throws {
        try writeAll(fd, bytes)
    }
    func write(_ text: String) throws { try write(Array(text.utf8)[...]) }
    deinit { if ownsFile { close(fd) } }
}

func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) throws {
    try bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw UsageError(message: "failed writing the body: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }
}

func printError(_ text: String) {
    try? writeAll(2, Array("ahttp: \(text)\n".utf8)[...])
}

func printStdout(_ text: String) {
    try? writeAll(1, Array(text.utf8)[...])
}

/// curl's exit codes, so scripts written for curl keep working.
func curlExitCode(_ error: HTTPClientError) -> Int32 {
    switch error.code {
    // curl: 1 for a scheme it was built without (CURLE_UNSUPPORTED_PROTOCOL), 3 for a malformed URL.
    case .invalidURL: error.message.hasPrefix("unsupported scheme") ? 1 : 3
    case .dnsFailure: 6
    case .connectFailed: 7
    case .malformedResponse: 8
    case .timeout: 28
    case .tlsHandshakeFailed: 35
    case .certificateInvalid: 60
    case .connectionClosed: error.bytesReceived == 0 ? 52 : 18
    case .ioFailure: 56
    case .headerLimitExceeded, .bodyLimitExceeded: 63
    case .invalidRequest: 43
    case .tooManyRedirects, .redirectLoop: 47  // CURLE_TOO_MANY_REDIRECTS
    case .decompressionFailed: 61
    case .authenticationFailed: 67
    // curl: a CONNECT the proxy refused is CURLE_RECV_ERROR ("CONNECT tunnel failed, response 407"); SOCKS is 97.
    case .proxyFailed: error.proxyStatus != nil ? 56 : 97
    case .cancelled, .shutdown: 42
    case .redirectRefused, .bodyNotReplayable, .bodyInUse: 1
    case .invalidConfiguration: 2  // CURLE_FAILED_INIT
    }
}

extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.range(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

extension Substring {
    func range(of target: String) -> Range<Index>? {
        let needle = Array(target.utf8)
        guard !needle.isEmpty else { return nil }
        var index = startIndex
        while index < endIndex {
            if self[index...].utf8.starts(with: needle) {
                return index..<self.utf8.index(index, offsetBy: needle.count)
            }
            index = self.index(after: index)
        }
        return nil
    }
}

/// What ahttp does after parsing, or the status to exit with.
enum CommandLineOutcome {
    case run(Options)
    case exit(Int32)
}

/// The command line read as curl reads it: `-K` files spliced in, `--help CATEGORY`, then ArgumentParser. Help,
/// completion scripts and usage errors are printed here.
func parseCommandLine(_ raw: [String]) -> CommandLineOutcome {
    // The common command lines without ArgumentParser's startup cost (QuickArguments.swift); the same Options.
    if let quick = quickOptions(raw) {
        assert(quickOptionsFingerprint(quick) == (try? AhttpCommand.parse(raw).options()).map(quickOptionsFingerprint),
               "quickOptions and ArgumentParser read \(raw) differently")
        return .run(quick)
    }
    if let at = raw.firstIndex(where: { $0 == "--help" || $0 == "-h" }), at + 1 < raw.count,
       let text = categoryHelp(raw[at + 1], fullHelp: AhttpCommand.helpMessage(columns: 110)) {
        printStdout(text)
        return .exit(0)
    }
    let command: AhttpCommand
    var arguments = raw
    do {
        arguments = try expandConfigFiles(raw)
        command = try AhttpCommand.parse(arguments)
        if command.curl.showVersion {  // curl's -V: the version, whatever else is on the line
            printStdout((AhttpCommand.configuration.version) + "\nProtocols: http https\n")
            return .exit(0)
        }
    } catch let error as UsageError {
        printError(error.message)
        return .exit(error.exitCode)
    } catch {
        if AhttpCommand.exitCode(for: error) == .success {
            printStdout(AhttpCommand.fullMessage(for: error) + "\n")
            return .exit(0)
        }
        // ArgumentParser's message, in curl's lower case ("unknown option '--x'"), and curl's status 2.
        var message = AhttpCommand.message(for: error)
        if let first = message.first { message = first.lowercased() + message.dropFirst() }
        printError(message)
        printError("try 'ahttp --help' or 'ahttp --help all' for more information")
        return .exit(2)
    }
    do {
        let options = try command.options()
        if options.fail && options.failWithBody { throw failAndFailWithBody(arguments) }
        return .run(options)
    } catch let error as UsageError {
        printError(error.message)
        if error.exitCode == 2 { printError("try 'ahttp --help' for more information") }
        return .exit(error.exitCode)
    } catch {
        printError("\(error)")
        return .exit(2)
    }
}

/// curl's refusal of -f with --fail-with-body (exit 2, PARAM_BAD_USE), naming the one given last as curl names the
/// option that made the pair.
func failAndFailWithBody(_ arguments: [String]) -> UsageError {
    let withBody = arguments.lastIndex(of: "--fail-with-body") ?? -1
    let fail = arguments.lastIndex { $0 == "--fail" || $0 == "-f" } ?? -1
    return UsageError(message: "You must select either --fail or --fail-with-body, not both.\n"
                      + "ahttp: option \(withBody > fail ? "--fail-with-body" : "-f"): is badly used here")
}

func run() async -> Int32 {
    let options: Options
    switch parseCommandLine(Array(CommandLine.arguments.dropFirst())) {
    case .exit(let status): return status
    case .run(let parsed): options = parsed
    }

    var configuration = HTTPClient.Configuration()
    configuration.logger = WarningLog.logger(silent: options.silent)
    if options.insecure { configuration.tls.certificateVerification = false }
    if let caFile = options.caFile { configuration.tls.trustRoots = .file(caFile) }
    configuration.tls.additionalTrustDirectory = options.caPath
    if let minimum = options.tlsMinimum { configuration.tls.minimumVersion = minimum }
    applyCurlTransferDefaults(options, to: &configuration)
    configuration.resolve = options.resolve
    configuration.connectTo = options.connectTo
    configuration.unixSocket = options.unixSocket
    if let delay = options.happyEyeballsDelay { configuration.connectionAttemptDelay = .milliseconds(delay) }
    configuration.ipAddressFamily = options.ipAddressFamily
    configuration.compression.acceptsCompressedResponses = options.compressed
    if let agent = options.userAgent, !options.headers.contains(where: { !$0.remove && $0.name.lowercased() == "user-agent" }) {
        // A -H User-Agent wins (the encoder sends no other), so -A counts only without one. A line break or NUL in
        // it is a header ahttp refuses to send (43), as the encoder refuses it in a request's own field.
        if let what = HTTPClient.Configuration.lineBreakOrNUL(in: agent) {
            if options.showsErrors { printError("header 'User-Agent' value contains \(what)") }
            return 43
        }
        configuration.userAgent = agent.isEmpty ? nil : agent
    }
    if options.headers.contains(where: { $0.remove && $0.name.lowercased() == "user-agent" }) { configuration.userAgent = nil }
    // As curl: the cookie engine runs only with a cookie file to read (-b FILE) or write (-c).
    var jar: CookieJar?
    if !options.cookieFiles.isEmpty || options.cookieJarFile != nil {
        jar = CookieJar(storage: CommandLineCookieFiles(read: options.cookieFiles, write: options.cookieJarFile))
        do { try await jar?.load() } catch {
            printError("cannot read cookies: \(error)")
            return 26  // CURLE_READ_ERROR
        }
    }
    configuration.cookieJar = jar
    if let certificate = options.certificate {
        configuration.tls.clientCertificate = .init(certificateFile: certificate, privateKeyFile: options.key ?? certificate)
    }
    // As curl: credentials given with -u (or in a URL) go where the user sent them, plain http included.
    // (--oauth2-bearer too: curl sends the token wherever the user points it.)
    configuration.authentication.allowsBasicOverPlainHTTP = true
    if options.proxyDisabled {
        configuration.proxy = .none  // curl's -x "": no proxy at all, the environment's neither
    } else if var proxy = options.proxy {
        if let proxyUser = options.proxyUser { proxy.credentials = proxyUser }
        proxy.alwaysTunnel = options.proxyTunnel
        proxy.tls = options.proxyTLS
        let (preemptive, schemes) = options.proxyAuthentication
        proxy.sendsCredentialsPreemptively = preemptive && proxy.credentials != nil
        proxy.authenticationSchemes = schemes
        configuration.proxy = .proxy(proxy, bypass: options.noProxy ?? "")
    } else {
        // curl applies the proxy's TLS options, -p and the --proxy-… schemes to the environment's proxy too.
        let (preemptive, schemes) = options.proxyAuthentication
        configuration.environmentProxy = EnvironmentProxyOptions(
            tls: options.proxyTLS, alwaysTunnel: options.proxyTunnel, sendsCredentialsPreemptively: preemptive,
            authenticationSchemes: schemes)
        if let noProxy = options.noProxy {
            // --noproxy overrides no_proxy for the environment's proxies.
            setenv("no_proxy", noProxy, 1)
            unsetenv("NO_PROXY")
        }
        if let proxyUser = options.proxyUser { addProxyUserToEnvironment(proxyUser) }
    }
    let recorder = TransferRecorder()
    configuration.observers.append(recorder)
    if options.verbose { configuration.observers.append(VerboseHeads()) }
    if let path = options.traceASCII {
        do { configuration.observers.append(try TraceASCII(path: path)) } catch let error as UsageError {
            printError(error.message)
            return 23
        } catch { return 23 }
    }
    if let directory = options.cacheDirectory {
        do { configuration.cache = try makeCache(directory: directory, logger: configuration.logger) } catch let error as UsageError {
            printError(error.message)
            return 23  // CURLE_WRITE_ERROR
        } catch { return 23 }
    }
    let headerDump: Sink?
    do { headerDump = try options.dumpHeader.map { try Sink(path: $0 == "-" ? nil : $0) } } catch let error as UsageError {
        printError(error.message)
        return 23
    } catch { return 23 }
    var awsSigning: AWSSigV4Provider?
    if let provider = options.awsSigV4 {
        do {
            let signing = try AWSSigV4Provider(provider: provider, user: options.user)
            // --archive: only the page's origin is signed (its resources elsewhere get no credentials either).
            let pageOrigin = options.archiveOutput == nil ? nil
                : options.urls.first.flatMap { CommandLineAWSSigning.origin(of: TransferTarget($0, options: options).url) }
            configuration.middleware.append(CommandLineAWSSigning(provider: signing, origin: pageOrigin))
            awsSigning = signing
        } catch {
            printError(error.message)
            return error.exitCode
        }
    }
    // libcurl lets a redirect go only where both --proto and --proto-redir allow.
    let redirectProtocols = options.redirectProtocols.intersection(options.protocols)
    if redirectProtocols != ["http", "https"] {
        configuration.middleware.append(RedirectProtocols(allowed: redirectProtocols))
    }
    if let limit = options.maxFilesize { configuration.middleware.append(MaxFilesize(limit: limit)) }
    if options.autoReferer { configuration.middleware.append(AutoReferer()) }
    if options.flow.parallel, options.flow.retry > 0 {
        configuration.middleware.insert(RetryTransientFailures(options: options), at: 0)
    }
    let client = HTTPClient(configuration: configuration)
    let stdout = Sink.standardOutput
    if let output = options.archiveOutput {
        guard let url = options.urls.first else {
            printError("--archive: no URL given")
            return 2
        }
        let target = TransferTarget(url, options: options)
        do {
            _ = try awsSigning?.scope(for: target.url)
        } catch {
            if options.showsErrors { printError(error.message) }
            await client.shutdown()
            return error.exitCode
        }
        var page = HTTPClientRequest(url: target.url)
        target.applyAuthentication(options, to: &page)
        let status = await runArchive(client: client, page: page, output: output, silent: options.silent,
                                      showsErrors: options.showsErrors)
        await client.shutdown()
        return status
    }

    var status: Int32 = 0
    var parallelJobs: [ParallelJob] = []
    for (index, rawURL) in options.urls.enumerated() {
        if options.flow.failEarly, !options.flow.parallel, status != 0 { break }
        recorder.reset()
        let target = TransferTarget(rawURL, options: options)
        if let scheme = RedirectProtocols.scheme(of: target.url), ["http", "https"].contains(scheme),
           !options.protocols.contains(scheme) {
            // curl's CURLE_UNSUPPORTED_PROTOCOL, before anything is sent.
            if options.showsErrors { printError("\(HTTPURL.redacting(target.shown(target.url))): protocol \"\(scheme)\" is disabled by --proto") }
            status = 1
            continue
        }
        do {
            // --aws-sigv4 without a region or service reads them from this URL's host (curl, per transfer).
            _ = try awsSigning?.scope(for: target.url)
        } catch {
            if options.showsErrors { printError(error.message) }
            status = error.exitCode
            continue
        }
        var request = HTTPClientRequest(url: target.url)
        if options.headOnly { request.method = .head }
        if let data = options.data, !options.getWithQuery {
            request.method = .post
            request.body = .bytes(data)
            request.headers[.contentType] = options.json ? "application/json" : "application/x-www-form-urlencoded"
        }
        if options.json { request.headers[.accept] = "application/json" }
        if let failure = applyBodiesReporting(options, to: &request) {
            status = failure
            continue
        }
        if let method = options.method { request.method = method }
        if let policy = options.redirectPolicy(for: request.method, base: configuration.redirectPolicy) {
            request.redirectPolicy = policy
        }
        if request.headers[.accept] == nil { request.headers[.accept] = "*/*" }  // curl's default
        if let referer = options.referer { request.headers[.referer] = referer }
        if options.http10 { request.version = .http1_0 }
        var seen: Set<String> = []
        for header in options.headers {
            let lowered = header.name.lowercased()
            if header.remove {
                if let name = HTTPField.Name(header.name) { request.headers[name] = nil }
            } else if seen.insert(lowered).inserted {
                request.setHeader(header.name, header.value)
            } else {
                request.addHeader(header.name, header.value)
            }
        }
        // curl's -r (lib/http.c): a Range for a request without a body, unless -H set one (under -C - the resume asks
        // for its own); with a -d or -T body of known length, a Content-Range of the range over that length instead.
        if let range = options.range, !options.bodies.resume {
            if request.body == nil {
                if request.headers[.range] == nil { request.headers[.range] = "bytes=" + range }
            } else if options.bodies.formParts.isEmpty, let length = request.body?.length, request.headers[.contentRange] == nil {
                request.headers[.contentRange] = "bytes \(range)/\(length)"
            }
        }
        // curl: every -b NAME=VALUE in one Cookie field, joined with ';' (CURLOPT_COOKIE, tool_operate.c).
        if !options.cookieStrings.isEmpty { request.addHeader("Cookie", options.cookieStrings.joined(separator: ";")) }
        target.applyAuthentication(options, to: &request)
        if let cachePolicy = options.cachePolicy { request.cachePolicy = cachePolicy }
        request[RedirectProtocols.FirstURL.self] = request.url
        if options.autoReferer { request[AutoReferer.Trail.self] = AutoReferer.Trail() }
        options.prepareFlow(&request)
        if options.flow.parallel {
            // Each URL keeps its own -o/-O, as without -Z (curl pairs them the same way).
            do {
                parallelJobs.append(ParallelJob(request: request, destination: try target.destination(index: index, options: options),
                                                shownURL: target.shown(target.url), urlNumber: index))
            } catch let error as UsageError {
                if options.showsErrors { printError(error.message) }
                status = error.exitCode == 2 ? 23 : error.exitCode
            } catch {
                status = 23
            }
            continue
        }

        var outcome = TransferOutcome(effectiveURL: target.shown(target.url), method: request.method.rawValue, status: nil,
                                      bodyBytes: 0, exitCode: 0, errorMessage: "", outputFile: nil, verifyResult: 0)
        outcome.urlNumber = index
        var result: Int32 = 0
        do {
            let destination = try target.destination(index: index, options: options)
            switch destination {
            case .file(let path):
                outcome.outputFile = path
                let download = try await downloadToFile(client, request, path: path, options: options) {
                    heads(recorder.record, fallback: nil, suppressingConnect: options.suppressConnectHeaders)
                }
                outcome.status = download.status
                outcome.bodyBytes = download.size
                outcome.effectiveURL = target.shown(download.url)
                try headerDump?.write(heads(recorder.record, fallback: nil, suppressingConnect: options.suppressConnectHeaders))
                if !download.written {  // an error status left the file alone: say so, as curl -f
                    result = 22
                    outcome.errorMessage = "The requested URL returned error: \(download.status) (\(path) left as it was)"
                } else if download.status >= 400 && (options.fail || options.failWithBody)
                            && !(options.bodies.resume && download.status == 416) {  // curl: a 416 to -C - is complete
                    result = 22  // --fail-with-body (or -f -I): written, and refused as curl refuses it
                    outcome.errorMessage = "The requested URL returned error: \(download.status)"
                }
            case .namedByServer(let directory, let fallback):
                let download = try await downloadNamedByServer(client, request, directory: directory, fallback: fallback, options: options)
                outcome.status = download.status
                outcome.bodyBytes = download.size
                outcome.effectiveURL = target.shown(download.url)
                outcome.outputFile = download.path
                try headerDump?.write(heads(recorder.record, fallback: nil, suppressingConnect: options.suppressConnectHeaders))
                if download.path == nil {
                    result = 22
                    outcome.errorMessage = "The requested URL returned error: \(download.status) (no file written)"
                }
            case .stdout, .stream:
                let sink: Sink
                if case .stream(let path) = destination {
                    sink = try Sink(path: path)
                    outcome.outputFile = path
                } else {
                    sink = stdout
                }
                let response = try await sendRetrying(request, client: client, options: options)
                outcome.status = response.status.code
                outcome.effectiveURL = target.shown(response.url.description)
                outcome.cacheStatus = cacheStatusText(response)
                outcome.finalHead = ReceivedHead(status: response.status, version: response.version, headers: response.headers)
                let headText = heads(recorder.record, fallback: response, suppressingConnect: options.suppressConnectHeaders)
                try headerDump?.write(headText)
                if options.includeHeaders || options.headOnly { try sink.write(headText) }
                let failed = response.status.code >= 400 && (options.fail || options.failWithBody)
                if failed {
                    result = 22
                    outcome.errorMessage = "The requested URL returned error: \(response.status.code)"
                }
                if !failed || options.failWithBody {
                    for try await chunk in response.body {
                        outcome.bodyBytes += chunk.count
                        try sink.write(chunk)
                    }
                }
            }
        } catch let error as HTTPClientError {
            result = curlExitCode(error)
            outcome.errorMessage = options.message(for: error)
            if error.code == .certificateInvalid { outcome.verifyResult = 1 }
            outcome.refusedConnect = error.proxyStatus
            if !error.proxyRounds.isEmpty {
                // curl shows a refused CONNECT's answers with -i (to standard output) and -D, as any head.
                let text = heads(recorder.record, fallback: nil, suppressingConnect: options.suppressConnectHeaders)
                try? headerDump?.write(text)
                if options.includeHeaders || options.headOnly,
                   case .stdout? = try? target.destination(index: index, options: options) {
                    try? stdout.write(text)
                }
            }
        } catch let error as UsageError {
            result = error.exitCode == 2 ? 23 : error.exitCode
            outcome.errorMessage = error.message
        } catch {
            result = 1
            outcome.errorMessage = "\(error)"
        }
        if result != 0, options.showsErrors {
            printError(result == 22 ? "(22) \(outcome.errorMessage)" : "\(HTTPURL.redacting(target.shown(target.url))): \(outcome.errorMessage)")
        }
        outcome.exitCode = result
        // A transfer that failed after a redirect ended at the URL it was redirected to, as curl's url_effective.
        if result != 0, let hop = recorder.record.lastRedirectURL { outcome.effectiveURL = target.shown(hop) }
        if let format = options.writeOut { writeOut(format, outcome, recorder.record) }
        status = result  // curl: the last transfer's result
    }
    if options.flow.parallel {
        let parallelStatus = await runParallel(parallelJobs, client: client, sink: stdout, options: options)
        if status == 0 { status = parallelStatus }
    }
    if options.cookieJarFile != nil, let jar {
        do { try await jar.save() } catch {
            printError("cannot write cookies: \(error)")
            if status == 0 { status = 23 }  // CURLE_WRITE_ERROR
        }
    }
    await client.shutdown()
    return status
}

/// The client settings that make ahttp's transfers time out and follow redirects as curl's do.
func applyCurlTransferDefaults(_ options: Options, to configuration: inout HTTPClient.Configuration) {
    // curl has no inactivity timeout: a transfer may stay silent as long as -m allows (the library's 60 s is not
    // curl's). A stalled or trickling transfer is for -m and for -Y/-y, as in curl.
    configuration.inactivityTimeout = nil
    configuration.lowSpeedLimit = options.lowSpeedLimit
    // curl: 300 s to connect (DEFAULT_CONNECT_TIMEOUT) unless --connect-timeout, whose 0 means that default.
    configuration.connectTimeout = flagDuration(options.connectTimeout ?? 300)
    // -m: the whole transfer; none (nil, or curl's -m 0) means no limit.
    configuration.totalTimeout = options.maxTime.map(flagDuration)
    configuration.redirectPolicy.followsRedirects = options.followRedirects
    // curl's default limit is 50 redirects (CURLOPT_MAXREDIRS in the tool).
    configuration.redirectPolicy.maxRedirects = options.maxRedirects ?? 50
    // curl's -L has no loop check: a loop ends at --max-redirs, with exit 47, as any other long chain. With no
    // limit (--max-redirs -1) the check stays: every hop is kept in the redirect history, so an endless loop would
    // grow memory without end, where curl's runs in constant memory.
    configuration.redirectPolicy.detectsLoops = configuration.redirectPolicy.maxRedirects == .max
}

/// A positive number of seconds from the command line as a `Duration`: at least 1 ns, so that `-m 0.0000001` is a
/// very short limit rather than a zero the client refuses as a configuration error. (Seconds are at most
/// ``maxSecondsInAFlag``, 1e9, so the nanoseconds fit in an `Int64`.)
func flagDuration(_ seconds: Double) -> Duration {
    .nanoseconds(max(1, Int64(seconds * 1e9)))
}

extension Options {
    /// curl's `-U`: Basic at once (`--proxy-basic`, its default), unless another scheme or `--proxy-anyauth` was
    /// asked for; and the schemes a `407` may be answered with.
    var proxyAuthentication: (preemptive: Bool, schemes: Set<HTTPAuthenticationScheme>?) {
        switch proxyScheme {
        case .basic: (true, [.basic])
        case .digest: (false, [.digest])
        case .ntlm: (false, [.ntlm])
        case .anyauth: (false, nil)
        }
    }

    /// The TLS to an https:// proxy, given with -x or found in the environment: configured apart from the origins'
    /// (-k, --cacert, -E and --key are not for it), as curl.
    var proxyTLS: TLSConfiguration {
        var tls = TLSConfiguration()
        if proxyInsecure { tls.certificateVerification = false }
        if let caFile = proxyCAFile { tls.trustRoots = .file(caFile) }
        if let certificate = proxyCertificate {
            tls.clientCertificate = .init(certificateFile: certificate, privateKeyFile: proxyKey ?? certificate)
        }
        return tls
    }

    /// -Y/--speed-limit and -y/--speed-time as curl reads them (tool_getparam.c): -Y alone checks over 30 s, -y alone
    /// at 1 byte per second; a 0 for either turns the check off (libcurl checks only with both set).
    var lowSpeedLimit: LowSpeedLimit? {
        guard speedLimit != nil || speedTime != nil else { return nil }
        let bytes = speedLimit ?? 1
        let seconds = speedTime ?? 30
        guard bytes > 0, seconds > 0 else { return nil }
        return try? LowSpeedLimit(bytesPerSecond: bytes, duration: .seconds(seconds))
    }

    /// What ahttp says of a failed transfer (on standard error, and as %{errormsg}): the library's error, in curl's
    /// words where a script may look for them.
    func message(for error: HTTPClientError) -> String {
        if error.timeoutPhase == .lowSpeed, let limit = lowSpeedLimit {
            // curl's text (lib/speedcheck.c), seconds as a whole number as there.
            return "Operation too slow. Less than \(limit.bytesPerSecond) bytes/sec transferred the last "
                + "\(limit.duration.components.seconds) seconds"
        }
        return "\(error)"
    }

    /// The redirect policy for a request sent with `method`, when it is not the client's (`base`): libcurl turns
    /// only a POST into a GET on 301 and 302, unless --post301 or --post302, and anything on 303 but a POST under
    /// --post303 (lib/transfer.c); every other method is sent again, with its body (a -T PUT). `-X METHOD` is sent
    /// on every hop, 303 included, as curl sends its custom method.
    func redirectPolicy(for method: HTTPRequest.Method, base: RedirectPolicy) -> RedirectPolicy? {
        guard followRedirects else { return nil }
        var policy = base
        policy.keepsMethodOn301 = self.method != nil || method != .post || keepPost.contains(301)
        policy.keepsMethodOn302 = self.method != nil || method != .post || keepPost.contains(302)
        policy.keepsMethodOn303 = self.method != nil || (method == .post && keepPost.contains(303))
        policy.sendsCredentialsToOtherOrigins = locationTrusted
        return policy == base ? nil : policy
    }
}

/// -e ';auto' (CURLOPT_AUTOREFERER): each redirect hop is sent with the URL that redirected to it as its Referer,
/// without its fragment (ahttp's URLs carry no userinfo), as libcurl's Curl_follow sets it. A user step, so it sees
/// each hop; an authentication round at the same URL keeps the hop's Referer. One trail per transfer, on the request.
struct AutoReferer: HTTPClientMiddleware {
    /// The URL last sent in this transfer and the Referer it went with.
    final class Trail: HTTPRequestOption, Sendable {
        static let defaultValue: Trail? = nil
        let last = Locked<(url: String, referer: String?)?>(nil)
    }

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        guard let trail = request[Trail.self] else { return try await next(request) }
        var request = request
        let referer: String? = trail.last.withLock { last in
            let referer = last.map { $0.url == request.url ? $0.referer : String($0.url.prefix { $0 != "#" }) } ?? nil
            last = (request.url, referer)
            return referer
        }
        if let referer { request.headers[.referer] = referer }
        return try await next(request)
    }
}

/// --max-filesize: a response that announces a larger body (`Content-Length`, as it crosses the wire) fails before
/// its body is read, as libcurl fails it while reading the head (CURLE_FILESIZE_EXCEEDED, exit 63). Every hop's, as
/// there (a user step sees each one). A body of unannounced length is not counted (curl 7's rule; see cli.md).
struct MaxFilesize: HTTPClientMiddleware {
    let limit: Int

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        let response = try await next(request)
        if let length = response.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw HTTPClientError(.bodyLimitExceeded, "Maximum file size exceeded")
        }
        return response
    }
}

/// --proto-redir (and --proto: a hop needs both): a redirect hop to a scheme not in `allowed` fails with
/// `redirectRefused` (exit 1, curl's CURLE_UNSUPPORTED_PROTOCOL) before it is sent. A user step, so it sees every hop the redirect step makes; a
/// request at the URL the transfer started with (the first, or an authentication round there) was allowed by --proto.
struct RedirectProtocols: HTTPClientMiddleware {
    /// The URL ahttp sent first, set on each request.
    enum FirstURL: HTTPRequestOption { static let defaultValue: String? = nil }

    let allowed: Set<String>

    func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        if request.resendCount > 0, request.url != request[FirstURL.self], let scheme = Self.scheme(of: request.url),
           !allowed.contains(scheme) {
            throw HTTPClientError(.redirectRefused,
                "refused to follow a redirect to \(HTTPURL.redacting(request.url)): protocol \"\(scheme)\" is disabled by --proto or --proto-redir")
        }
        return try await next(request)
    }

    /// The URL's scheme, lowercased; nil without one.
    static func scheme(of url: String) -> String? {
        Substring(url).range(of: "://").map { url[..<$0.lowerBound].lowercased() }
    }
}

/// The heads to show for -i and -D: every head of the transfer (redirect hops and authentication rounds, as curl
/// shows them), or the response's own when no event reported one (a cached response).
/// The heads -i and -D show: every hop's, with the proxy's answers to CONNECT unless `suppressingConnect`.
func heads(_ record: TransferRecorder.Record, fallback: HTTPClientResponse?, suppressingConnect: Bool) -> String {
    // Only a proxy's answers, and no response, when the proxy refused the tunnel.
    if record.lastHead != nil || (fallback == nil && !record.heads.isEmpty) {
        return record.heads.filter { !(suppressingConnect && $0.isTunnel) }.map(\.text).joined()
    }
    guard let response = fallback else { return "" }
    return ReceivedHead(status: response.status, version: response.version, headers: response.headers).text
}

func responseHeadText(_ response: HTTPClientResponse) -> String {
    ReceivedHead(status: response.status, version: response.version, headers: response.headers).text
}

/// `-b` files read and the `-c` file written, as curl uses them: every `-b` file is loaded, and `-c`
/// receives every cookie at the end, session cookies included.
struct CommandLineCookieFiles: CookieStorage {
    var read: [String]
    var write: String?

    func load() throws -> [HTTPClient.Cookie] {
        // curl: `-b -` reads the cookies from standard input.
        try read.flatMap { try NetscapeCookieFile(path: $0 == "-" ? "/dev/stdin" : $0).load() }
    }

    func save(_ cookies: [HTTPClient.Cookie]) throws {
        guard let write else { return }
        guard write == "-" else {
            try NetscapeCookieFile(path: write, includeSessionCookies: true).save(cookies)
            return
        }
        // curl: `-c -` writes the cookies to standard output at the end. The library writes the format only to a
        // file (atomically, mode 0600): a private temporary file, copied out and removed.
        let directory = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let temporary = "\(directory)/ahttp-cookies-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(temporary) }
        try NetscapeCookieFile(path: temporary, includeSessionCookies: true).save(cookies)
        try writeAll(1, try readFile(temporary)[...])
    }
}

/// `-v`: each request head as it went out (`> `), the bytes the encoder wrote, and each response head as it
/// came in (`< `), one pair per hop of a redirect or round of authentication, as curl prints them. An observer:
/// it watches the traffic and cannot change it. Unlike curl, the values of `Authorization`,
/// `Proxy-Authorization`, `Cookie` and `Set-Cookie` are shown as `<redacted>`: a terminal or a log is no place
/// for a secret.
struct VerboseHeads: HTTPClientObserver {
    func observe(_ event: HTTPClientEvent) {
        switch event.kind {
        case .connectionAcquired(let info):
            // A new connection through a tunnel: each CONNECT and the proxy's answer, before the request's own
            // head, as curl shows them.
            for round in info.tunnelResponses {
                sent(round.request)
                received(status: round.status, version: round.version, headers: round.headers)
            }
        case .headSent(let bytes):
            sent(bytes)
        case .headReceived(let status, let version, let headers):
            received(status: status, version: version, headers: headers)
        case .failed(let error, _):
            // A tunnel the proxy refused: the CONNECTs (their credentials already left out) and the answers.
            for round in error.proxyRounds {
                sent(Array(round.request.utf8))
                received(status: round.status, version: round.version, headers: round.headers)
            }
        default:
            break
        }
    }

    private func sent(_ head: [UInt8]) {
        try? writeAll(2, Array(redactedHeadLines(head).map { "> " + $0 + "\n" }.joined().utf8)[...])
    }

    private func received(status: HTTPResponse.Status, version: HTTPVersion, headers: HTTPFields) {
        let lines = ["HTTP/\(version.major).\(version.minor) \(status.code) \(status.reasonPhrase)"]
            + headers.redactingSecrets().map { "\($0.name): \($0.value)" } + [""]
        try? writeAll(2, Array(lines.map { "< " + $0 + "\n" }.joined().utf8)[...])
    }
}

/// Runs the transfers and ends the process on the thread that finished them. Returning the status to the top
/// level would hop to the main actor, and the main thread has handed the main queue to `dispatch_main`, which
/// starts a new thread to drain it: one more thread per run, created only to exit.
///
/// `_exit`, not `exit`: every byte went out through write(2), so there is no stdio buffer to flush, and
/// skipping the C atexit destructors keeps them from racing the event-loop thread, which never stops.
func runThenExit() async -> Never {
    _exit(await run())
}

/// The mode a new output file (-o, -O) gets: 0666 less the umask, as curl creates its output files; a file that is
/// there already keeps its own (the library's downloads do the same). Read once, here, before any thread exists
/// that could create a file while the umask is briefly 0.
let outputFileMode: mode_t = {
    let mask = umask(0)
    umask(mask)
    return 0o666 & ~mask
}()

// As curl: a reader that went away (`ahttp URL | head -c1`) is a write error (23), not death by SIGPIPE.
signal(SIGPIPE, SIG_IGN)
_ = outputFileMode
await runThenExit()
