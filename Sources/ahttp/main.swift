// ahttp: a curl-like command line over AsyncHTTP.
//
//   ahttp [-X METHOD] [-I] [-H 'Name: value']… [-d DATA] [-o FILE] [-i] [-v] [-s] [-k]
//         [--cacert FILE] [-m SECONDS] [-w FORMAT] [-L] [--max-redirs N] [-b FILE|DATA] [-c FILE]
//         [--compressed] [-u USER:PASS] [--basic|--digest|--ntlm|--anyauth] [--oauth2-bearer TOKEN]
//         [-x PROXY] [-U USER:PASS] [--socks5 HOST:PORT] [--socks5-hostname HOST:PORT] [--noproxy LIST]
//         [-E CERT] [--key KEY] URL [URL…]
//
// Several URLs are fetched in order over the same pool, as curl does. The exit status is 0 whatever
// the HTTP status, and curl's number for a transport, TLS or protocol failure (6, 7, 28, 35, 60, …),
// with a one-line message on stderr.

import AsyncHTTP
import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Options {
    var method: HTTPRequest.Method?
    var headOnly = false
    var headers: [(String, String)] = []
    var data: [UInt8]?
    var output: String?
    var includeHeaders = false
    var verbose = false
    var silent = false
    var insecure = false
    var caFile: String?
    var maxTime: Double?
    var writeOut: String?
    /// -L: follow redirects (curl does not by default).
    var followRedirects = false
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
    /// -x, --socks5, --socks5-hostname: the proxy (the last one given wins, as curl).
    var proxy: ProxyConfiguration?
    var proxyUser: HTTPCredentials?
    var noProxy: String?
    var certificate: String?
    var key: String?
    /// --resolve, --connect-to, --unix-socket / --abstract-unix-socket, --happy-eyeballs-timeout-ms.
    var resolve: [ResolveOverride] = []
    var connectTo: [ConnectToOverride] = []
    var unixSocket: UnixSocketAddress?
    var happyEyeballsDelay: Int?
    var awsSigV4: String?  // --aws-sigv4 (AWSSigV4Option.swift)
    /// --cache DIR, --cache-policy NAME: the download cache (see Cache.swift).
    var cacheDirectory: String?
    var cachePolicy: HTTPCachePolicy?
    /// --archive OUT: the page and its resources for offline reading (ArchiveCommand.swift).
    var archiveOutput: String?
    var urls: [String] = []
    /// -F, --data-urlencode, --data-binary @file, -T, -O, -C -, --expect100-timeout (Bodies.swift).
    var bodies = BodyOptions()
    /// --limit-rate, -#, -Z, --parallel-max, --fail-early, --retry* (Flow.swift).
    var flow = FlowOptions()
}

/// `user:password`, with `DOMAIN\user` for NTLM, as curl's -u and -U take it. No colon: an empty password
/// (curl would prompt).
func parseUser(_ text: String) -> HTTPCredentials {
    let (user, password) = text.firstIndex(of: ":").map { (String(text[..<$0]), String(text[text.index(after: $0)...])) }
        ?? (text, "")
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
        throw UsageError(message: "invalid proxy '\(text)': \(error.message)")
    }
}

struct UsageError: Error {
    var message: String
    /// 2 for a command line ahttp cannot read; curl's own code where curl has one (49 for a bad --resolve).
    var exitCode: Int32 = 2
}

