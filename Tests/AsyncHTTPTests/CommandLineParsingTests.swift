import AsyncHTTP
import HTTPTypes
import XCTest

@testable import ahttp

/// ahttp's pure parts, without a process or a peer: curl's config-file grammar, the -w formatter, -H, --url-query,
/// the URL's credentials and query, and the order of values across options.
final class CommandLineParsingTests: XCTestCase {
    func testConfigFileGrammarAsCurlDocumentsIt() throws {
        let text = """
            # comment
              silent
            --show-error
            url = "http://example.com/a b"
            output: "out \\"1\\".txt"
            -H "X-Tab: a\\tb"
            user-agent agent/1 trailing-ignored
            header="X-Eq: 1"

            location\r
            """
        XCTAssertEqual(try parseConfigFile(text, name: "t"), [
            "--silent", "--show-error", "--url", "http://example.com/a b", "--output", "out \"1\".txt",
            "-H", "X-Tab: a\tb", "--user-agent", "agent/1", "--header", "X-Eq: 1", "--location",
        ])
        XCTAssertThrowsError(try parseConfigFile("url = \"http://x", name: "t")) { error in
            XCTAssertTrue((error as? UsageError)?.message.contains("no closing quote") == true, "\(error)")
        }
        // CRLF line ends (a file written on Windows): "\r\n" is one Character, so a split on "\n" used to leave
        // the whole file one line, and every option after the first was dropped.
        XCTAssertEqual(try parseConfigFile("silent\r\nurl = \"http://x/\"\r\n-o out\r\n-u a:b\r\n", name: "t"),
                       ["--silent", "--url", "http://x/", "-o", "out", "-u", "a:b"])
    }

    /// A config line curl passes over with a warning used to end the command: `silent # be quiet` fetched `http://#`
    /// (exit 3), an unknown option exited 2. As curl 7.88: warned of (curl's words and line wrapping), passed over,
    /// the flag still applied; muted after -s.
    func testConfigFileLinesCurlPassesOverAreWarnedOf() throws {
        var warnings: [String] = []
        let text = "show-error # be loud\nbogus-option\nbogus-too value\noutput\nverbose #\nurl = \"http://x/\"\n-o out # c\nsilent # q\nbogus-muted\n"
        XCTAssertEqual(try parseConfigFile(text, name: "w.cfg", warn: { warnings.append($0) }),
                       ["--show-error", "--verbose", "--url", "http://x/", "-o", "out", "--silent"])
        XCTAssertEqual(warnings, [
            "w.cfg:1: warning: 'show-error' uses unquoted whitespace in the line that may cause side-effects!",
            "w.cfg:1: warning: 'show-error' had unsupported trailing garbage",
            "w.cfg:2: warning: 'bogus-option' is unknown",
            "w.cfg:3: warning: 'bogus-too' is unknown",
            "w.cfg:4: warning: 'output' requires parameter",
            "w.cfg:5: warning: 'verbose' had unsupported trailing garbage",
            "w.cfg:8: warning: 'silent' uses unquoted whitespace in the line that may cause side-effects!",
        ])
        XCTAssertEqual(curlWarningLines(warnings[0]), "Warning: w.cfg:1: warning: 'show-error' uses unquoted whitespace in the line \n"
                                                      + "Warning: that may cause side-effects!\n")
        XCTAssertEqual(curlWarningLines("w.cfg:2: warning: 'bogus-option' is unknown"), "Warning: w.cfg:2: warning: 'bogus-option' is unknown\n")
        // -s before the -K (alone or in a group of flags) mutes them; -o's value "s" does not.
        for (arguments, count) in [(["-K", "c"], 1), (["-s", "-K", "c"], 0), (["-Ss", "-K", "c"], 0), (["-os", "-K", "c"], 1),
                                   (["-s", "--no-silent", "-K", "c"], 1)] {
            var seen: [String] = []
            let expanded = try expandConfigFiles(arguments, read: { _ in Array("bogus\nurl http://x/\n".utf8) }, warn: { seen.append($0) })
            XCTAssertEqual(seen.count, count, "\(arguments): \(seen)")
            XCTAssertEqual(Array(expanded.suffix(2)), ["--url", "http://x/"])
        }
        XCTAssertEqual(configOptionKind("--silent"), .flag)
        XCTAssertEqual(configOptionKind("--no-location"), .flag)
        XCTAssertEqual(configOptionKind("--output"), .value)
        XCTAssertEqual(configOptionKind("-H"), .value)
        XCTAssertEqual(configOptionKind("--bogus-option"), .unknown)
    }

