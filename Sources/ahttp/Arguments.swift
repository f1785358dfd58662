// ahttp's command line, declared for swift-argument-parser: the options in curl's spellings, grouped in --help as
// `curl --help <category>` groups them (http, post, upload, output, connection, dns, auth, tls, proxy, verbose,
// curl, cache). ArgumentParser reads the grammar — combined short flags (`-sSfL`, `-sSo FILE`), `-oFILE`, `--a=b`,
// repeated options, `--` — and generates `--help` and the shell completions (`--generate-completion-script`).
//
// What curl does that ArgumentParser cannot express is done around it, each for the reason given:
// - `-K FILE` config files: a file of options is not a command-line grammar; `expandConfigFiles` (ConfigFile.swift)
//   splices its options into the arguments before ArgumentParser sees them.
// - `--help CATEGORY`: ArgumentParser's help takes no argument; `categoryHelp` cuts one group out of its help text.
// - Order across different options (curl joins `-d a --data-urlencode b` in the order given, and the last of
//   `-x`/`--socks5` wins): ArgumentParser keeps each option's own values in order but not their order relative to
//   other options, so those values are `Ordered` — each records when ArgumentParser read it (it reads the command
//   line left to right, converting each value as it meets it).
// - Value options use `.unconditional` parsing: curl takes the next argument as the value even when it begins with
//   a dash (`-d -`, `-H -x`), where ArgumentParser's default would take it for an option.
// - curl's `--no-FLAG` for a boolean: the flags users turn off in a `.curlrc`/`-K` file are declared with
//   `.prefixedNo` (the last of `--location`/`--no-location` wins, as in curl).
//
// To add a feature's options: a new `ParsableArguments` group in its own file, one `@OptionGroup` line in
// `AhttpCommand`, and its resolution in `AhttpCommand.options()`.

import ArgumentParser
import AsyncHTTP
import Synchronization

/// Numbers the values ArgumentParser reads, in the order it reads them.
let argumentSequence = Atomic<Int>(0)

/// An option value with its place on the command line, for options whose order relative to *other* options
/// matters (curl's data options are joined in order; the last proxy option wins).
struct Ordered: ExpressibleByArgument, Sendable {
    var sequence: Int
    var text: String
    init?(argument: String) {
        text = argument
        sequence = argumentSequence.add(1, ordering: .relaxed).newValue
    }
    init(sequence: Int, text: String) {
        self.sequence = sequence
        self.text = text
    }
}

/// A value option as curl reads it: the next argument whatever it looks like.
private let curlValue = SingleValueParsingStrategy.unconditional
/// The same for a repeatable option (`-d -1 -H -x;`): `.singleValue` would take `-1` for an option.
private let curlValues = ArrayParsingStrategy.unconditionalSingleValue