func parse(_ arguments: [String]) throws -> Options {
    var options = Options()
    var index = 0
    func value(_ flag: String) throws -> String {
        index += 1
        guard index < arguments.count else { throw UsageError(message: "option \(flag): requires a value") }
        return arguments[index]
    }
    while index < arguments.count {
        let argument = arguments[index]
        switch argument {
        case "-X", "--request":
            let name = try value(argument)
            guard let method = HTTPRequest.Method(name) else { throw UsageError(message: "invalid method '\(name)'") }
            options.method = method
        case "-I", "--head": options.headOnly = true
        case "-H", "--header":
            let line = try value(argument)
            guard let colon = line.firstIndex(of: ":") else { throw UsageError(message: "header '\(line)' has no colon") }
            let name = String(line[..<colon])
            let fieldValue = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            options.headers.append((name, String(fieldValue)))
        case "--data-binary" where index + 1 < arguments.count && arguments[index + 1].hasPrefix("@")
            && options.bodies.dataBinaryFile == nil && options.data == nil:
            options.bodies.dataBinaryFile = String(try value(argument).dropFirst())
        case "--data-urlencode": options.data = joinData(options.data, try dataURLEncode(try value(argument)))
        case "-F", "--form": options.bodies.formParts.append(try parseFormPart(try value(argument), literal: false))
        case "--form-string": options.bodies.formParts.append(try parseFormPart(try value(argument), literal: true))
        case "-T", "--upload-file": options.bodies.uploadFile = try value(argument)
        case "-O", "--remote-name": options.bodies.remoteName = true
        case "-C", "--continue-at":
            guard try value(argument) == "-" else { throw UsageError(message: "-C: only '-C -' (resume from the partial file) is supported") }
            options.bodies.resume = true
        case "--expect100-timeout":
            let text = try value(argument)
            guard let seconds = Double(text), seconds >= 0 else { throw UsageError(message: "invalid --expect100-timeout '\(text)'") }
            options.bodies.expect100Timeout = seconds
        case "-d", "--data", "--data-binary":
            let text = try value(argument)
            var bytes: [UInt8]
            if text.hasPrefix("@") {
                bytes = try readFile(String(text.dropFirst()))
                // curl's -d strips CR and LF from files; --data-binary keeps them.
                if argument != "--data-binary" { bytes.removeAll { $0 == 0x0D || $0 == 0x0A } }
            } else {
                bytes = Array(text.utf8)
            }
            if let existing = options.data { options.data = existing + Array("&".utf8) + bytes } else { options.data = bytes }
        case "-o", "--output": options.output = try value(argument)
        case "-i", "--include": options.includeHeaders = true
        case "-v", "--verbose": options.verbose = true
        case "-s", "--silent": options.silent = true
        case "-k", "--insecure": options.insecure = true
        case "--cacert": options.caFile = try value(argument)
        case "-m", "--max-time":
            let text = try value(argument)
            guard let seconds = Double(text), seconds > 0 else { throw UsageError(message: "invalid --max-time '\(text)'") }
            options.maxTime = seconds
        case "-w", "--write-out": options.writeOut = try value(argument)
        case "-L", "--location": options.followRedirects = true
        case "--max-redirs":
            let text = try value(argument)
            guard let count = Int(text), count >= -1 else { throw UsageError(message: "invalid --max-redirs '\(text)'") }
            options.maxRedirects = count == -1 ? Int.max : count  // curl: -1 means no limit
        case "-b", "--cookie":
            // curl: an argument with '=' is cookie data to send; otherwise a file to read.
            let text = try value(argument)
            if text.contains("=") { options.cookieStrings.append(text) } else { options.cookieFiles.append(text) }
        case "-c", "--cookie-jar": options.cookieJarFile = try value(argument)
        case "--compressed": options.compressed = true
        case "-u", "--user": options.user = parseUser(try value(argument))
        case "--basic": options.authSchemes = [.basic]
        case "--digest": options.authSchemes = [.digest]
        case "--ntlm": options.authSchemes = [.ntlm]
        case "--anyauth": options.authSchemes = Set(HTTPAuthenticationScheme.allCases)
        case "--oauth2-bearer": options.bearer = try value(argument)
        case "--aws-sigv4": options.awsSigV4 = try value(argument)
        case "-x", "--proxy": options.proxy = try parseProxy(try value(argument), kind: nil)
        case "-U", "--proxy-user": options.proxyUser = parseUser(try value(argument))
        case "--socks5": options.proxy = try parseProxy(try value(argument), kind: .socks5)
        case "--socks5-hostname": options.proxy = try parseProxy(try value(argument), kind: .socks5h)
        case "--noproxy": options.noProxy = try value(argument)
        case "-E", "--cert":
            let text = try value(argument)
            guard !text.contains(":") else {
                throw UsageError(message: "-E: encrypted keys (CERT:PASSWORD) are not supported; give an unencrypted key with --key")
            }
            options.certificate = text
        case "--key": options.key = try value(argument)
        case "--limit-rate": options.flow.limitRate = try parseRate(try value(argument))
        case "-#", "--progress-bar": options.flow.progressBar = true
        case "-Z", "--parallel": options.flow.parallel = true
        case "--parallel-max": options.flow.parallelMax = try parseCount(try value(argument), argument, range: 1...300)
        case "--fail-early": options.flow.failEarly = true
        case "--retry": options.flow.retry = try parseCount(try value(argument), argument, range: 0...1_000_000)
        case "--retry-delay": options.flow.retryDelay = try parsePositiveSeconds(try value(argument), argument)
        case "--retry-max-time": options.flow.retryMaxTime = try parsePositiveSeconds(try value(argument), argument)
        case "--resolve": options.resolve.append(try targetOption { try ResolveOverride(try value(argument)) })
        case "--connect-to": options.connectTo.append(try targetOption { try ConnectToOverride(try value(argument)) })
        case "--unix-socket": options.unixSocket = .path(try value(argument))
        case "--abstract-unix-socket": options.unixSocket = .abstract(try value(argument))
        case "--happy-eyeballs-timeout-ms":
            let text = try value(argument)
            guard let milliseconds = Int(text), milliseconds >= 10 else {
                throw UsageError(message: "--happy-eyeballs-timeout-ms: '\(text)' is not a whole number of at least 10")
            }
            options.happyEyeballsDelay = milliseconds
        case "--cache": options.cacheDirectory = try value(argument)
        case "--cache-policy": options.cachePolicy = try parseCachePolicy(try value(argument))
        case "--archive": options.archiveOutput = try value(argument)
        case "-h", "--help":
            printStdout(usage + "\n" + bodiesUsage + "\n")
            exit(0)
        default:
            if argument.hasPrefix("-") && argument.count > 1 {
                throw UsageError(message: "unknown option '\(argument)'")
            }
            options.urls.append(argument)
        }
        index += 1
    }
    guard !options.urls.isEmpty else { throw UsageError(message: "no URL specified") }
    return options
}