    func testConfigFilesAreSplicedWhereTheyStandAndNotAfterTheTerminator() throws {
        let files = ["a.cfg": "silent\nconfig = b.cfg\n", "b.cfg": "-o x\n"]
        let read: (String) throws -> [UInt8] = { path in
            guard let text = files[path] else { throw UsageError(message: "no \(path)", exitCode: 26) }
            return Array(text.utf8)
        }
        XCTAssertEqual(try expandConfigFiles(["-v", "-K", "a.cfg", "http://u/", "--", "-K", "a.cfg"], read: read),
                       ["-v", "--silent", "-o", "x", "http://u/", "--", "-K", "a.cfg"])
        XCTAssertEqual(try expandConfigFiles(["-Kb.cfg", "--config=b.cfg"], read: read), ["-o", "x", "-o", "x"])
        XCTAssertThrowsError(try expandConfigFiles(["-K"], read: read))
    }

    func testWriteOutFormatsVariablesEscapesAndStreams() {
        let values: [(String, WriteOutValue)] = [
            ("http_code", .statusCode(200)), ("size_download", .integer(12)), ("time_total", .seconds(.milliseconds(1500))),
            ("url_effective", .string("http://h/\"q\"")), ("errormsg", .unset),
        ]
        let pieces = formatWriteOut("%{http_code} %{size_download} %{time_total}\\n%%%{stderr}err\\t%{stdout}%{json}",
                                    values: values, head: nil)
        XCTAssertEqual(pieces.map(\.0), [.stdout, .stderr, .stdout])
        XCTAssertEqual(pieces[0].1, "200 12 1.500000\n%")
        XCTAssertEqual(pieces[1].1, "err\t")
        XCTAssertEqual(pieces[2].1,
                       #"{"http_code":200,"size_download":12,"time_total":1.500000,"url_effective":"http://h/\"q\"","errormsg":null}"#)
    }

    /// curl's %{json}: http_code, response_code and remote_port are numbers; a string it does not have (no error, no
    /// output file, no Content-Type, no redirect) is null. Types compared, not text.
    func testWriteOutJSONTypesAreCurls() throws {
        let outcome = TransferOutcome(effectiveURL: "http://h/", method: "GET", status: 204, bodyBytes: 0, exitCode: 0,
                                      errorMessage: "", outputFile: nil, verifyResult: 0)
        var record = TransferRecorder.Record()
        record.route = "http://127.0.0.1:8080"
        let text = try XCTUnwrap(formatWriteOut("%{json}", values: writeOutValues(outcome, record), head: nil).first?.1)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
        for key in ["http_code", "response_code", "remote_port", "exitcode", "size_download", "urlnum"] {
            XCTAssertTrue(json[key] is NSNumber && !(json[key] is String), "\(key) is a number: \(text)")
        }
        XCTAssertEqual(json["http_code"] as? Int, 204)
        XCTAssertEqual(json["remote_port"] as? Int, 8080)
        for key in ["errormsg", "filename_effective", "content_type", "redirect_url"] {
            XCTAssertTrue(json[key] is NSNull, "\(key) is null: \(text)")
        }
        XCTAssertEqual(json["method"] as? String, "GET")
        // In a plain format they are written as curl writes them: three digits, and nothing for an unset string.
        let plain = formatWriteOut("%{http_code}|%{errormsg}|%{remote_port}", values: writeOutValues(outcome, record), head: nil)
        XCTAssertEqual(plain.first?.1, "204||8080")
        var failed = outcome
        failed.status = nil
        failed.exitCode = 7
        failed.errorMessage = "connectFailed"
        let failure = try XCTUnwrap(formatWriteOut("%{json}", values: writeOutValues(failed, TransferRecorder.Record()), head: nil).first?.1)
        let failureJSON = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(failure.utf8)) as? [String: Any], failure)
        XCTAssertEqual(failureJSON["http_code"] as? Int, 0, "no response: 0 (000 in a plain format)")
        XCTAssertEqual(failureJSON["errormsg"] as? String, "connectFailed")
        XCTAssertEqual(formatWriteOut("%{http_code}", values: writeOutValues(failed, TransferRecorder.Record()), head: nil).first?.1, "000")
    }

    /// curl's %{onerror}: the rest of the format is written only when the transfer failed.
    func testOnErrorEndsTheFormatUnlessTheTransferFailed() {
        XCTAssertEqual(formatWriteOut("done%{onerror} failed: %{exitcode}", values: [("exitcode", .integer(0))], head: nil).map(\.1),
                       ["done"])
        XCTAssertEqual(formatWriteOut("done%{onerror} failed: %{exitcode}", values: [("exitcode", .integer(7))], head: nil).map(\.1),
                       ["done failed: 7"])
    }

    func testHeaderJSONGroupsValuesUnderLowercasedNames() {
        var headers = HTTPFields()
        headers.append(HTTPField(name: HTTPField.Name("X-A")!, value: "1"))
        headers.append(HTTPField(name: .contentType, value: "text/plain"))
        headers.append(HTTPField(name: HTTPField.Name("X-A")!, value: "2"))
        let head = ReceivedHead(status: .ok, version: .http1_1, headers: headers)
        XCTAssertEqual(headerJSON(head), "{\"x-a\":[\"1\",\"2\"],\n\"content-type\":[\"text/plain\"]\n}")
        XCTAssertEqual(formatWriteOut("%header{x-a}", values: [], head: head).first?.1, "1, 2")
    }

    func testSecondsAreWrittenWithSixDecimals() {
        XCTAssertEqual(secondsText(.zero), "0.000000")
        XCTAssertEqual(secondsText(.microseconds(1_234_567)), "1.234567")
        XCTAssertEqual(secondsText(.seconds(-1)), "0.000000")
    }

    func testHeaderLinesAsCurlReadsThem() throws {
        XCTAssertTrue(parseHeader("X-A: b")! == ("X-A", "b", false))
        XCTAssertTrue(parseHeader("Accept:")! == ("Accept", "", true), "'Name:' removes")
        XCTAssertTrue(parseHeader("X-Empty;")! == ("X-Empty", "", false), "'Name;' sends it empty")
        // curl passes over a header with neither a colon nor a semicolon (ahttp exited 2, "has no colon").
        XCTAssertNil(parseHeader("nonsense"))
        XCTAssertNil(parseHeader(""))
        // ... and warns of a header file it cannot open, and goes on (ahttp exited 2).
        let options = try AhttpCommand.parse(["-s", "-H", "", "-H", "foo", "-H", "@/nonexistent/headers.txt", "-H", "X-A: 1",
                                              "http://u/"]).options()
        XCTAssertEqual(options.headers.map(\.name), ["X-A"])
    }

    func testURLQueryEncodesUnlessPlus() throws {
        XCTAssertEqual(try encodeURLQuery("q=a b&c"), "q=a+b%26c", "as curl 7.88")
        XCTAssertEqual(try encodeURLQuery("+raw=%41"), "raw=%41")
    }

    func testURLCredentialsLeaveTheURLAndTheUserNameIsShownBack() {
        var options = Options()
        options.urlQuery = ["x=1"]
        let target = TransferTarget("http://ann:p%40ss@example.com:8080?a=1#frag", options: options)
        XCTAssertEqual(target.url, "http://example.com:8080?a=1&x=1#frag")
        XCTAssertEqual(target.credentials?.username, "ann")
        XCTAssertEqual(target.credentials?.password, "p@ss")
        XCTAssertEqual(target.shown("http://example.com:8080/"), "http://ann@example.com:8080/")
        XCTAssertEqual(TransferTarget("example.com", options: Options()).url, "http://example.com")
        options.getWithQuery = true
        options.data = Array("d=1".utf8)
        XCTAssertEqual(TransferTarget("http://h", options: options).url, "http://h/?d=1&x=1")
    }

    /// A name with an encoded ':' is one name: the userinfo is split at its first ':' before decoding.
    func testURLUserNameWithAnEncodedColon() {
        let target = TransferTarget("http://a%3Ab:p%3Aw@h/", options: Options())
        XCTAssertEqual(target.credentials?.username, "a:b")
        XCTAssertEqual(target.credentials?.password, "p:w")
        XCTAssertEqual(target.url, "http://h/")
        let domain = TransferTarget("http://CORP%5Cann:pw@h/", options: Options())
        XCTAssertEqual(domain.credentials?.domain, "CORP", "DOMAIN\\user, as with -u")
        XCTAssertEqual(domain.credentials?.username, "ann")
    }

    /// URLs curl sends were refused with exit 3 (HTTPURL is strict RFC 3986): the bytes a URL may not hold raw are
    /// percent-encoded in the path, query and fragment, and %{url_effective} shows the URL as typed, as curl.
    func testURLBytesCurlSendsRawAreEncodedAndShownAsTyped() throws {
        func sent(_ raw: String) -> String { TransferTarget(raw, options: Options()).url }
        XCTAssertEqual(sent(#"http://h/echo?f={"a":[1]}"#), "http://h/echo?f=%7B%22a%22:%5B1%5D%7D")
        XCTAssertEqual(sent("http://h/echo?q=a|b"), "http://h/echo?q=a%7Cb")
        XCTAssertEqual(sent("http://h/café"), "http://h/caf%C3%A9")
        XCTAssertEqual(sent("http://h/echo?a=%zz&b=%41&c=%4"), "http://h/echo?a=%25zz&b=%41&c=%254")
        XCTAssertEqual(sent("http://h/%"), "http://h/%25")
        XCTAssertEqual(sent(#"http://h/a<b>"c\d^e`f"#), "http://h/a%3Cb%3E%22c%5Cd%5Ee%60f")
        XCTAssertEqual(sent("http://[::1]:8080/x[1]?y[]=2"), "http://[::1]:8080/x%5B1%5D?y%5B%5D=2", "an IPv6 host keeps its brackets")
        XCTAssertEqual(sent("http://h/p?a#b#c{"), "http://h/p?a#b%23c%7B")
        XCTAssertEqual(sent("h/x?q=é"), "http://h/x?q=%C3%A9")
        for raw in [#"http://h/echo?f={"a":[1]}"#, "http://h/echo?q=a|b", "http://h/café", "http://h/echo?a=%zz", "http://[::1]/x[1]"] {
            let target = TransferTarget(raw, options: Options())
            XCTAssertNoThrow(try HTTPURL(target.url), raw)
            XCTAssertEqual(target.shown(try HTTPURL(target.url).description), raw, "shown as typed, as curl")
            XCTAssertEqual(target.shown(target.url), raw)
        }
        // White space stays, and is refused (exit 3) as curl refuses it.
        XCTAssertEqual(sent("http://h/a b"), "http://h/a b")
        XCTAssertThrowsError(try HTTPURL(sent("http://h/a b")))
        // curl's %{url_effective}: the scheme lowered, the authority as typed, "/" for no path, no empty query or fragment.
        XCTAssertEqual(TransferTarget("HTTP://Example.COM:80", options: Options()).display, "http://Example.COM:80/")
        XCTAssertEqual(TransferTarget("http://h/x?#", options: Options()).display, "http://h/x")
        XCTAssertEqual(TransferTarget("http://h/x#frag", options: Options()).shown("http://h/x"), "http://h/x#frag")
        XCTAssertEqual(TransferTarget("http://h/x", options: Options()).shown("http://h/y"), "http://h/y", "another URL (a redirect's) as it is")
        XCTAssertEqual(TransferTarget("http://ann:pw@h/é", options: Options()).shown("http://h/%C3%A9"), "http://ann@h/é")
        var remoteName = Options()
        remoteName.remoteNames = 1
        guard case .file(let path) = try TransferTarget("http://h/dir/café?x=1", options: remoteName).destination(index: 0, options: remoteName) else {
            return XCTFail("-O writes a file")
        }
        XCTAssertEqual(path, "café", "-O names the file as typed, as curl")
    }

    /// A non-ASCII host was refused (exit 3); as curl with libidn2, it is sent in its IDNA ASCII form and shown as
    /// typed. An ASCII host, an IPv6 literal and userinfo and port around the host are left as they are.
    func testANonASCIIHostIsSentInItsASCIIFormAndShownAsTyped() throws {
        let target = TransferTarget("http://bücher.example:8080/café?q=1", options: Options())
        XCTAssertEqual(target.url, "http://xn--bcher-kva.example:8080/caf%C3%A9?q=1")
        XCTAssertEqual(target.display, "http://bücher.example:8080/café?q=1")
        XCTAssertEqual(try HTTPURL(target.url).host, "xn--bcher-kva.example")
        XCTAssertEqual(target.shown(try HTTPURL(target.url).description), "http://bücher.example:8080/café?q=1")
        let withUser = TransferTarget("https://user@MÜNCHEN.example/", options: Options())
        XCTAssertEqual(withUser.url, "https://xn--mnchen-3ya.example/", "the userinfo is -u's, not sent in the URL")
        XCTAssertEqual(withUser.credentials?.username, "user")
        XCTAssertEqual(TransferTarget("http://[::1]:81/x", options: Options()).url, "http://[::1]:81/x")
        XCTAssertEqual(TransferTarget("http://example.com/ü", options: Options()).url, "http://example.com/%C3%BC")
    }

    /// curl removes the path's dot segments (RFC 3986 remove_dot_segments), and --path-as-is keeps them; ahttp sent
    /// them as typed.
    func testDotSegmentsAreRemovedUnlessPathAsIs() throws {
        func target(_ raw: String, _ arguments: [String] = []) throws -> TransferTarget {
            TransferTarget(raw, options: try AhttpCommand.parse(arguments + [raw]).options())
        }
        XCTAssertEqual(try target("http://h/x/../echo/./a").url, "http://h/echo/a")
        XCTAssertEqual(try target("http://h/x/../echo/./a").display, "http://h/echo/a", "%{url_effective} as curl's")
        XCTAssertEqual(try target("http://h/a/b/..?q=/../x#/./f").url, "http://h/a/?q=/../x#/./f", "the path only")
        XCTAssertEqual(try target("http://h/..").url, "http://h/")
        XCTAssertEqual(try target("http://h/a/.%2e/b").url, "http://h/a/.%2e/b", "an encoded dot is not a dot, as curl")
        XCTAssertEqual(try target("http://h/x/../echo/./a", ["--path-as-is"]).url, "http://h/x/../echo/./a")
        XCTAssertEqual(try target("http://h/x/../a", ["--path-as-is", "--no-path-as-is"]).url, "http://h/a")
    }

    /// curl takes the next argument as the value of an option that has one, even when it begins with '-', for
    /// repeatable options too (ArgumentParser's `.singleValue` took `-x` for the proxy option).
    func testRepeatableOptionsTakeADashValue() throws {
        let command = try AhttpCommand.parse(["-d", "-x", "-H", "-y", "-d", "-1", "http://u/"])
        XCTAssertEqual(command.post.data.map(\.text), ["-x", "-1"])
        XCTAssertEqual(command.http.headers, ["-y"])
        XCTAssertTrue(command.proxy.proxy.isEmpty)
        let options = try AhttpCommand.parse(["-b", "-", "--url-query", "-q", "-F", "-f=1", "http://u/"]).options()
        XCTAssertEqual(options.cookieFiles, ["-"])
        XCTAssertEqual(options.urlQuery, ["-q"])
    }

    /// curl: -m 0 is no limit, --connect-timeout 0 its default; --limit-rate 0 no limit; --parallel-max is
    /// capped at 300 and below 1 is the default, 50. Each was a usage error.
    func testZeroMeansNoLimitAsCurl() throws {
        let options = try AhttpCommand.parse(["-m", "0", "--connect-timeout", "0", "--limit-rate", "0", "--parallel-max", "0",
                                              "http://u/"]).options()
        XCTAssertNil(options.maxTime)
        XCTAssertNil(options.connectTimeout)
        XCTAssertNil(options.flow.limitRate)
        XCTAssertEqual(options.flow.parallelMax, 50)
        XCTAssertEqual(try AhttpCommand.parse(["--parallel-max", "1000", "http://u/"]).options().flow.parallelMax, 300)
        XCTAssertEqual(try AhttpCommand.parse(["--parallel-max", "7", "http://u/"]).options().flow.parallelMax, 7)
        XCTAssertThrowsError(try AhttpCommand.parse(["-m", "-1", "http://u/"]).options())
        XCTAssertThrowsError(try AhttpCommand.parse(["--limit-rate", "-5", "http://u/"]).options())
    }

    /// The timeouts ahttp gives the client are curl's: no inactivity timeout (the library's default is 60 s), 300 s
    /// to connect unless --connect-timeout (the library's is 10 s), -m for the whole transfer; and -L follows a loop
    /// up to --max-redirs.
    func testTheClientGetsCurlsTimeouts() throws {
        var configuration = HTTPClient.Configuration()
        applyCurlTransferDefaults(try AhttpCommand.parse(["http://u/"]).options(), to: &configuration)
        XCTAssertNil(configuration.inactivityTimeout)
        XCTAssertEqual(configuration.connectTimeout, .seconds(300))
        XCTAssertNil(configuration.totalTimeout)
        XCTAssertFalse(configuration.redirectPolicy.detectsLoops)
        XCTAssertEqual(configuration.redirectPolicy.maxRedirects, 50)
        var given = HTTPClient.Configuration()
        applyCurlTransferDefaults(try AhttpCommand.parse(["--connect-timeout", "2.5", "-m", "9", "http://u/"]).options(), to: &given)
        XCTAssertEqual(given.connectTimeout, .milliseconds(2500))
        XCTAssertEqual(given.totalTimeout, .seconds(9))
        XCTAssertNil(given.inactivityTimeout)
        var tiny = HTTPClient.Configuration()
        applyCurlTransferDefaults(try AhttpCommand.parse(["-m", "0.0000000001", "http://u/"]).options(), to: &tiny)
        XCTAssertNoThrow(try tiny.validate(), "a tiny -m is a short limit, not a zero the client refuses")
    }

    /// The redirect policy of one request: only a POST becomes a GET on 301/302, and -X is kept on every hop.
    func testRedirectPolicyKeepsMethodsAsLibcurl() throws {
        let base = RedirectPolicy()
        let follow = try AhttpCommand.parse(["-L", "http://u/"]).options()
        XCTAssertNil(follow.redirectPolicy(for: .post, base: base), "a POST: the library's own rules")
        XCTAssertEqual(follow.redirectPolicy(for: .put, base: base)?.keepsMethodOn301And302, true)
        XCTAssertEqual(follow.redirectPolicy(for: .put, base: base)?.keepsMethodOn303, false)
        let custom = try AhttpCommand.parse(["-L", "-X", "POST", "http://u/"]).options()
        XCTAssertEqual(custom.redirectPolicy(for: .post, base: base)?.keepsMethodOn301And302, true)
        XCTAssertEqual(custom.redirectPolicy(for: .post, base: base)?.keepsMethodOn303, true)
        XCTAssertNil(try AhttpCommand.parse(["-X", "DELETE", "http://u/"]).options().redirectPolicy(for: .delete, base: base),
                     "without -L nothing to follow")
    }

    /// The options added for curl's sake parse; --proto's list works as curl's.
    func testCurlOptionsAddedParse() throws {
        let options = try AhttpCommand.parse(["--no-progress-meter", "-N", "-g", "--retry", "2", "--retry-connrefused",
                                              "--retry-all-errors", "--tlsv1.3", "--proto", "=https", "--proto-redir", "-all,https",
                                              "-o", "out", "http://u/"]).options()
        XCTAssertTrue(options.noProgressMeter)
        XCTAssertFalse(options.showsProgress, "--no-progress-meter: no meter even with -o")
        XCTAssertTrue(options.flow.retryConnectionRefused && options.flow.retryAllErrors)
        XCTAssertEqual(options.tlsMinimum, .tls1_3)
        XCTAssertEqual(options.protocols, ["https"])
        XCTAssertEqual(options.redirectProtocols, ["https"])
        XCTAssertEqual(try parseProtocols("-http", "--proto"), ["https"])
        XCTAssertEqual(try parseProtocols("-all,+http,ftp", "--proto"), ["http"])
        XCTAssertEqual(try parseProtocols("all", "--proto"), ["http", "https"])
        XCTAssertEqual(try parseProtocols("= https", "--proto"), ["https"], "a space after the modifier (it disabled both)")
        // The last of --tlsv1.2 and --tlsv1.3 wins, as in curl (1.3 won whatever the order).
        XCTAssertEqual(try AhttpCommand.parse(["--tlsv1.3", "--tlsv1.2", "http://u/"]).options().tlsMinimum, .tls1_2)
        XCTAssertEqual(try AhttpCommand.parse(["--tlsv1.2", "--tlsv1.3", "http://u/"]).options().tlsMinimum, .tls1_3)
        XCTAssertNil(try AhttpCommand.parse(["http://u/"]).options().tlsMinimum)
        XCTAssertTrue(isRetriedFailure(.connectFailed, options.flow))
        XCTAssertFalse(isRetriedFailure(.connectFailed, FlowOptions()))
        XCTAssertTrue(isRetriedFailure(.timeout, FlowOptions()))
    }

    func testValuesKeepTheirOrderAcrossOptions() throws {
        let command = try AhttpCommand.parse(["--data-urlencode", "b=x y", "-d", "a=1", "--json", "[1", "--json", "]",
                                              "-x", "http://p1:1", "--socks5", "p2:2", "http://u/"])
        let options = try command.options()
        XCTAssertEqual(String(decoding: options.data ?? [], as: UTF8.self), "b=x+y&a=1&[1]", "curl encodes a space as +")
        XCTAssertEqual(options.proxy?.kind, .socks5, "the last proxy option wins")
        let combined = try AhttpCommand.parse(["-sSfLo", "out", "-XPUT", "http://u/"]).options()
        XCTAssertTrue(combined.silent && combined.showError && combined.fail && combined.followRedirects)
        XCTAssertEqual(combined.outputs, ["out"])
        XCTAssertEqual(combined.method, .put)
        let negated = try AhttpCommand.parse(["-L", "--no-location", "-d", "-", "http://u/"]).options()
        XCTAssertFalse(negated.followRedirects)
        XCTAssertEqual(options.urls, ["http://u/"])
        XCTAssertEqual(negated.data, Array("-".utf8), "a value that begins with a dash is a value")
    }

    /// --data-urlencode name@FILE with a file that cannot be read exited 2; curl warns and adds nothing.
    func testDataURLEncodeOfAMissingFileIsEmpty() throws {
        let options = try AhttpCommand.parse(["-s", "-d", "x=1", "--data-urlencode", "a@/nonexistent/data.txt", "http://u/"]).options()
        XCTAssertEqual(options.data.map { String(decoding: $0, as: UTF8.self) }, "x=1&")
    }

    func testHelpCategoriesCutOneGroup() {
        let help = AhttpCommand.helpMessage(columns: 100)
        let tls = categoryHelp("tls", fullHelp: help) ?? ""
        XCTAssertTrue(tls.hasPrefix("TLS:"), tls)
        XCTAssertTrue(tls.contains("--cacert"))
        XCTAssertFalse(tls.contains("--proxy"))
        XCTAssertNil(categoryHelp("nonsense", fullHelp: help))
        XCTAssertEqual(categoryHelp("all", fullHelp: help), help)
    }
}