struct HTTPArguments: ParsableArguments {
    @Option(name: [.customShort("X", allowingJoined: true), .customLong("request")], parsing: curlValue,
            help: ArgumentHelp("The request method (GET, POST, PUT, DELETE, …).", valueName: "method"))
    var method: String?
    @Option(name: [.customShort("H", allowingJoined: true), .customLong("header")], parsing: curlValues,
            help: ArgumentHelp("Add a header ('Name: value'; 'Name:' removes one; @FILE reads lines from a file).", valueName: "header/@file"))
    var headers: [String] = []
    @Option(name: [.customShort("A", allowingJoined: true), .customLong("user-agent")], parsing: curlValue,
            help: ArgumentHelp("The User-Agent to send (empty: none).", valueName: "name"))
    var userAgent: String?
    @Option(name: [.customShort("e", allowingJoined: true), .customLong("referer")], parsing: curlValue,
            help: ArgumentHelp("The Referer to send; with ';auto' (URL;auto or ;auto), each redirect's is the URL it came from.", valueName: "URL"))
    var referer: String?
    @Option(name: [.customShort("r", allowingJoined: true), .customLong("range")], parsing: curlValue,
            help: ArgumentHelp("Ask for these bytes only (Range: bytes=RANGE), for a GET or HEAD: 0-499, 500-, -500, 0-0,-1.",
                               valueName: "range"))
    var range: String?
    @Flag(name: [.customShort("I"), .customLong("head")], help: "Send HEAD and show the response head.")
    var head = false
    @Flag(name: [.customShort("G"), .customLong("get")], help: "Send the -d data as the URL's query with GET.")
    var get = false
    @Flag(name: [.customShort("L"), .customLong("location")], inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "Follow redirects (at most 50, or --max-redirs; never https → http).")
    var location = false
    @Flag(name: .customLong("location-trusted"),
          help: "-L, and send -u's credentials (and -H Authorization and Cookie) to the other hosts it leads to too.")
    var locationTrusted = false
    @Flag(name: .customLong("post301"), help: "Under -L, keep a POST a POST on 301 (not a GET).")
    var post301 = false
    @Flag(name: .customLong("post302"), help: "Under -L, keep a POST a POST on 302 (not a GET).")
    var post302 = false
    @Flag(name: .customLong("post303"), help: "Under -L, keep a POST a POST on 303 (not a GET).")
    var post303 = false
    @Option(name: .customLong("max-redirs"), parsing: curlValue, help: ArgumentHelp("The most redirects to follow (-1: no limit).", valueName: "num"))
    var maxRedirs: String?
    @Option(name: [.customShort("b", allowingJoined: true), .customLong("cookie")], parsing: curlValues,
            help: ArgumentHelp("Send NAME=VALUE cookies, or read a Netscape cookies.txt.", valueName: "data|file"))
    var cookies: [String] = []
    @Option(name: [.customShort("c", allowingJoined: true), .customLong("cookie-jar")], parsing: curlValue,
            help: ArgumentHelp("Write every cookie to this file at the end.", valueName: "file"))
    var cookieJar: String?
    @Flag(name: .customLong("compressed"), inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "Ask for a compressed response (gzip, deflate) and decode it.")
    var compressed = false
    @Flag(name: [.customShort("0"), .customLong("http1.0")], help: "Speak HTTP/1.0.")
    var http10 = false
    @Flag(name: .customLong("http1.1"), help: "Speak HTTP/1.1 (the default).")
    var http11 = false
    @Option(name: .customLong("url-query"), parsing: curlValues,
            help: ArgumentHelp("Add to the URL's query, as --data-urlencode encodes ('+' prefix: as given).", valueName: "data"))
    var urlQuery: [String] = []
    @Flag(name: [.customShort("f"), .customLong("fail")], inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "Fail silently on HTTP errors (status ≥ 400): no body, exit 22.")
    var fail = false
    @Flag(name: .customLong("fail-with-body"), inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "On HTTP errors (status ≥ 400) write the body, then exit 22.")
    var failWithBody = false
}

struct PostArguments: ParsableArguments {
    @Option(name: [.customShort("d", allowingJoined: true), .customLong("data")], parsing: curlValues,
            help: ArgumentHelp("POST this data (@FILE reads a file, CR and LF removed; several are joined with &).", valueName: "data"))
    var data: [Ordered] = []
    @Option(name: .customLong("data-ascii"), parsing: curlValues, help: ArgumentHelp("The same as -d.", valueName: "data"))
    var dataASCII: [Ordered] = []
    @Option(name: .customLong("data-binary"), parsing: curlValues,
            help: ArgumentHelp("POST data as it is (@FILE is streamed from disk).", valueName: "data"))
    var dataBinary: [Ordered] = []
    @Option(name: .customLong("data-raw"), parsing: curlValues, help: ArgumentHelp("As -d, but '@' is not special.", valueName: "data"))
    var dataRaw: [Ordered] = []
    @Option(name: .customLong("data-urlencode"), parsing: curlValues,
            help: ArgumentHelp("POST percent-encoded data: [name=]content or [name]@file.", valueName: "data"))
    var dataURLEncode: [Ordered] = []
    @Option(name: .customLong("json"), parsing: curlValues,
            help: ArgumentHelp("POST JSON (@FILE reads a file; Content-Type and Accept set to application/json).", valueName: "data"))
    var json: [Ordered] = []
    @Option(name: [.customShort("F", allowingJoined: true), .customLong("form")], parsing: curlValues,
            help: ArgumentHelp("A multipart/form-data part: name=value, name=@FILE[;type=T][;filename=N], name=<FILE.", valueName: "name=content"))
    var form: [Ordered] = []
    @Option(name: .customLong("form-string"), parsing: curlValues, help: ArgumentHelp("A literal multipart part.", valueName: "name=string"))
    var formString: [Ordered] = []
}