/// A --resolve or --connect-to value, its error as a usage error.
func targetOption<Value>(_ parse: () throws -> Value) throws -> Value {
    do {
        return try parse()
    } catch let error as HTTPClientError {
        throw UsageError(message: error.message, exitCode: 49)  // CURLE_SETOPT_OPTION_SYNTAX
    }
}

let usage = """
usage: ahttp [-X METHOD] [-I] [-H 'Name: value']… [-d DATA] [-o FILE] [-i] [-v] [-s] [-k]
             [--cacert FILE] [-m SECONDS] [-w FORMAT] [-L] [--max-redirs N] [-b FILE|NAME=VALUE]
             [-c FILE] [--compressed] [-u USER:PASS] [--basic|--digest|--ntlm|--anyauth]
             [--oauth2-bearer TOKEN] [-x [SCHEME://]HOST[:PORT]] [-U USER:PASS] [--socks5 HOST[:PORT]]
             [--socks5-hostname HOST[:PORT]] [--noproxy LIST] [-E CERT.pem] [--key KEY.pem]
             [--limit-rate RATE] [-#] [-Z [--parallel-max N] [--fail-early]] [--retry N [--retry-delay S]
             [--retry-max-time S]]
             [--resolve HOST:PORT:ADDR[,ADDR]] [--connect-to HOST1:PORT1:HOST2:PORT2]
             [--unix-socket PATH] [--abstract-unix-socket NAME] [--happy-eyeballs-timeout-ms MS]
             [--cache DIR] [--cache-policy NAME[,NAME]] URL [URL…]
  -L follows redirects (at most 10, or --max-redirs; never https → http)
  -b reads a Netscape cookies.txt (curl's format) or sends NAME=VALUE; -c writes all cookies there at the end
  -u sends Basic at once unless --digest, --ntlm or --anyauth is given (DOMAIN\\user for NTLM)
  -x takes http://, socks5:// or socks5h:// proxies; without -x, http_proxy/https_proxy/all_proxy/no_proxy apply
  --limit-rate takes bytes per second with K, M or G; -Z runs the URLs at once (up to --parallel-max, 50)
  --retry retries timeouts, failed lookups and 408/429/500/502/503/504, after 1 s doubling (or --retry-delay)
  -w knows %{http_code} %{size_download} %{num_connects} %{num_redirects} %{url_effective} %{time_total}
     %{cache_status} and \\n
  --cache keeps responses in DIR (RFC 9111); --cache-policy takes ASIHTTPRequest's names: askServerIfModifiedWhenStale,
     askServerIfModified, onlyLoadIfNotCached, dontLoad, fallbackToCacheIfLoadFails, doNotRead, doNotWrite
"""

func readFile(_ path: String) throws -> [UInt8] {
    guard let file = fopen(path, "rb") else { throw UsageError(message: "cannot read '\(path)': \(String(cString: strerror(errno)))") }
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
    case .invalidURL: 3
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
    case .proxyFailed: 97
    case .cancelled, .shutdown: 42
    case .redirectRefused, .bodyNotReplayable, .bodyInUse: 1
    case .invalidConfiguration: 2  // CURLE_FAILED_INIT
    }
}

