import Foundation
import XCTest

/// The done-criterion of the CLI: a table of curl invocations, each run with Debian's `curl` and with `ahttp`
/// against the same local servers (httpbin, nginx, the fault server), comparing standard output, the exit status,
/// the files written (-o, -D, --create-dirs) and, for rows run with -s, whether anything was written to stderr.
///
/// What legitimately differs is normalised, in both outputs alike, and nothing else:
/// - `Date:` header values (and `"date"` in `%{header_json}`): the two runs may straddle a second.
/// - The User-Agent each tool sends by default (`curl/7.88.1`, `AsyncHTTP/x.y.z`), where httpbin echoes it.
/// - Timing and speed values of `-w` (`%{time_*}`, `%{speed_*}`): their shape is compared (`<seconds>`,
///   `<number>`), never their value.
/// - A multipart boundary (random in both) and the Content-Length it changes.
/// - One deliberate difference, on its row: curl echoes a URL's password in `%{url_effective}`; ahttp never does,
///   so curl's `user:password@` is normalised to `user@` before comparing, and ahttp's output is checked not to
///   hold the password.
/// Each tool runs in a directory of its own (its -o files are compared afterwards), with HOME pointing at an
/// empty directory so no ~/.curlrc applies, and with no proxy variables.
final class CommandLineCurlParityTests: XCTestCase {
    struct Row {
        var name: String
        var arguments: [String]
        /// Files (relative to the working directory) both tools must write identically.
        var files: [String] = []
        /// Compare whether stderr is empty (for rows run with -s or -sS, where curl writes no meter).
        var stderrPresence = false
        /// Extra normalisation for this row, applied to both outputs.
        var normalise: (String) -> String = { $0 }
        /// Normalisation applied to curl's output only (a deliberate difference, documented on the row).
        var curlOnly: (String) -> String = { $0 }
        /// Files to create in both working directories first.
        var inputs: [String: String] = [:]
        /// Environment variables for both tools (placeholders substituted), after the proxy variables are cleared.
        var environment: [String: String] = [:]
    }

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var files: [String: String]
    }

    /// Placeholders in a row's arguments: {httpbin}, {nginx}, {nginxs}, {ca}, {dead}, {port} (httpbin's port).
    func substitute(_ text: String, _ values: [String: String]) -> String {
        var result = text
        for (key, value) in values { result = result.replacingOccurrences(of: "{\(key)}", with: value) }
        return result
    }

    func run(_ executable: String, _ arguments: [String], in directory: URL, home: URL,
             environment extra: [String: String] = [:]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment
        for name in ["http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"] {
            environment[name] = nil
        }
        environment["HOME"] = home.path
        environment["XDG_CONFIG_HOME"] = home.path
        environment["CURL_HOME"] = home.path
        environment.merge(extra) { $1 }
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Bounded: no row takes more than a few seconds; a hung tool is killed after 30 s and fails the row. The
        // watchdog holds the process weakly: a cancelled work item is kept until its time comes, and must not keep
        // the process and its pipes (descriptors other tests count) alive that long.
        let watchdog = DispatchWorkItem { [weak process] in if let process, process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: watchdog)
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        try? out.fileHandleForReading.close()
        try? err.fileHandleForReading.close()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    func runBoth(_ row: Row, values: [String: String]) throws -> (curl: Run, ahttp: Run) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("parity-\(UUID().uuidString)")
        addTeardownBlock { try? FileManager.default.removeItem(at: root) }
        var runs: [Run] = []
        for (tool, executable) in [("curl", "/usr/bin/curl"), ("ahttp", ahttpExecutable().path)] {
            let directory = root.appendingPathComponent(tool)
            let home = root.appendingPathComponent(tool + "-home")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            for (name, content) in row.inputs {
                try Data(substitute(content, values).utf8).write(to: directory.appendingPathComponent(name))
            }
            let arguments = row.arguments.map { substitute($0, values) }
            let (status, stdout, stderr) = try run(executable, arguments, in: directory, home: home,
                                                   environment: row.environment.mapValues { substitute($0, values) })
            var files: [String: String] = [:]
            for name in row.files {
                let path = directory.appendingPathComponent(name).path
                files[name] = FileManager.default.fileExists(atPath: path)
                    ? String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self) : "<missing>"
            }
            runs.append(Run(status: status, stdout: stdout, stderr: stderr, files: files))
        }
        return (runs[0], runs[1])
    }

    /// What legitimately differs between the two tools (see the type's comment), for every row.
    static func normaliseCommon(_ text: String) -> String {
        var result = text
        result = result.replacingOccurrences(of: #"(?m)^([Dd]ate: ).*?(\r?)$"#, with: "$1<date>$2", options: .regularExpression)
        result = result.replacingOccurrences(of: #""date":\["[^"]*"\]"#, with: #""date":["<date>"]"#, options: .regularExpression)
        result = result.replacingOccurrences(of: #"curl/7\.88\.1|AsyncHTTP/[0-9.]+"#, with: "<agent>", options: .regularExpression)
        result = result.replacingOccurrences(of: #"boundary=[-A-Za-z0-9'()+_,./:=?]+"#, with: "boundary=<b>", options: .regularExpression)
        return result
    }

    func check(_ rows: [Row], values: [String: String], file: StaticString = #filePath, line: UInt = #line) throws {
        for row in rows {
            let (curl, ahttp) = try runBoth(row, values: values)
            func clean(_ text: String, curlSide: Bool) -> String {
                row.normalise(Self.normaliseCommon(curlSide ? row.curlOnly(text) : text))
            }
            let context = "[\(row.name)] \(row.arguments.joined(separator: " "))\ncurl stderr: \(curl.stderr)\nahttp stderr: \(ahttp.stderr)"
            XCTAssertEqual(ahttp.status, curl.status, "exit status \(context)", file: file, line: line)
            XCTAssertEqual(clean(ahttp.stdout, curlSide: false), clean(curl.stdout, curlSide: true), "stdout \(context)", file: file, line: line)
            for name in row.files {
                XCTAssertEqual(clean(ahttp.files[name] ?? "", curlSide: false), clean(curl.files[name] ?? "", curlSide: true),
                               "file \(name) \(context)", file: file, line: line)
            }
            if row.stderrPresence {
                XCTAssertEqual(ahttp.stderr.isEmpty, curl.stderr.isEmpty, "stderr written or not \(context)", file: file, line: line)
            }
        }
    }

    func peerValues() throws -> [String: String] {
        let httpbin = try Peers.httpbin()
        let nginx = try Peers.nginx()
        return [
            "httpbin": httpbin,
            "port": httpbin.split(separator: ":").last.map(String.init) ?? "",
            "nginx": "http://127.0.0.1:\(nginx.httpPort)",
            "nginxs": "https://localhost:\(nginx.httpsPort)",
            "nginxport": String(nginx.httpPort),
            "ca": nginx.caFile,
            "dead": "http://127.0.0.1:\(try unusedPort())/",
        ]
    }

    static func seconds(_ text: String) -> String {
        text.replacingOccurrences(of: #"[0-9]+\.[0-9]{6}"#, with: "<seconds>", options: .regularExpression)
    }

    /// Requests, bodies and the flags curl users type every day, against httpbin and nginx.
    func testEverydayFlagsMatchCurl() throws {
        let agent = ["-A", "parity/1"]
        try check([
            Row(name: "plain GET", arguments: agent + ["-s", "{httpbin}/get?a=1&b=two"], stderrPresence: true),
            Row(name: "combined short flags -sSfL", arguments: agent + ["-sSfL", "{httpbin}/redirect/2"], stderrPresence: true),
            Row(name: "combined flags ending in a value option: -sSo FILE", arguments: ["-sSo", "out.txt", "{nginx}/small.txt"],
                files: ["out.txt"], stderrPresence: true),
            Row(name: "a value joined to its short option: -oFILE", arguments: ["-s", "-oout.txt", "{nginx}/small.txt"], files: ["out.txt"]),
            Row(name: "-- ends the options", arguments: agent + ["-s", "--", "{httpbin}/get"]),
            Row(name: "a URL without a scheme is http", arguments: agent + ["-s", "127.0.0.1:{port}/get"]),
            Row(name: "-G puts -d into the query", arguments: agent + ["-s", "-G", "-d", "a=1", "-d", "b=x y", "{httpbin}/get"]),
            Row(name: "-d and --data-urlencode joined in order", arguments: agent + ["-s", "-d", "a=1", "--data-urlencode", "b=x y&z", "{httpbin}/post"]),
            Row(name: "--data-urlencode and -d joined in order", arguments: agent + ["-s", "--data-urlencode", "b=x y", "-d", "a=1", "{httpbin}/post"]),
            Row(name: "-d @file strips CR and LF; --data-binary keeps them", arguments: agent + ["-s", "-d", "@body.txt", "{httpbin}/post"],
                inputs: ["body.txt": "line=1\r\nnext=2\n"]),
            Row(name: "--data-binary @file", arguments: agent + ["-s", "--data-binary", "@body.txt", "-H", "Content-Type: text/plain", "{httpbin}/post"],
                inputs: ["body.txt": "line one\r\nline two\n"]),
            Row(name: "--json sets the JSON headers", arguments: agent + ["-s", "--json", #"{"k":1}"#, "{httpbin}/post"]),
            Row(name: "--json pieces are concatenated", arguments: agent + ["-s", "--json", #"{"a":"#, "--json", "[1,2]}", "{httpbin}/post"]),
            Row(name: "-X PUT with -d", arguments: agent + ["-s", "-X", "PUT", "-d", "v=1", "{httpbin}/put"]),
            // curl sends `Expect: 100-continue` with every -T; ahttp only for bodies of 1 MiB or more (docs/cli.md).
            Row(name: "-T uploads a file with PUT", arguments: agent + ["-s", "-H", "Expect:", "-T", "up.txt", "{httpbin}/put"], inputs: ["up.txt": "uploaded\n"]),
            Row(name: "-F multipart fields", arguments: agent + ["-s", "-F", "a=1", "-F", "b=two words", "{httpbin}/post"],
                normalise: { $0.replacingOccurrences(of: #""Content-Length": "[0-9]+""#, with: "\"Content-Length\": \"<n>\"", options: .regularExpression) }),
            Row(name: "-A and -e", arguments: ["-s", "-A", "agent/9", "-e", "http://from.example/page", "{httpbin}/headers"]),
            Row(name: "repeated -H sends both; 'Name:' removes Accept", arguments: agent + ["-s", "-H", "X-A: 1", "-H", "X-A: 2", "-H", "Accept:", "{httpbin}/headers"]),
            Row(name: "-H @file", arguments: agent + ["-s", "-H", "@headers.txt", "{httpbin}/headers"], inputs: ["headers.txt": "X-One: 1\nX-Two: 2\n"]),
            Row(name: "-H '' and -H without a colon are passed over", arguments: agent + ["-s", "-H", "", "-H", "foo", "-H", "X-A: 1", "{httpbin}/headers"],
                stderrPresence: true),
            Row(name: "-H @missing warns and goes on", arguments: agent + ["-H", "@nope.txt", "-H", "X-A: 1", "-o", "out.json", "{httpbin}/headers"],
                files: ["out.json"], stderrPresence: true),
            Row(name: "-s -H @missing: no warning", arguments: agent + ["-s", "-H", "@nope.txt", "{httpbin}/headers"], stderrPresence: true),
            Row(name: "--url-query, encoded and '+' as is", arguments: agent + ["-s", "--url-query", "q=a b", "--url-query", "+raw=%41", "{httpbin}/get?x=1"]),
            Row(name: "-b NAME=VALUE", arguments: agent + ["-s", "-b", "flavour=oat; size=2", "{httpbin}/cookies"]),
            Row(name: "several -b NAME=VALUE are one Cookie field", arguments: agent + ["-s", "-b", "a=1", "-b", "b=2", "{httpbin}/headers"]),
            Row(name: "-G with --data-binary @file puts the file in the query", arguments: agent + ["-s", "-G", "--data-binary", "@q.txt", "{httpbin}/get"],
                inputs: ["q.txt": "a=1&b=2"]),
            // AsyncHTTP decodes gzip and deflate; curl also offers br and zstd.
            Row(name: "--compressed", arguments: agent + ["-s", "--compressed", "{httpbin}/gzip"],
                normalise: { $0.replacingOccurrences(of: #""Accept-Encoding": "[^"]*""#, with: "\"Accept-Encoding\": \"<codings>\"", options: .regularExpression) }),
            Row(name: "-i shows the head", arguments: ["-s", "-i", "{httpbin}/response-headers?X-Thing=1"]),
            Row(name: "-I sends HEAD", arguments: ["-s", "-I", "{nginx}/small.txt"]),
            Row(name: "-i with -L shows every hop's head", arguments: agent + ["-s", "-i", "-L", "{httpbin}/redirect/1"]),
            Row(name: "--http1.0", arguments: ["-s", "--http1.0", "-w", "%{http_code}", "{nginx}/small.txt"]),
            Row(name: "--resolve", arguments: agent + ["-s", "--resolve", "parity.test:{port}:127.0.0.1", "http://parity.test:{port}/headers"]),
            Row(name: "--connect-to", arguments: agent + ["-s", "--connect-to", "parity.test:80:127.0.0.1:{port}", "http://parity.test/headers"]),
            Row(name: "--connect-timeout and --max-time that are not reached", arguments: ["-s", "--connect-timeout", "5", "-m", "20", "{nginx}/small.txt"]),
            Row(name: "-u sends Basic at once", arguments: ["-s", "-u", "ann:pw", "{httpbin}/basic-auth/ann/pw"]),
            Row(name: "credentials in the URL count as -u", arguments: ["-s", "http://ann:pw@127.0.0.1:{port}/basic-auth/ann/pw"]),
            Row(name: "-u wins over credentials in the URL", arguments: ["-s", "-u", "ann:pw", "http://cat:dog@127.0.0.1:{port}/basic-auth/ann/pw"]),
            Row(name: "--digest", arguments: ["-s", "--digest", "-u", "dan:pw", "{httpbin}/digest-auth/auth/dan/pw"]),
            Row(name: "https with --cacert", arguments: ["-s", "--cacert", "{ca}", "{nginxs}/small.txt"]),
            Row(name: "https with -k", arguments: ["-s", "-k", "{nginxs}/small.txt"]),
        ], values: try peerValues())
    }

    /// URLs with bytes RFC 3986 wants encoded, which curl sends as typed: ahttp encodes them (its URL parser is
    /// strict) and shows the URL as typed in %{url_effective}, as curl. nginx answers both alike.
    func testURLsCurlSendsAsTypedMatchCurl() throws {
        let codes = ["-o", "/dev/null", "-w", "%{http_code} %{exitcode} %{scheme} %{url_effective}"]
        try check([
            Row(name: "JSON in the query, with -g", arguments: ["-s", "-g"] + codes + [#"{nginx}/small.txt?f={"a":[1]}"#]),
            Row(name: "a '|' in the query", arguments: ["-s"] + codes + ["{nginx}/small.txt?q=a|b"]),
            Row(name: "non-ASCII in the path", arguments: ["-s"] + codes + ["{nginx}/café"]),
            Row(name: "a '%' that starts no escape", arguments: ["-s"] + codes + ["{nginx}/small.txt?a=%zz"]),
            Row(name: "a fragment is shown, never sent", arguments: ["-s", "-g"] + codes + ["{nginx}/small.txt#part{1}"]),
            Row(name: "an empty query and fragment are not shown", arguments: ["-s"] + codes + ["{nginx}/small.txt?#"]),
            Row(name: "a space is refused: 3", arguments: ["-s"] + codes + ["{nginx}/a b"]),
            Row(name: "dot segments are removed", arguments: ["-s"] + codes + ["{nginx}/x/../y/./small.txt/.."]),
            Row(name: "--path-as-is keeps them", arguments: ["-s", "--path-as-is"] + codes + ["{nginx}/x/../small.txt"]),
        ], values: try peerValues())
    }

    /// SOCKS4 through dante and SOCKS4a through `ssh -D`, spelled as curl spells them (`--socks4`, `--socks4a`,
    /// `-x socks4://`, `-x socks4a://`, `all_proxy`), with curl's output and exit codes: 97 for a target the proxy
    /// refuses (dante's reply 91; sshd closing) and for an IPv6 target through SOCKS4.
    func testSOCKS4MatchesCurl() throws {
        var values = try peerValues()
        let socks4 = try Peers.socks4()
        let socks4a = try Peers.socks4a().peer
        values["s4"] = "127.0.0.1:\(socks4.port)"
        values["s4a"] = "127.0.0.1:\(socks4a.port)"
        let code = ["-w", " %{http_code}"]
        try check([
            Row(name: "--socks4", arguments: ["-s", "--socks4", "{s4}"] + code + ["{nginx}/small.txt"]),
            Row(name: "-x socks4:// with a name resolved here", arguments: ["-s", "-x", "socks4://{s4}"] + code
                + ["http://localhost:{nginxport}/small.txt"]),
            Row(name: "--socks4 with https", arguments: ["-s", "--socks4", "{s4}", "--cacert", "{ca}"] + code + ["{nginxs}/small.txt"]),
            Row(name: "--socks4 with a user ID", arguments: ["-s", "-x", "socks4://ann@{s4}"] + code + ["{nginx}/small.txt"]),
            Row(name: "--socks4 refused by the proxy's rules", arguments: ["-s", "--socks4", "{s4}"] + code + ["http://192.0.2.1:{nginxport}/"]),
            Row(name: "--socks4 to an IPv6 address", arguments: ["-s", "--socks4", "{s4}"] + code + ["http://[::1]:{nginxport}/small.txt"]),
            Row(name: "--socks4a", arguments: ["-s", "--socks4a", "{s4a}"] + code + ["http://localhost:{nginxport}/small.txt"]),
            Row(name: "-x socks4a:// with https", arguments: ["-s", "-x", "socks4a://{s4a}", "--cacert", "{ca}"] + code + ["{nginxs}/small.txt"]),
            Row(name: "--socks4a to a target the proxy may not open", arguments: ["-s", "--socks4a", "{s4a}"] + code
                + ["http://127.0.0.2:{nginxport}/small.txt"]),
            Row(name: "the last proxy option wins", arguments: ["-s", "--socks4", "127.0.0.1:1", "--socks4a", "{s4a}"] + code
                + ["http://localhost:{nginxport}/small.txt"]),
            // Proxies from the environment bypass loopback (ahttp) or not (curl), so the origin is named otherwise
            // and --connect-to takes it to nginx: the SOCKS4a proxy is asked for the rule's target.
            Row(name: "all_proxy=socks4a://", arguments: ["-s", "--connect-to", "origin.example:80:127.0.0.1:{nginxport}"] + code
                + ["http://origin.example/small.txt"], environment: ["all_proxy": "socks4a://{s4a}"]),
        ], values: values)
    }

    /// Proxies with --connect-to, --resolve and -p, through tinyproxy and dante: curl's routing rules (its test
    /// 2050: a --connect-to through an HTTP proxy is a CONNECT tunnel to the rule's target). `parity.test` does
    /// not resolve and tinyproxy's filter refuses it, so a row passes only if the rule is applied as curl does.
    /// Then the proxy's answers to CONNECT in -i, -D and -w, as curl shows them.
    func testProxyRoutingMatchesCurl() throws {
        var values = try peerValues()
        let tinyproxy = try Peers.tinyproxy().url
        values["proxy"] = tinyproxy
        values["proxyport"] = tinyproxy.split(separator: ":").last.map(String.init) ?? ""
        values["socks"] = try Peers.socks5().url
        let authProxy = try Peers.tinyproxyAuth()
        values["authproxy"] = authProxy.url
        values["authuser"] = authProxy.user
        let code = ["-w", " %{http_code}"]
        try check([
            Row(name: "--connect-to through an HTTP proxy tunnels to the rule's target",
                arguments: ["-s", "-x", "{proxy}", "--connect-to", "parity.test:80:127.0.0.1:{nginxport}"] + code + ["http://parity.test/small.txt"]),
            Row(name: "--connect-to with an empty host and port through an HTTP proxy",
                arguments: ["-s", "-x", "{proxy}", "--connect-to", "::127.0.0.1:{nginxport}"] + code + ["http://parity.test/small.txt"]),
            Row(name: "-p tunnels plain http", arguments: ["-s", "-p", "-x", "{proxy}"] + code + ["{nginx}/small.txt"]),
            Row(name: "--resolve through an HTTP proxy names the proxy",
                arguments: ["-s", "-x", "http://proxy.test:{proxyport}", "--resolve", "proxy.test:{proxyport}:127.0.0.1"] + code + ["{nginx}/small.txt"]),
            Row(name: "--resolve through a socks5 proxy resolves the origin",
                arguments: ["-s", "-x", "{socks}", "--resolve", "parity.test:{nginxport}:127.0.0.1"] + code + ["http://parity.test:{nginxport}/small.txt"]),
            Row(name: "--connect-to through a socks5 proxy", arguments: ["-s", "-x", "{socks}", "--connect-to", "parity.test:80:127.0.0.1:{nginxport}"]
                + code + ["http://parity.test/small.txt"]),
            // The proxy's answer to CONNECT comes first in -i and -D, as curl shows it.
            Row(name: "-i through a CONNECT tunnel shows the proxy's answer", arguments: ["-s", "-i", "-x", "{proxy}", "--cacert", "{ca}", "{nginxs}/small.txt"]),
            Row(name: "-i -p for plain http", arguments: ["-s", "-i", "-p", "-x", "{proxy}", "{nginx}/small.txt"]),
            Row(name: "--suppress-connect-headers", arguments: ["-s", "-i", "--suppress-connect-headers", "-x", "{proxy}", "--cacert", "{ca}", "{nginxs}/small.txt"]),
            Row(name: "-D through a tunnel", arguments: ["-s", "-D", "head.txt", "-o", "/dev/null", "-x", "{proxy}", "--cacert", "{ca}", "{nginxs}/small.txt"],
                files: ["head.txt"]),
            Row(name: "-w %{http_connect}", arguments: ["-s", "-o", "/dev/null", "-w", "%{http_connect} %{http_code}\\n", "-x", "{proxy}",
                                                      "--cacert", "{ca}", "{nginxs}/small.txt", "{nginx}/small.txt"]),
            Row(name: "-w %{http_connect} without a tunnel", arguments: ["-s", "-o", "/dev/null", "-w", "%{http_connect}", "{nginx}/small.txt"]),
            // A CONNECT the proxy refuses: -i and -D still show its answer, and the exit is 56.
            Row(name: "-i with a CONNECT refused for want of credentials", arguments: ["-s", "-i", "-x", "{authproxy}", "--cacert", "{ca}"]
                + code + ["{nginxs}/small.txt"]),
            Row(name: "-i with a CONNECT refused for a wrong password", arguments: ["-s", "-i", "-x", "{authproxy}", "-U", "{authuser}:wrong",
                                                                                   "--cacert", "{ca}", "{nginxs}/small.txt"]),
            Row(name: "-D with a refused CONNECT", arguments: ["-s", "-D", "head.txt", "-o", "/dev/null", "-x", "{authproxy}", "--cacert", "{ca}",
                                                              "{nginxs}/small.txt"], files: ["head.txt"]),
            Row(name: "-w %{http_connect} with a refused CONNECT", arguments: ["-s", "-o", "/dev/null", "-w", "%{http_connect} %{http_code}",
                                                                              "-x", "{authproxy}", "--cacert", "{ca}", "{nginxs}/small.txt"]),
        ], values: values)
    }

    /// An HTTPS proxy (stunnel before tinyproxy): `-x https://` with `--proxy-cacert`, for both schemes and with -p;
    /// `--proxy-insecure`; and without either, the proxy's certificate refused (curl's exit 60) although `--cacert`
    /// names its CA, since that option is for the origin.
    func testHTTPSProxyMatchesCurl() throws {
        var values = try peerValues()
        values["httpsproxy"] = try Peers.httpsProxy().url
        let code = ["-w", " %{http_code} %{http_connect}"]
        try check([
            Row(name: "-x https:// for http (absolute form)", arguments: ["-s", "-x", "{httpsproxy}", "--proxy-cacert", "{ca}"] + code + ["{nginx}/small.txt"]),
            Row(name: "-x https:// for https (TLS inside TLS)",
                arguments: ["-s", "-x", "{httpsproxy}", "--proxy-cacert", "{ca}", "--cacert", "{ca}"] + code + ["{nginxs}/small.txt"]),
            Row(name: "-x https:// -p for http", arguments: ["-s", "-p", "-x", "{httpsproxy}", "--proxy-cacert", "{ca}"] + code + ["{nginx}/small.txt"]),
            Row(name: "-i through an HTTPS proxy's tunnel",
                arguments: ["-s", "-i", "-x", "{httpsproxy}", "--proxy-cacert", "{ca}", "--cacert", "{ca}", "{nginxs}/small.txt"]),
            Row(name: "--proxy-insecure", arguments: ["-s", "-x", "{httpsproxy}", "--proxy-insecure", "--cacert", "{ca}"] + code + ["{nginxs}/small.txt"]),
            Row(name: "the proxy's certificate is not checked against --cacert",
                arguments: ["-s", "-x", "{httpsproxy}", "--cacert", "{ca}"] + code + ["{nginxs}/small.txt"], stderrPresence: true),
        ], values: values)
    }

    /// The proxy's TLS options apply to an HTTPS proxy from the environment as to one given with -x (curl's rule), and
    /// --proxy-cert answers a proxy that asks for a client certificate. The environment's proxies never carry
    /// loopback URLs (the library's rule, docs/proxies.md), so the URL names a host that --connect-to sends to nginx:
    /// through an HTTP proxy that is a CONNECT to the rule's target, for both tools; -k is for the origin, whose
    /// certificate does not name that host, and the proxy's is still checked.
    func testHTTPSProxyTLSOptionsMatchCurl() throws {
        var values = try peerValues()
        values["httpsproxy"] = try Peers.httpsProxy().url
        let certificateProxy = try Peers.httpsProxyRequiringClientCertificate()
        values["certproxy"] = certificateProxy.proxy.url
        values["proxycert"] = certificateProxy.certificate
        values["proxykey"] = certificateProxy.key
        values["origin"] = "https://origin.example:\(try Peers.nginx().httpsPort)"
        values["to"] = "origin.example:\(try Peers.nginx().httpsPort):127.0.0.1:\(try Peers.nginx().httpsPort)"
        let code = ["-w", " %{http_code} %{http_connect}"]
        let origin = ["-k", "--connect-to", "{to}"] + code + ["{origin}/small.txt"]
        try check([
            Row(name: "https_proxy with --proxy-cacert", arguments: ["-s", "--proxy-cacert", "{ca}"] + origin,
                environment: ["https_proxy": "{httpsproxy}"]),
            Row(name: "https_proxy without --proxy-cacert: the proxy's certificate is unknown", arguments: ["-s"] + origin,
                stderrPresence: true, environment: ["https_proxy": "{httpsproxy}"]),
            Row(name: "https_proxy with --proxy-insecure", arguments: ["-s", "--proxy-insecure"] + origin,
                environment: ["https_proxy": "{httpsproxy}"]),
            Row(name: "-x to a proxy that asks for a client certificate, with --proxy-cert and --proxy-key",
                arguments: ["-s", "-x", "{certproxy}", "--proxy-cacert", "{ca}", "--proxy-cert", "{proxycert}",
                            "--proxy-key", "{proxykey}", "--cacert", "{ca}"] + code + ["{nginxs}/small.txt"]),
            Row(name: "https_proxy that asks for a client certificate, with --proxy-cert (key in another file)",
                arguments: ["-s", "--proxy-cacert", "{ca}", "--proxy-cert", "{proxycert}", "--proxy-key", "{proxykey}"] + origin,
                environment: ["https_proxy": "{certproxy}"]),
        ], values: values)
    }

    /// -r (ranges from nginx, and the Range field httpbin echoes), --output-dir and --max-filesize, as curl.
    func testRangesOutputDirAndMaxFilesizeMatchCurl() throws {
        let agent = ["-A", "parity/1"]
        let codes = ["-o", "/dev/null", "-w", "%{http_code} %{size_download}"]
        try check([
            Row(name: "-r 0-9", arguments: ["-s", "-r", "0-9", "{nginx}/small.txt"]),
            Row(name: "-i -r 1000-", arguments: ["-s", "-i", "-r", "1000-", "{nginx}/small.txt"]),
            Row(name: "-r -24 (the last bytes)", arguments: ["-s", "--range", "-24", "{nginx}/small.txt"]),
            Row(name: "-r 5 (a dash appended)", arguments: ["-s", "-r", "5", "{nginx}/small.txt"]),
            Row(name: "-r with two ranges (multipart/byteranges)", arguments: ["-s", "-r", "0-0,-1"] + codes + ["{nginx}/small.txt"]),
            Row(name: "-r past the end (416)", arguments: ["-s", "-r", "5000-"] + codes + ["{nginx}/small.txt"]),
            Row(name: "-r sends Range: bytes=", arguments: agent + ["-s", "-r", "0-9", "{httpbin}/headers"]),
            Row(name: "-r with a -d body sends a Content-Range instead", arguments: agent + ["-s", "-r", "0-9", "-d", "x=1", "{httpbin}/anything"]),
            // The multipart boundary (and so the length) is each tool's own.
            Row(name: "-r with -F sends neither", arguments: agent + ["-s", "-r", "0-9", "-F", "x=1", "{httpbin}/anything"],
                normalise: {
                    $0.replacingOccurrences(of: #"boundary=[^"]*"#, with: "boundary=B", options: .regularExpression)
                        .replacingOccurrences(of: #""Content-Length": "[0-9]+""#, with: #""Content-Length": "N""#, options: .regularExpression)
                }),
            Row(name: "-H Range wins over -r", arguments: agent + ["-s", "-r", "0-9", "-H", "Range: bytes=2-3", "{httpbin}/headers"]),
            Row(name: "--output-dir with -o and --create-dirs", arguments: ["-s", "--create-dirs", "--output-dir", "out/sub", "-o", "a.txt",
                                                                            "{nginx}/small.txt"], files: ["out/sub/a.txt"]),
            Row(name: "--output-dir with -O", arguments: ["-s", "--create-dirs", "--output-dir", "dl", "-O", "{nginx}/small.txt"],
                files: ["dl/small.txt"]),
            Row(name: "--output-dir that does not exist", arguments: ["-s", "--output-dir", "missing", "-o", "a.txt", "{nginx}/small.txt"],
                files: ["missing/a.txt"]),
            Row(name: "--max-filesize below the Content-Length", arguments: ["-s", "--max-filesize", "1000", "{nginx}/small.txt"]),
            Row(name: "--max-filesize with -o leaves no file", arguments: ["-s", "--max-filesize", "1000", "-o", "f.txt", "{nginx}/small.txt"],
                files: ["f.txt"]),
            Row(name: "--max-filesize 1K is exactly enough", arguments: ["-s", "--max-filesize", "1K"] + codes + ["{nginx}/small.txt"]),
        ], values: try peerValues())
    }

    /// --post301, --post302 and --post303 under -L against httpbin's /redirect-to (which answers any method), then
    /// /anything, which shows the method and body that arrived: each keeps a POST only on its own code.
    func testPostRedirectFlagsMatchCurl() throws {
        let agent = ["-A", "parity/1", "-s", "-L", "-d", "x=1"]
        func hop(_ code: Int) -> String { "{httpbin}/redirect-to?url=/anything&status_code=\(code)" }
        try check([
            Row(name: "a POST on 301 becomes a GET", arguments: agent + [hop(301)]),
            Row(name: "--post301 keeps it on 301", arguments: agent + ["--post301", hop(301)]),
            Row(name: "--post301 does not keep it on 302", arguments: agent + ["--post301", hop(302)]),
            Row(name: "--post302 keeps it on 302", arguments: agent + ["--post302", hop(302)]),
            Row(name: "--post303 keeps it on 303", arguments: agent + ["--post303", hop(303)]),
            Row(name: "a POST on 303 becomes a GET", arguments: agent + ["--post301", "--post302", hop(303)]),
            Row(name: "--post303 with -F", arguments: ["-A", "parity/1", "-s", "-L", "-F", "x=1", "--post303", "-o", "/dev/null", "-w",
                                                      "%{http_code} %{method}", hop(303)]),
        ], values: try peerValues())
    }

    /// --location-trusted: a redirect from httpbin at 127.0.0.1 to httpbin at localhost (another origin) keeps -u's
    /// credentials, and -H Authorization, only with it; -L alone drops them (401), as curl.
    func testLocationTrustedMatchesCurl() throws {
        let hop = "{httpbin}/redirect-to?url=http://localhost:{port}/basic-auth/ann/pw"
        let basic = "Authorization: Basic " + Data("ann:pw".utf8).base64EncodedString()
        try check([
            Row(name: "-L drops -u on another host", arguments: ["-s", "-L", "-u", "ann:pw", "-w", " %{http_code}", hop]),
            Row(name: "--location-trusted keeps -u", arguments: ["-s", "--location-trusted", "-u", "ann:pw", "-w", " %{http_code}", hop]),
            Row(name: "-L drops -H Authorization", arguments: ["-s", "-L", "-H", basic, "-w", " %{http_code}", hop]),
            Row(name: "--location-trusted keeps -H Authorization", arguments: ["-s", "--location-trusted", "-H", basic, "-w", " %{http_code}", hop]),
        ], values: try peerValues())
    }

    /// --capath: nginx's certificate in a directory under its hashed name (`openssl rehash`) is trusted; without
    /// the name, or without --capath, it is not (exit 60), as curl.
    func testCAPathMatchesCurl() throws {
        var values = try peerValues()
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-capath-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        for name in ["hashed", "plain"] {
            try FileManager.default.createDirectory(atPath: base + "/" + name, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: values["ca"]!, toPath: base + "/\(name)/nginx.pem")
        }
        let rehash = try TestTLS.run("openssl", ["rehash", base + "/hashed"])
        XCTAssertEqual(rehash.status, 0, rehash.output)
        values["hashed"] = base + "/hashed"
        values["plain"] = base + "/plain"
        let code = ["-w", " %{http_code}"]
        try check([
            Row(name: "--capath with the hashed certificate", arguments: ["-s", "--capath", "{hashed}"] + code + ["{nginxs}/small.txt"]),
            Row(name: "--capath without hashed names", arguments: ["-s", "--capath", "{plain}"] + code + ["{nginxs}/small.txt"]),
            Row(name: "--capath with --cacert", arguments: ["-s", "--capath", "{plain}", "--cacert", "{ca}"] + code + ["{nginxs}/small.txt"]),
        ], values: values)
    }

    /// -e ';auto': under -L each hop's Referer is the URL that redirected to it, after an initial one if given;
    /// httpbin's /headers shows what arrived.
    func testAutoRefererMatchesCurl() throws {
        let agent = ["-A", "parity/1", "-s", "-L"]
        let twice = "{httpbin}/redirect-to?url=/redirect-to%3Furl%3D/headers"
        try check([
            Row(name: "-e ';auto' on one hop", arguments: agent + ["-e", ";auto", "{httpbin}/redirect-to?url=/headers#frag"]),
            Row(name: "-e ';auto' on two hops", arguments: agent + ["-e", ";auto", twice]),
            Row(name: "-e URL;auto", arguments: agent + ["-e", "http://first.example/;auto", twice]),
            Row(name: "-e URL without ;auto stays on every hop", arguments: agent + ["-e", "http://first.example/", twice]),
            Row(name: "-e ';auto' without a redirect", arguments: agent + ["-e", ";auto", "{httpbin}/headers"]),
        ], values: try peerValues())
    }

    /// -J with -O against httpbin's /response-headers, which answers with the Content-Disposition its query names
    /// (and a JSON body listing it): the file each tool writes, its exit code, and the pairs curl refuses.
    /// Names with a leading dot are left out: ahttp strips it (docs/cli.md), curl keeps it.
    func testRemoteHeaderNameMatchesCurl() throws {
        func named(_ disposition: String) -> String {
            "{httpbin}/response-headers?Content-Disposition=" + disposition.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        }
        let report = named(#"attachment; filename="report.txt""#)
        try check([
            Row(name: "-O -J, a quoted name", arguments: ["-s", "-O", "-J", report], files: ["report.txt"]),
            Row(name: "-O -J, unquoted with a parameter after", arguments: ["-s", "-O", "-J", named("attachment; filename=report2.txt; size=3")],
                files: ["report2.txt"]),
            Row(name: "-J keeps the last path component", arguments: ["-s", "-OJ", named(#"attachment; filename="../../evil.txt""#)],
                files: ["evil.txt"]),
            Row(name: "-J with a backslash path", arguments: ["-s", "-O", "-J", named(#"attachment; filename="C:\dir\win.txt""#)],
                files: ["win.txt"]),
            Row(name: "-J takes an inline name too", arguments: ["-s", "-O", "-J", named(#"inline; filename="in.txt""#)], files: ["in.txt"]),
            Row(name: "-J with a ';' inside the quotes", arguments: ["-s", "-O", "-J", named(#"attachment; filename="a;b.txt""#)],
                files: ["a;b.txt"]),
            Row(name: "-J without a filename keeps -O's name", arguments: ["-s", "-O", "-J", named("attachment")],
                files: ["response-headers"]),
            Row(name: "-J without Content-Disposition keeps -O's name", arguments: ["-s", "-O", "-J", "{nginx}/small.txt"],
                files: ["small.txt"]),
            Row(name: "-J never replaces a file", arguments: ["-sS", "-O", "-J", report], files: ["report.txt"], stderrPresence: true,
                inputs: ["report.txt": "old"]),
            Row(name: "-J with --output-dir and --create-dirs", arguments: ["-s", "--create-dirs", "--output-dir", "dl", "-O", "-J", report],
                files: ["dl/report.txt"]),
            Row(name: "-J with --remote-name-all", arguments: ["-s", "--remote-name-all", "-J", report, "{nginx}/small.txt"],
                files: ["report.txt", "small.txt"]),
            Row(name: "-J and %{filename_effective}", arguments: ["-s", "-O", "-J", "-w", "%{filename_effective} %{http_code}", report]),
            Row(name: "-J without -O is ignored", arguments: ["-s", "-J", report]),
            Row(name: "-J with -o is ignored", arguments: ["-s", "-J", "-o", "out.txt", report], files: ["out.txt", "report.txt"]),
            Row(name: "-J with -D", arguments: ["-s", "-O", "-J", "-D", "head.txt", report], files: ["report.txt", "head.txt"]),
            Row(name: "-J with -i is refused", arguments: ["-sS", "-i", "-O", "-J", report], files: ["report.txt"], stderrPresence: true),
            Row(name: "-i after -J is refused", arguments: ["-sS", "-O", "-J", "-i", report], stderrPresence: true),
            Row(name: "-J with -I is refused", arguments: ["-sS", "-I", "-O", "-J", report], stderrPresence: true),
            Row(name: "-J with -C - is refused", arguments: ["-sS", "-C", "-", "-O", "-J", report], files: ["report.txt"],
                stderrPresence: true),
        ], values: try peerValues())
    }

    /// -4 and -6 (the last one wins) against nginx, which listens on 127.0.0.1 only, by address and by name
    /// (`localhost` resolves to 127.0.0.1 here): a family with no address is exit 7, as curl.
    func testIPFamilyMatchesCurl() throws {
        let codes = ["-o", "/dev/null", "-w", "%{http_code}"]
        try check([
            Row(name: "-4 to 127.0.0.1", arguments: ["-s", "-4"] + codes + ["{nginx}/small.txt"]),
            Row(name: "-6 to 127.0.0.1", arguments: ["-s", "--ipv6"] + codes + ["{nginx}/small.txt"]),
            Row(name: "-4 to [::1]", arguments: ["-s", "--ipv4"] + codes + ["http://[::1]:{nginxport}/small.txt"]),
            Row(name: "-4 to localhost", arguments: ["-s", "-4"] + codes + ["http://localhost:{nginxport}/small.txt"]),
            Row(name: "-4 then -6: the last wins", arguments: ["-s", "-4", "-6"] + codes + ["{nginx}/small.txt"]),
            Row(name: "-6 then -4: the last wins", arguments: ["-s", "-6", "-4"] + codes + ["{nginx}/small.txt"]),
            Row(name: "-6 with --resolve to an IPv4 address", arguments: ["-s", "-6", "--resolve", "parity.test:{nginxport}:127.0.0.1"] + codes
                + ["http://parity.test:{nginxport}/small.txt"]),
        ], values: try peerValues())
    }

    /// -p, -U and the --proxy-… schemes apply to a proxy from the environment as to one given with -x (curl's
    /// rule). Environment proxies bypass loopback (ahttp), so the origin is named otherwise: `parity.test`, which
    /// tinyproxy's filter refuses (403) when asked to forward or to tunnel to it, or `origin.example` moved to nginx
    /// by --connect-to (a tunnel to nginx).
    func testEnvironmentProxyOptionsMatchCurl() throws {
        var values = try peerValues()
        values["proxy"] = try Peers.tinyproxy().url
        let basic = try Peers.tinyproxyAuth()
        values["basicproxy"] = basic.url
        values["basicuser"] = "\(basic.user):\(basic.password)"
        let codes = ["-o", "/dev/null", "-w", "%{http_code} %{http_connect}"]
        let moved = ["--connect-to", "origin.example:80:127.0.0.1:{nginxport}", "http://origin.example/small.txt"]
        try check([
            Row(name: "http_proxy forwards in absolute form", arguments: ["-s"] + codes + ["http://parity.test/small.txt"],
                environment: ["http_proxy": "{proxy}"]),
            Row(name: "-p tunnels through http_proxy", arguments: ["-s", "-p"] + codes + ["http://parity.test/small.txt"],
                environment: ["http_proxy": "{proxy}"]),
            Row(name: "-i -p through http_proxy", arguments: ["-s", "-i", "-p", "http://parity.test/small.txt"],
                environment: ["http_proxy": "{proxy}"]),
            Row(name: "-U to http_proxy sends Basic at once", arguments: ["-s", "-i", "-U", "{basicuser}"] + moved,
                environment: ["http_proxy": "{basicproxy}"]),
            Row(name: "credentials in http_proxy are sent at once too", arguments: ["-s", "-i"] + moved,
                environment: ["http_proxy": "http://{basicuser}@" + basic.url.replacingOccurrences(of: "http://", with: "")]),
            Row(name: "--proxy-anyauth with http_proxy waits for the challenge", arguments: ["-s", "-i", "--proxy-anyauth", "-U", "{basicuser}"]
                + moved, environment: ["http_proxy": "{basicproxy}"]),
        ], values: values)
    }

    /// -U and its schemes against tinyproxy (Basic) and squid (Digest): curl sends Basic to the proxy at once
    /// (`--proxy-basic`, the default), so -i shows no 407; `--proxy-anyauth` waits for the challenge.
    func testProxyCredentialsMatchCurl() throws {
        var values = try peerValues()
        let basic = try Peers.tinyproxyAuth()
        let digest = try Peers.squidDigest()
        values["basicproxy"] = basic.url
        values["basicuser"] = "\(basic.user):\(basic.password)"
        values["digestproxy"] = digest.url
        values["digestuser"] = "\(digest.user):\(digest.password)"
        let https = ["--cacert", "{ca}", "{nginxs}/small.txt"]
        try check([
            Row(name: "-U sends Basic at once through a tunnel", arguments: ["-s", "-i", "-x", "{basicproxy}", "-U", "{basicuser}"] + https),
            Row(name: "-U sends Basic at once in absolute form", arguments: ["-s", "-i", "-x", "{basicproxy}", "-U", "{basicuser}", "{nginx}/small.txt"]),
            Row(name: "--proxy-anyauth waits for the 407", arguments: ["-s", "-i", "--proxy-anyauth", "-x", "{basicproxy}", "-U", "{basicuser}"] + https),
            Row(name: "--proxy-digest", arguments: ["-s", "-o", "/dev/null", "-w", "%{http_connect} %{http_code}", "--proxy-digest",
                                                    "-x", "{digestproxy}", "-U", "{digestuser}"] + https),
            Row(name: "a CONNECT refused with 407: exit 56 and -w %{http_connect}",
                arguments: ["-s", "-o", "/dev/null", "-w", "%{http_connect} %{http_code}", "-x", "{basicproxy}"] + https, stderrPresence: true),
            Row(name: "-U as Basic to a Digest proxy gets its 407", arguments: ["-s", "-o", "/dev/null", "-w", "%{http_code}",
                                                                            "-x", "{digestproxy}", "-U", "{digestuser}", "{nginx}/small.txt"]),
        ], values: values)
    }

    /// Several URLs, -o paired with them in order, -O, --create-dirs, -D, -K.
    func testOutputsAndConfigFilesMatchCurl() throws {
        try check([
            Row(name: "two URLs, two -o, paired in order", arguments: ["-s", "-o", "a.txt", "{nginx}/small.txt", "-o", "b.txt", "{httpbin}/base64/aGVsbG8="],
                files: ["a.txt", "b.txt"]),
            Row(name: "three URLs, one -o: the others go to stdout", arguments: ["-s", "-o", "a.txt", "{httpbin}/base64/b25l", "{httpbin}/base64/dHdv", "{httpbin}/base64/dGhyZWU="],
                files: ["a.txt"]),
            Row(name: "-i with -o puts the head in the file", arguments: ["-s", "-i", "-o", "with-head.txt", "{httpbin}/base64/Ym9keQ=="],
                files: ["with-head.txt"]),
            Row(name: "-O names the file from the URL", arguments: ["-s", "-O", "{nginx}/small.txt"], files: ["small.txt"]),
            Row(name: "--create-dirs", arguments: ["-s", "--create-dirs", "-o", "deep/er/out.txt", "{nginx}/small.txt"], files: ["deep/er/out.txt"]),
            Row(name: "-o into a missing directory: exit 23", arguments: ["-s", "-o", "missing/out.txt", "{nginx}/small.txt"],
                files: ["missing/out.txt"], stderrPresence: true),
            Row(name: "-D FILE", arguments: ["-s", "-D", "head.txt", "-o", "/dev/null", "{httpbin}/response-headers?X-Dumped=yes"], files: ["head.txt"]),
            Row(name: "-D - writes the head to stdout", arguments: ["-s", "-D", "-", "{httpbin}/base64/Ym9keQ=="]),
            Row(name: "-D with -L dumps every hop", arguments: ["-s", "-A", "parity/1", "-L", "-D", "head.txt", "-o", "/dev/null", "{httpbin}/redirect/2"], files: ["head.txt"]),
            Row(name: "-K config file: bare names, quotes, '=' and ':'", arguments: ["-K", "cfg"],
                files: ["from-config.txt"],
                inputs: ["cfg": """
                    # a comment, then options in each of curl's spellings
                    silent
                    --show-error
                    url = "{httpbin}/base64/Y29uZmln"
                    -o from-config.txt
                    user-agent: "quoted \\"agent\\""
                    url {httpbin}/headers

                    """]),
            Row(name: "-K: a comment after an option without a value, an unknown option",
                arguments: ["-K", "cfg"], stderrPresence: true,
                inputs: ["cfg": "silent # be quiet\nbogus-option\nurl = \"{httpbin}/base64/Y29uZmln\"\n"]),
            Row(name: "-K: an option without its value, a value after a flag, muted by -s",
                arguments: ["-s", "-K", "cfg", "{httpbin}/base64/dHdv"], stderrPresence: true,
                inputs: ["cfg": "output\ninclude yes\nbogus-option value\n"]),
            Row(name: "-K with command-line options around it", arguments: ["-s", "-K", "cfg", "-A", "after/1", "{httpbin}/user-agent"],
                inputs: ["cfg": "header = \"X-From-Config: 1\"\n"]),
            Row(name: "-w @file", arguments: ["-s", "-o", "/dev/null", "-w", "@format.txt", "{httpbin}/status/202"],
                inputs: ["format.txt": "code=%{http_code}\\n"]),
        ], values: try peerValues())
    }

    /// -w variables: the ones with stable values compared exactly, timings and speeds by shape.
    func testWriteOutVariablesMatchCurl() throws {
        try check([
            Row(name: "-w %{http_code}", arguments: ["-s", "-o", "/dev/null", "-w", "%{http_code}", "{httpbin}/status/201"]),
            Row(name: "-w for several URLs: connections reused",
                arguments: ["-s", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} %{num_connects} %{size_download}\\n", "{nginx}/small.txt", "{nginx}/small.txt"]),
            Row(name: "-w response facts",
                arguments: ["-s", "-o", "/dev/null", "-w", "%{response_code}|%{content_type}|%{method}|%{scheme}|%{num_headers}|%{http_version}|%{exitcode}|%%|%{ssl_verify_result}", "{nginx}/small.txt"]),
            Row(name: "-w redirects", arguments: ["-s", "-L", "-o", "/dev/null", "-w", "%{num_redirects} %{url_effective}", "{httpbin}/redirect/2"]),
            Row(name: "-w redirect_url without -L", arguments: ["-s", "-o", "/dev/null", "-w", "%{redirect_url}", "{httpbin}/redirect-to?url=/get"]),
            Row(name: "-w timings by shape",
                arguments: ["-s", "-o", "/dev/null", "-w", "%{time_connect} %{time_appconnect} %{time_pretransfer} %{time_starttransfer} %{time_total}", "{nginx}/small.txt"],
                normalise: Self.seconds),
            Row(name: "-w https timings by shape",
                arguments: ["-s", "--cacert", "{ca}", "-o", "/dev/null", "-w", "%{time_connect} %{time_appconnect} %{ssl_verify_result}", "{nginxs}/small.txt"],
                normalise: Self.seconds),
            Row(name: "-w speed by shape", arguments: ["-s", "-o", "/dev/null", "-w", "%{speed_download} %{size_download}", "{nginx}/small.txt"],
                normalise: { $0.replacingOccurrences(of: #"^[0-9]+ "#, with: "<number> ", options: .regularExpression) }),
            Row(name: "-w %{header_json}", arguments: ["-s", "-o", "/dev/null", "-w", "%{header_json}", "{httpbin}/response-headers?X-A=1&X-A=2"]),
            Row(name: "-w %header{name}", arguments: ["-s", "-o", "/dev/null", "-w", "%header{content-type}", "{nginx}/small.txt"]),
            Row(name: "-w %{url_effective} never shows the password (curl's is normalised)",
                arguments: ["-s", "-o", "/dev/null", "-w", "%{url_effective} %{http_code}", "http://ann:pw@127.0.0.1:{port}/basic-auth/ann/pw"],
                curlOnly: { $0.replacingOccurrences(of: "ann:pw@", with: "ann@") }),
            Row(name: "-w on a failed transfer", arguments: ["-s", "-w", "%{http_code} %{exitcode}", "{dead}"]),
        ], values: try peerValues())
    }

    func testWriteOutJSONHasCurlsKeysAndValues() throws {
        let values = try peerValues()
        let row = Row(name: "%{json}", arguments: ["-s", "-o", "/dev/null", "-w", "%{json}", "{nginx}/small.txt"])
        let (curl, ahttp) = try runBoth(row, values: values)
        let curlJSON = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(curl.stdout.utf8)) as? [String: Any], curl.stdout)
        let ahttpJSON = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(ahttp.stdout.utf8)) as? [String: Any], ahttp.stdout)
        // Typed: a number, a string and null are told apart (the values once matched as text while ahttp wrote
        // "200" where curl writes 200, and "" where curl writes null).
        func typed(_ value: Any?) -> String {
            switch value {
            case nil: "<none>"
            case is NSNull: "null"
            case let text as String: "string \(text)"
            case let number as NSNumber: "number \(number)"
            case let other?: "other \(other)"
            }
        }
        for key in ["http_code", "response_code", "num_connects", "size_download", "exitcode", "method", "url_effective",
                    "num_redirects", "content_type", "scheme", "http_version", "ssl_verify_result", "num_headers", "errormsg",
                    "filename_effective", "redirect_url", "urlnum", "remote_port", "http_connect"] {
            XCTAssertEqual(typed(ahttpJSON[key]), typed(curlJSON[key]), key)
        }
        for key in ["time_connect", "time_appconnect", "time_starttransfer", "time_total", "speed_download"] {
            XCTAssertNotNil(ahttpJSON[key] as? NSNumber, "\(key) is a number: \(ahttp.stdout)")
            XCTAssertNotNil(curlJSON[key] as? NSNumber, key)
        }
    }

    /// curl's exit status for each failure, the same from both tools.
    func testFailuresExitWithCurlsCodes() throws {
        let values = try peerValues()
        try check([
            Row(name: "-f on 404: exit 22, no body", arguments: ["-s", "-f", "{nginx}/missing"], stderrPresence: true),
            Row(name: "-sSf on 404 shows the error", arguments: ["-sSf", "{nginx}/missing"], stderrPresence: true),
            Row(name: "-f -i on 404: the head, exit 22", arguments: ["-s", "-f", "-i", "{httpbin}/status/404"]),
            Row(name: "--fail-with-body on 404: body and exit 22", arguments: ["-s", "--fail-with-body", "{nginx}/missing"]),
            Row(name: "without -f a 404 is exit 0", arguments: ["-s", "{nginx}/missing"]),
            Row(name: "the last URL's result is the exit status", arguments: ["-s", "{dead}", "{nginx}/small.txt"]),
            Row(name: "…and a failing last URL sets it", arguments: ["-s", "{nginx}/small.txt", "{dead}"]),
            Row(name: "connection refused: 7", arguments: ["-s", "{dead}"], stderrPresence: true),
            Row(name: "-sS shows the connect error", arguments: ["-sS", "{dead}"], stderrPresence: true),
            Row(name: "name not found: 6", arguments: ["-s", "http://no-such-host.invalid/"]),
            Row(name: "malformed URL: 3", arguments: ["-s", "http://exa mple.com/"]),
            Row(name: "unsupported scheme: 1", arguments: ["-s", "htp://example.com/"]),
            Row(name: "timeout: 28", arguments: ["-s", "-m", "1", "{httpbin}/delay/3"]),
            Row(name: "too many redirects: 47", arguments: ["-s", "-L", "--max-redirs", "1", "{httpbin}/redirect/3"]),
            Row(name: "unknown option: 2", arguments: ["--no-such-option", "{httpbin}/get"]),
            Row(name: "no URL: 2", arguments: ["-s"]),
            Row(name: "an option without its value: 2", arguments: ["{httpbin}/get", "-o"]),
            Row(name: "TLS to a plain-http port: 35", arguments: ["-s", "https://127.0.0.1:{nginxport}/"]),
            Row(name: "untrusted certificate: 60", arguments: ["-s", "{nginxs}/small.txt"]),
            Row(name: "-d @missing warns and posts nothing", arguments: ["-s", "-A", "p/1", "-d", "@nope.txt", "{httpbin}/post"]),
            Row(name: "--data-urlencode name@missing warns and posts nothing", arguments: ["-A", "p/1", "--data-urlencode", "a@nope.txt",
                                                                                        "-o", "out.json", "{httpbin}/post"],
                files: ["out.json"], stderrPresence: true),
            Row(name: "…between other data", arguments: ["-s", "-A", "p/1", "-d", "x=1", "--data-urlencode", "@nope.txt", "-d", "y=2", "{httpbin}/post"]),
            Row(name: "-T missing file: 26", arguments: ["-s", "-T", "nope.txt", "{httpbin}/put"]),
        ], values: values)
    }

    /// Failures only a misbehaving server produces: the fault server answers curl and ahttp the same way.
    func testServerFaultsExitWithCurlsCodes() throws {
        let empty = try FaultServer(script: FaultScript([[.close]]))
        defer { empty.stop() }
        let partial = try FaultServer(script: FaultScript([[.send("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"), .close]]))
        defer { partial.stop() }
        let values = ["empty": "http://127.0.0.1:\(empty.port)/", "partial": "http://127.0.0.1:\(partial.port)/"]
        try check([
            Row(name: "empty reply: 52", arguments: ["-s", "{empty}"]),
            Row(name: "a body cut short: 18", arguments: ["-s", "{partial}"]),
        ], values: values)
    }
}

/// What ahttp does where curl is not the reference: its own checks.
final class CommandLineCurlSurfaceTests: XCTestCase {
    /// A header file with CRLF line ends used to be refused (exit 43, "contains a carriage return"): each line is
    /// a header now, so the run gets as far as the refused connection (7). `-sK FILE` used to skip the file without
    /// a word; it is a usage error that says how to write it.
    func testAHeaderFileWithCRLFLineEndsAndAKInsideAGroupOfShortOptions() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crlf-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        let headers = directory + "/headers.txt", config = directory + "/c.cfg"
        try Data("X-A: 1\r\nX-B: 2\r\n".utf8).write(to: URL(fileURLWithPath: headers))
        try Data("url = \"http://127.0.0.1:1/\"\r\n".utf8).write(to: URL(fileURLWithPath: config))
        let withHeaders = try runAhttp(["-s", "-H", "@" + headers, "http://127.0.0.1:1/"])
        XCTAssertEqual(withHeaders.status, 7, withHeaders.stderr)
        let grouped = try runAhttp(["-sK", config])
        XCTAssertEqual(grouped.status, 2)
        XCTAssertTrue(grouped.stderr.contains("-s -K FILE"), grouped.stderr)
        let apart = try runAhttp(["-s", "-K", config])
        XCTAssertEqual(apart.status, 7, "the config file's URL was read: \(apart.stderr)")
    }

    func testTraceASCIIWritesCurlsLayoutWithoutSecrets() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("trace-\(UUID().uuidString).txt").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: file) }
        let result = try runAhttp(["-s", "--trace-ascii", file, "-u", "vic:hunter2", "-H", "X-Amz-Security-Token: sts-session-7f3a",
                                   "-o", "/dev/null", try Peers.httpbin() + "/basic-auth/vic/hunter2"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let trace = try String(contentsOfFile: file, encoding: .utf8)
        XCTAssertTrue(trace.contains("=> Send header, "), trace)
        XCTAssertTrue(trace.contains("0000: GET /basic-auth/vic/hunter2 HTTP/1.1"), trace)
        XCTAssertTrue(trace.contains("<= Recv header, "), trace)
        XCTAssertTrue(trace.contains("0000: HTTP/1.1 200 OK"), trace)
        XCTAssertTrue(trace.contains("Authorization: Basic <redacted>"), trace)
        // The password is in httpbin's path by design; anywhere else it would be a leak.
        let outsidePath = trace.replacingOccurrences(of: "/basic-auth/vic/hunter2", with: "/basic-auth/vic/<path>")
        XCTAssertFalse(outsidePath.contains("hunter2") || trace.contains("dmljOmh1bnRlcjI="), trace)
        // An AWS session token is a secret too (it used to be traced in clear).
        XCTAssertFalse(trace.contains("sts-session-7f3a"), trace)
        XCTAssertTrue(trace.contains("X-Amz-Security-Token: <redacted>") || trace.contains("x-amz-security-token: <redacted>"), trace)
    }

    func testAReaderThatGoesAwayIsAWriteErrorAsInCurl() throws {
        let url = "http://127.0.0.1:\(try Peers.nginx().httpPort)/big.bin"
        var statuses: [String: Int32] = [:]
        for (tool, path) in [("curl", "/usr/bin/curl"), ("ahttp", ahttpExecutable().path)] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-c", "\"$0\" -s \"$1\" | head -c 1 > /dev/null; exit ${PIPESTATUS[0]}", path, url]
            process.standardInput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            statuses[tool] = process.terminationStatus
        }
        XCTAssertEqual(statuses["curl"], 23)
        XCTAssertEqual(statuses["ahttp"], 23, "CURLE_WRITE_ERROR, not 141 (killed by SIGPIPE)")
    }

    func testURLPasswordIsNeverEchoed() throws {
        let base = try Peers.httpbin()
        let port = base.split(separator: ":").last.map(String.init) ?? ""
        let url = "http://vic:s3cret-pw@127.0.0.1:\(port)/basic-auth/vic/s3cret-pw"
        let verbose = try runAhttp(["-v", "-o", "/dev/null", "-w", "%{url_effective} %{json}", url])
        XCTAssertEqual(verbose.status, 0, verbose.stderr)
        XCTAssertTrue(verbose.stdout.hasPrefix("http://vic@127.0.0.1:\(port)/basic-auth/vic/s3cret-pw "), verbose.stdout)
        let failed = try runAhttp(["-v", "-w", "%{url_effective}", "http://vic:s3cret-pw@127.0.0.1:\(try unusedPort())/x"])
        XCTAssertEqual(failed.status, 7)
        for output in [verbose.stdout, verbose.stderr, failed.stdout, failed.stderr] {
            XCTAssertFalse(output.contains("s3cret-pw@") || output.contains(":s3cret-pw"), output)
        }
    }

    func testHelpIsGroupedAndCompletionScriptsAreGenerated() throws {
        let help = try runAhttp(["--help"])
        XCTAssertEqual(help.status, 0)
        for title in ["HTTP:", "POST:", "OUTPUT:", "CONNECTION:", "AUTH:", "TLS:", "PROXY:", "VERBOSE:"] {
            XCTAssertTrue(help.stdout.uppercased().contains("\n" + title), "\(title) in \(help.stdout)")
        }
        let output = try runAhttp(["--help", "output"])
        XCTAssertEqual(output.status, 0)
        XCTAssertTrue(output.stdout.contains("--dump-header"), output.stdout)
        XCTAssertFalse(output.stdout.contains("--proxy"), "one category only: \(output.stdout)")
        for shell in ["bash", "zsh", "fish"] {
            let script = try runAhttp(["--generate-completion-script", shell])
            XCTAssertEqual(script.status, 0, script.stderr)
            XCTAssertTrue(script.stdout.contains("write-out"), "\(shell): \(script.stdout.prefix(300))")
        }
    }

    func testConfigFilesNestAndStopAtTenLevels() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cfg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let loop = directory.appendingPathComponent("loop.cfg").path
        try "config = \"\(loop)\"\n".write(toFile: loop, atomically: true, encoding: .utf8)
        let result = try runAhttp(["-K", loop])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("nested more than 10 deep"), result.stderr)
        let missing = try runAhttp(["-K", directory.appendingPathComponent("none.cfg").path])
        XCTAssertEqual(missing.status, 26, missing.stderr)
    }
}