struct UploadArguments: ParsableArguments {
    @Option(name: [.customShort("T", allowingJoined: true), .customLong("upload-file")], parsing: curlValue,
            help: ArgumentHelp("PUT this file, streamed from disk ('-': standard input).", valueName: "file"))
    var uploadFile: String?
    @Option(name: .customLong("expect100-timeout"), parsing: curlValue,
            help: ArgumentHelp("How long to wait for 100 Continue (default 1; bodies of 1 MiB or more wait).", valueName: "seconds"))
    var expect100Timeout: String?
}

struct OutputArguments: ParsableArguments {
    @Option(name: .customLong("archive"), parsing: curlValue,
            help: ArgumentHelp("Save the page with its images, stylesheets, scripts and frames for offline reading: one file with data: URIs when OUT ends in .html, a directory otherwise (ArchiveCommand.swift).",
                               valueName: "out"))
    var archive: String?
    @Option(name: [.customShort("o", allowingJoined: true), .customLong("output")], parsing: curlValues,
            help: ArgumentHelp("Write the body to FILE instead of standard output; the n-th -o is for the n-th URL. Written atomically.", valueName: "file"))
    var output: [Ordered] = []
    @Flag(name: [.customShort("O"), .customLong("remote-name")],
          help: "Name the output file from the URL (one -O per URL, after the URLs -o took).")
    var remoteName: Int
    @Flag(name: .customLong("remote-name-all"), help: "-O for every URL.")
    var remoteNameAll = false
    @Flag(name: [.customShort("J"), .customLong("remote-header-name")],
          help: "With -O, name the file from the response's Content-Disposition (its last path component, never hidden, never replacing a file).")
    var remoteHeaderName = false
    @Flag(name: .customLong("create-dirs"), inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "Create the directories -o needs.")
    var createDirs = false
    @Option(name: .customLong("output-dir"), parsing: curlValue,
            help: ArgumentHelp("Put the files -o and -O write in DIR (DIR/FILE).", valueName: "dir"))
    var outputDir: String?
    @Option(name: .customLong("max-filesize"), parsing: curlValue,
            help: ArgumentHelp("Refuse a response whose Content-Length is more than BYTES (K, M or G), exit 63.", valueName: "bytes"))
    var maxFilesize: String?
    @Option(name: [.customShort("D", allowingJoined: true), .customLong("dump-header")], parsing: curlValue,
            help: ArgumentHelp("Write the response heads to FILE ('-': standard output).", valueName: "file"))
    var dumpHeader: String?
    @Flag(name: [.customShort("i"), .customLong("include")], inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "Write the response head before the body.")
    var include = false
    @Option(name: [.customShort("w", allowingJoined: true), .customLong("write-out")], parsing: curlValue,
            help: ArgumentHelp("Write this after each transfer: %{http_code}, %{time_total}, %{json}, … (@FILE reads it from a file; see docs/cli.md).", valueName: "format"))
    var writeOut: String?
    @Option(name: [.customShort("C", allowingJoined: true), .customLong("continue-at")], parsing: curlValue,
            help: ArgumentHelp("'-': resume the partial download of -o (Range + If-Range).", valueName: "-"))
    var continueAt: String?
}