func formatWriteOut(_ format: String, values: [String: String]) -> String {
    var result = ""
    var rest = Substring(format)
    while let start = rest.range(of: "%{") {
        result += rest[..<start.lowerBound]
        guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
            result += rest[start.lowerBound...]
            rest = ""
            break
        }
        let name = String(rest[start.upperBound..<end])
        result += values[name] ?? ""
        rest = rest[rest.index(after: end)...]
    }
    result += rest
    return result.replacingOccurrences(of: "\\n", with: "\n").replacingOccurrences(of: "\\t", with: "\t")
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

func run() async -> Int32 {
    let options: Options
    do {
        options = try parse(Array(CommandLine.arguments.dropFirst()))
    } catch let error as UsageError {
        printError(error.message)
        guard error.exitCode == 2 else { return error.exitCode }
        try? writeAll(2, Array((usage + "\n").utf8)[...])
        return 2
    } catch {
        printError("\(error)")
        return 2
    }

    var configuration = HTTPClient.Configuration()
    if options.insecure { configuration.tls.certificateVerification = false }
    if let caFile = options.caFile { configuration.tls.trustRoots = .file(caFile) }
    if let maxTime = options.maxTime { configuration.totalTimeout = .milliseconds(Int64(maxTime * 1000)) }
    configuration.resolve = options.resolve
    configuration.connectTo = options.connectTo
    configuration.unixSocket = options.unixSocket
    if let delay = options.happyEyeballsDelay { configuration.connectionAttemptDelay = .milliseconds(delay) }
    configuration.redirectPolicy.followsRedirects = options.followRedirects
    if let maxRedirects = options.maxRedirects { configuration.redirectPolicy.maxRedirects = maxRedirects }
    configuration.compression.acceptsCompressedResponses = options.compressed
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
    // As curl: credentials given with -u go where the user sent them, plain http included.
    // (--oauth2-bearer too: curl sends the token wherever the user points it.)
    if options.user != nil || options.bearer != nil { configuration.authentication.allowsBasicOverPlainHTTP = true }
    if var proxy = options.proxy {
        if let proxyUser = options.proxyUser { proxy.credentials = proxyUser }
        configuration.proxy = .proxy(proxy, bypass: options.noProxy ?? "")
    } else if let noProxy = options.noProxy {
        // --noproxy overrides no_proxy for the environment's proxies.
        setenv("no_proxy", noProxy, 1)
        unsetenv("NO_PROXY")
    }
    if options.verbose { configuration.observers.append(VerboseHeads()) }
    if let directory = options.cacheDirectory {
        do { configuration.cache = try makeCache(directory: directory) } catch let error as UsageError {
            printError(error.message)
            return 23  // CURLE_WRITE_ERROR
        } catch { return 23 }
    }
    if let provider = options.awsSigV4 {  // --aws-sigv4: -u is the key pair, signed, never sent as Basic
        do { configuration.middleware.append(try awsSigV4Middleware(provider: provider, user: options.user, firstURL: options.urls.first)) }
        catch { printError(error.message); return error.exitCode }
    }
    let client = HTTPClient(configuration: configuration)
    if let output = options.archiveOutput {
        let status = await runArchive(client: client, url: options.urls[0], output: output, silent: options.silent)
        await client.shutdown()
        return status
    }

    let sink: Sink
    // -o and -O are written atomically by `downloadToFile` (Bodies.swift), not through the sink.
    do { sink = try Sink(path: streamedOutput(options)) } catch let error as UsageError {
        printError(error.message)
        return 23
    } catch { return 23 }

    var status: Int32 = 0
    var parallelRequests: [HTTPClientRequest] = []
    for url in options.urls {
        var request = HTTPClientRequest(url: url)
        if options.headOnly { request.method = .head }
        if let data = options.data {
            request.method = .post
            request.body = .bytes(data)
            request.headers[.contentType] = "application/x-www-form-urlencoded"
        }
        if let failure = applyBodiesReporting(options, to: &request) {
            status = failure
            continue
        }
        if let method = options.method { request.method = method }
        for (name, value) in options.headers { request.setHeader(name, value) }
        for cookies in options.cookieStrings { request.addHeader("Cookie", cookies) }
        if let user = options.user, options.awsSigV4 == nil {
            request.credentials = user
            request.authenticationSchemes = options.authSchemes
            request.sendsCredentialsPreemptively = options.authSchemes == nil || options.authSchemes == [.basic]
        }
        if let bearer = options.bearer { request.bearerToken = bearer }
        if let cachePolicy = options.cachePolicy { request.cachePolicy = cachePolicy }
        options.prepareFlow(&request)
        if options.flow.parallel { parallelRequests.append(request); continue }

        let start = ContinuousClock.now
        do {
            let connectionsBefore = client.connectionsOpened
            if let path = try outputPath(options, url: url) {
                let outcome = try await downloadToFile(client, request, path: path, options: options)
                if !(200..<300).contains(outcome.status) { status = 22 }  // the file was left alone: say so, as curl -f
                if let format = options.writeOut {
                    let elapsed = start.duration(to: .now)
                    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                    printStdout(formatWriteOut(format, values: [
                        "http_code": String(outcome.status), "response_code": String(outcome.status),
                        "size_download": String(outcome.size), "url_effective": outcome.url,
                        "num_connects": String(client.connectionsOpened - connectionsBefore), "time_total": String(seconds),
                    ]))
                }
                continue
            }
            let response = try await sendRetrying(request, client: client, options: options)
            let headText = responseHeadText(response)
            if options.includeHeaders || options.headOnly { try sink.write(headText) }
            var size = 0
            for try await chunk in response.body {
                size += chunk.count
                try sink.write(chunk)
            }
            if let format = options.writeOut {
                let elapsed = start.duration(to: .now)
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                let values = [
                    "http_code": String(response.status.code),
                    "response_code": String(response.status.code),
                    "size_download": String(size),
                    "num_connects": String(client.connectionsOpened - connectionsBefore),
                    "url_effective": response.url.description,
                    "num_redirects": String(response.history.count),
                    "time_total": String(seconds),
                    "cache_status": cacheStatusText(response),
                ]
                printStdout(formatWriteOut(format, values: values))
            }
        } catch let error as HTTPClientError {
            if !options.silent { printError("\(HTTPURL.redacting(url)): \(error)") }
            status = curlExitCode(error)
        } catch let error as UsageError {
            printError(error.message)
            status = 23
        } catch {
            if !options.silent { printError("\(HTTPURL.redacting(url)): \(error)") }
            status = 1
        }
    }
    if options.flow.parallel { status = await runParallel(parallelRequests, client: client, sink: sink, options: options) }
    if options.cookieJarFile != nil, let jar {
        do { try await jar.save() } catch {
            printError("cannot write cookies: \(error)")
            if status == 0 { status = 23 }  // CURLE_WRITE_ERROR
        }
    }
    await client.shutdown()
    return status
}