struct ConnectionArguments: ParsableArguments {
    @Option(name: .customLong("url"), parsing: curlValues, help: ArgumentHelp("A URL to fetch (as a plain argument).", valueName: "URL"))
    var url: [Ordered] = []
    @Option(name: .customLong("connect-timeout"), parsing: curlValue,
            help: ArgumentHelp("The most seconds to spend connecting (default and 0: 300, as curl).", valueName: "seconds"))
    var connectTimeout: String?
    @Option(name: [.customShort("m", allowingJoined: true), .customLong("max-time")], parsing: curlValue,
            help: ArgumentHelp("The most seconds for each whole transfer (0: no limit).", valueName: "seconds"))
    var maxTime: String?
    @Option(name: .customLong("limit-rate"), parsing: curlValue,
            help: ArgumentHelp("Bytes per second for each transfer, with K, M or G (0: no limit).", valueName: "speed"))
    var limitRate: String?
    @Option(name: [.customShort("Y", allowingJoined: true), .customLong("speed-limit")], parsing: curlValue,
            help: ArgumentHelp("Abort a transfer slower than this many bytes per second for --speed-time (default 30 s).",
                               valueName: "speed"))
    var speedLimit: String?
    @Option(name: [.customShort("y", allowingJoined: true), .customLong("speed-time")], parsing: curlValue,
            help: ArgumentHelp("Abort a transfer slower than --speed-limit (default 1) for this many seconds.", valueName: "seconds"))
    var speedTime: String?
    @Option(name: .customLong("unix-socket"), parsing: curlValue, help: ArgumentHelp("Connect through this Unix socket.", valueName: "path"))
    var unixSocket: String?
    @Option(name: .customLong("abstract-unix-socket"), parsing: curlValue,
            help: ArgumentHelp("Connect through this abstract Unix socket.", valueName: "name"))
    var abstractUnixSocket: String?
    @Flag(name: [.customShort("N"), .customLong("no-buffer")],
          help: "Accepted for curl's sake: ahttp writes each part of the body as it arrives, unbuffered.")
    var noBuffer = false
    @Option(name: .customLong("proto"), parsing: curlValue,
            help: ArgumentHelp("The protocols allowed for the URLs: curl's list ('=https', '-http', '-all,https').", valueName: "protocols"))
    var proto: String?
    @Option(name: .customLong("proto-redir"), parsing: curlValue,
            help: ArgumentHelp("The protocols a redirect may go to (default: http, https).", valueName: "protocols"))
    var protoRedir: String?
    @Flag(exclusivity: .chooseLast)
    var ipFamily: IPFamilyFlag?
    @Option(name: .customLong("happy-eyeballs-timeout-ms"), parsing: curlValue,
            help: ArgumentHelp("Milliseconds before the next address is tried (at least 10; default 250).", valueName: "ms"))
    var happyEyeballsTimeout: String?
}

/// curl's `-4`/`--ipv4` and `-6`/`--ipv6`: the last one given wins.
enum IPFamilyFlag: String, EnumerableFlag {
    case ipv4, ipv6

    static func name(for value: IPFamilyFlag) -> NameSpecification {
        switch value {
        case .ipv4: [.customShort("4"), .customLong("ipv4")]
        case .ipv6: [.customShort("6"), .customLong("ipv6")]
        }
    }

    static func help(for value: IPFamilyFlag) -> ArgumentHelp? {
        switch value {
        case .ipv4: "Connect to IPv4 addresses only."
        case .ipv6: "Connect to IPv6 addresses only."
        }
    }
}

struct DNSArguments: ParsableArguments {
    @Option(name: .customLong("resolve"), parsing: curlValues,
            help: ArgumentHelp("Use ADDR for HOST:PORT ('*' for any host; '+' to keep after the first use).", valueName: "host:port:addr[,addr]"))
    var resolve: [String] = []
    @Option(name: .customLong("connect-to"), parsing: curlValues,
            help: ArgumentHelp("Connect to HOST2:PORT2 for requests to HOST1:PORT1.", valueName: "host1:port1:host2:port2"))
    var connectTo: [String] = []
}

/// curl's `--basic`, `--digest`, `--ntlm`, `--anyauth`: the last one given wins.
enum AuthSchemeFlag: String, EnumerableFlag {
    case basic, digest, ntlm, anyauth
    static func help(for value: AuthSchemeFlag) -> ArgumentHelp? {
        switch value {
        case .basic: "Answer with Basic, sent at once (the default with -u)."
        case .digest: "Answer a Digest challenge."
        case .ntlm: "Answer an NTLM challenge (DOMAIN\\user)."
        case .anyauth: "Answer whichever challenge the server makes."
        }
    }
}

/// curl's `--proxy-basic`, `--proxy-digest`, `--proxy-ntlm`, `--proxy-anyauth`: the last one given wins.
enum ProxyAuthSchemeFlag: String, EnumerableFlag {
    case basic, digest, ntlm, anyauth
    static func name(for value: ProxyAuthSchemeFlag) -> NameSpecification { .customLong("proxy-" + value.rawValue) }
    static func help(for value: ProxyAuthSchemeFlag) -> ArgumentHelp? {
        switch value {
        case .basic: "Send -U as Basic to the proxy at once (the default with -U)."
        case .digest: "Answer the proxy's Digest challenge with -U."
        case .ntlm: "Answer the proxy's NTLM challenge with -U (DOMAIN\\user)."
        case .anyauth: "Answer whichever challenge the proxy makes with -U."
        }
    }
}

struct AuthArguments: ParsableArguments {
    @Option(name: [.customShort("u", allowingJoined: true), .customLong("user")], parsing: curlValue,
            help: ArgumentHelp("Server credentials (DOMAIN\\user for NTLM). A URL's user:password@ does the same.", valueName: "user:password"))
    var user: String?
    @Flag(exclusivity: .chooseLast)
    var scheme: AuthSchemeFlag?
    @Option(name: .customLong("oauth2-bearer"), parsing: curlValue, help: ArgumentHelp("Send this Bearer token.", valueName: "token"))
    var bearer: String?
    @Option(name: .customLong("aws-sigv4"), parsing: curlValue,
            help: ArgumentHelp("Sign every request with AWS Signature Version 4; -u gives ACCESS_KEY:SECRET_KEY (AWSSigV4Option.swift).",
                               valueName: "aws:amz[:region[:service]]"))
    var awsSigV4: String?
}

struct TLSArguments: ParsableArguments {
    @Flag(name: [.customShort("k"), .customLong("insecure")], inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "Do not verify the server's certificate.")
    var insecure = false
    @Option(name: .customLong("cacert"), parsing: curlValue, help: ArgumentHelp("Trust the CAs in this PEM file.", valueName: "file"))
    var caCert: String?
    @Option(name: .customLong("capath"), parsing: curlValue,
            help: ArgumentHelp("Also trust the CAs in this directory (hashed names: openssl rehash DIR).", valueName: "dir"))
    var caPath: String?
    @Option(name: [.customShort("E", allowingJoined: true), .customLong("cert")], parsing: curlValue,
            help: ArgumentHelp("A client certificate (PEM; the key too unless --key).", valueName: "certificate"))
    var cert: String?
    @Option(name: .customLong("key"), parsing: curlValue, help: ArgumentHelp("The client certificate's private key (PEM, unencrypted).", valueName: "key"))
    var key: String?
    @Flag(exclusivity: .chooseLast)
    var tlsMinimum: TLSMinimumFlag?
}

/// curl's `--tlsv1.2` and `--tlsv1.3`: the oldest TLS version accepted; the last one given wins.
enum TLSMinimumFlag: String, EnumerableFlag {
    case tls12, tls13
    static func name(for value: TLSMinimumFlag) -> NameSpecification {
        switch value {
        case .tls12: .customLong("tlsv1.2")
        case .tls13: .customLong("tlsv1.3")
        }
    }
    static func help(for value: TLSMinimumFlag) -> ArgumentHelp? {
        switch value {
        case .tls12: "TLS 1.2 or later (the default)."
        case .tls13: "TLS 1.3 or later."
        }
    }
}