func responseHeadText(_ response: HTTPClientResponse) -> String {
    "HTTP/\(response.version.major).\(response.version.minor) \(response.status.code) \(response.status.reasonPhrase)\r\n"
        + response.headers.map { "\($0.name): \($0.value)\r\n" }.joined() + "\r\n"
}

/// `-b` files read and the `-c` file written, as curl uses them: every `-b` file is loaded, and `-c`
/// receives every cookie at the end, session cookies included.
struct CommandLineCookieFiles: CookieStorage {
    var read: [String]
    var write: String?

    func load() throws -> [HTTPClient.Cookie] {
        try read.flatMap { try NetscapeCookieFile(path: $0).load() }
    }

    func save(_ cookies: [HTTPClient.Cookie]) throws {
        guard let write else { return }
        try NetscapeCookieFile(path: write, includeSessionCookies: true).save(cookies)
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
        case .headSent(let bytes):
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false).dropLast()
            let shown = lines.map { line -> Substring in
                guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else { return line }
                let field = HTTPField(name: name, value: String(line[line.index(after: colon)...].drop { $0 == " " }))
                return HTTPFields([field]).redactingSecrets().first.map { "\($0.name): \($0.value)"[...] } ?? line
            }
            try? writeAll(2, Array(shown.map { "> " + $0 + "\n" }.joined().utf8)[...])
        case .headReceived(let status, let version, let headers):
            let lines = ["HTTP/\(version.major).\(version.minor) \(status.code) \(status.reasonPhrase)"]
                + headers.redactingSecrets().map { "\($0.name): \($0.value)" } + [""]
            try? writeAll(2, Array(lines.map { "< " + $0 + "\n" }.joined().utf8)[...])
        default:
            break
        }
    }
}

// `_exit`, not `exit`: every byte went out through write(2), so there is no stdio buffer to flush, and
// skipping the C atexit destructors keeps them from racing the event-loop thread, which never stops.
let status = await run()
_exit(status)