struct ProxyArguments: ParsableArguments {
    @Option(name: [.customShort("x", allowingJoined: true), .customLong("proxy")], parsing: curlValues,
            help: ArgumentHelp("Use this proxy: http://, https://, socks5://, socks5h://, socks4:// or socks4a:// (without -x: http_proxy, https_proxy, all_proxy, no_proxy).", valueName: "[scheme://]host[:port]"))
    var proxy: [Ordered] = []
    @Option(name: .customLong("socks5"), parsing: curlValues, help: ArgumentHelp("A SOCKS5 proxy (names resolved here).", valueName: "host[:port]"))
    var socks5: [Ordered] = []
    @Option(name: .customLong("socks5-hostname"), parsing: curlValues,
            help: ArgumentHelp("A SOCKS5 proxy that resolves names.", valueName: "host[:port]"))
    var socks5Hostname: [Ordered] = []
    @Option(name: .customLong("socks4"), parsing: curlValues, help: ArgumentHelp("A SOCKS4 proxy (names resolved here, IPv4 only).", valueName: "host[:port]"))
    var socks4: [Ordered] = []
    @Option(name: .customLong("socks4a"), parsing: curlValues, help: ArgumentHelp("A SOCKS4a proxy (it resolves names).", valueName: "host[:port]"))
    var socks4a: [Ordered] = []
    @Option(name: [.customShort("U", allowingJoined: true), .customLong("proxy-user")], parsing: curlValue,
            help: ArgumentHelp("Proxy credentials.", valueName: "user:password"))
    var proxyUser: String?
    @Option(name: .customLong("noproxy"), parsing: curlValue, help: ArgumentHelp("Hosts to reach without the proxy.", valueName: "no-proxy-list"))
    var noProxy: String?
    @Flag(exclusivity: .chooseLast)
    var proxyScheme: ProxyAuthSchemeFlag?
    @Flag(name: .customLong("suppress-connect-headers"), inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "Leave the proxy's answers to CONNECT out of -i and -D.")
    var suppressConnectHeaders = false
    @Flag(name: [.customShort("p"), .customLong("proxytunnel")], inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "Through the HTTP proxy given with -x, send http:// URLs through a CONNECT tunnel too.")
    var proxyTunnel = false
    @Flag(name: .customLong("proxy-insecure"), inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "Do not verify the HTTPS proxy's certificate.")
    var proxyInsecure = false
    @Option(name: .customLong("proxy-cacert"), parsing: curlValue,
            help: ArgumentHelp("Trust the CAs in this PEM file for the HTTPS proxy.", valueName: "file"))
    var proxyCACert: String?
    @Option(name: .customLong("proxy-cert"), parsing: curlValue,
            help: ArgumentHelp("A client certificate for the HTTPS proxy (PEM; the key too unless --proxy-key).", valueName: "certificate"))
    var proxyCert: String?
    @Option(name: .customLong("proxy-key"), parsing: curlValue,
            help: ArgumentHelp("The HTTPS proxy's client certificate's private key (PEM, unencrypted).", valueName: "key"))
    var proxyKey: String?
}

struct VerboseArguments: ParsableArguments {
    @Flag(name: [.customShort("v"), .customLong("verbose")], inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "Show each request and response head on standard error (secrets redacted).")
    var verbose = false
    @Flag(name: [.customShort("s"), .customLong("silent")], inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "No progress meter and no error messages.")
    var silent = false
    @Flag(name: [.customShort("S"), .customLong("show-error")], inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "With -s, still show error messages.")
    var showError = false
    @Option(name: .customLong("trace-ascii"), parsing: curlValue,
            help: ArgumentHelp("Write a trace of each transfer to FILE ('-': standard output; secrets redacted).", valueName: "file"))
    var traceASCII: String?
    @Flag(name: [.customShort("#"), .customLong("progress-bar")], help: "A progress bar instead of the meter.")
    var progressBar = false
    @Flag(name: .customLong("no-progress-meter"), help: "No progress meter; errors and warnings still shown (unlike -s).")
    var noProgressMeter = false
}

struct CurlArguments: ParsableArguments {
    @Option(name: [.customShort("K", allowingJoined: true), .customLong("config")], parsing: curlValues,
            help: ArgumentHelp("Read options from FILE, curl's config syntax ('-': standard input).", valueName: "file"))
    var config: [String] = []
    @Flag(name: [.customShort("q"), .customLong("disable")], help: "Accepted for curl's sake: ahttp reads no .curlrc.")
    var disable = false
    @Flag(name: [.customShort("g"), .customLong("globoff")], help: "Accepted for curl's sake: ahttp does not glob URLs ({a,b}, [1-3]).")
    var globoff = false
    @Flag(name: .customLong("path-as-is"), inversion: .prefixedNo, exclusivity: .chooseLast,
          help: "Do not squash .. sequences in URL path.")
    var pathAsIs = false
    @Flag(name: .customShort("V"), help: "Show the version and exit (as --version).")
    var showVersion = false
    @Flag(name: [.customShort("Z"), .customLong("parallel")], help: "Run the URLs at once.")
    var parallel = false
    @Option(name: .customLong("parallel-max"), parsing: curlValue, help: ArgumentHelp("At most this many at once with -Z (default 50).", valueName: "num"))
    var parallelMax: String?
    @Flag(name: .customLong("fail-early"), help: "With -Z, the first failure stops the others.")
    var failEarly = false
    @Option(name: .customLong("retry"), parsing: curlValue,
            help: ArgumentHelp("Retry timeouts, failed lookups and 408/429/500/502/503/504 this many times.", valueName: "num"))
    var retry: String?
    @Flag(name: .customLong("retry-connrefused"), help: "With --retry, a refused connection is retried too.")
    var retryConnrefused = false
    @Flag(name: .customLong("retry-all-errors"), help: "With --retry, every failure is retried (with -f, every HTTP error too).")
    var retryAllErrors = false
    @Option(name: .customLong("retry-delay"), parsing: curlValue, help: ArgumentHelp("Seconds between retries (default: 1 s, doubling).", valueName: "seconds"))
    var retryDelay: String?
    @Option(name: .customLong("retry-max-time"), parsing: curlValue, help: ArgumentHelp("No retry after this many seconds.", valueName: "seconds"))
    var retryMaxTime: String?
}

struct CacheArguments: ParsableArguments {
    @Option(name: .customLong("cache"), parsing: curlValue, help: ArgumentHelp("Keep responses in DIR (RFC 9111).", valueName: "dir"))
    var cache: String?
    @Option(name: .customLong("cache-policy"), parsing: curlValue,
            help: ArgumentHelp("ASIHTTPRequest's policy names: askServerIfModifiedWhenStale, askServerIfModified, onlyLoadIfNotCached, dontLoad, fallbackToCacheIfLoadFails, doNotRead, doNotWrite.", valueName: "name[,name]"))
    var cachePolicy: String?
}

/// The `ahttp` command: curl's options, grouped as `curl --help <category>` groups them.
struct AhttpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ahttp",
        abstract: "A curl-like command line over AsyncHTTP.",
        discussion: """
            Several URLs are fetched in order over the same connection pool, as curl does; the n-th -o names the \
            n-th URL's output. The exit status is curl's: 0, 22 with -f on an HTTP error, 6, 7, 28, 35, 60, … for \
            a failed transfer (the last URL's), 2 for a command line ahttp cannot read.
            `ahttp --help CATEGORY` shows one group: http, post, upload, output, connection, dns, auth, tls, proxy, \
            verbose, curl, cache.
            """,
        version: "ahttp \(AsyncHTTPVersion.string) (AsyncHTTP)",
        helpNames: [.short, .long])

    @OptionGroup(title: "http") var http: HTTPArguments
    @OptionGroup(title: "post") var post: PostArguments
    @OptionGroup(title: "upload") var upload: UploadArguments
    @OptionGroup(title: "output") var output: OutputArguments
    @OptionGroup(title: "connection") var connection: ConnectionArguments
    @OptionGroup(title: "dns") var dns: DNSArguments
    @OptionGroup(title: "auth") var auth: AuthArguments
    @OptionGroup(title: "tls") var tls: TLSArguments
    @OptionGroup(title: "proxy") var proxy: ProxyArguments
    @OptionGroup(title: "verbose") var verbose: VerboseArguments
    @OptionGroup(title: "curl") var curl: CurlArguments
    @OptionGroup(title: "cache") var cache: CacheArguments

    @Argument(parsing: .remaining, help: ArgumentHelp("The URLs to fetch, in order.", valueName: "URL"))
    var urls: [Ordered] = []
}

/// The help categories, in `--help` order.
let helpCategories = ["http", "post", "upload", "output", "connection", "dns", "auth", "tls", "proxy", "verbose", "curl", "cache"]

/// `ahttp --help CATEGORY`: the group of ArgumentParser's help whose title is CATEGORY; nil for an unknown one.
func categoryHelp(_ category: String, fullHelp: String) -> String? {
    let lowered = category.lowercased()
    guard lowered != "all" else { return fullHelp }
    guard helpCategories.contains(lowered) else { return nil }
    var lines: [Substring] = []
    var inside = false
    for line in fullHelp.split(separator: "\n", omittingEmptySubsequences: false) {
        if !line.hasPrefix(" "), line.hasSuffix(":"), !line.isEmpty {
            inside = line.dropLast().lowercased() == lowered
        }
        if inside { lines.append(line) }
    }
    while lines.last?.isEmpty == true { lines.removeLast() }
    return lines.isEmpty ? nil : lines.joined(separator: "\n") + "\n"
}
