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
            ("http_code", .string("200")), ("size_download", .integer(12)), ("time_total", .seconds(.milliseconds(1500))),
            ("url_effective", .string("http://h/\"q\"")),
        ]
        let pieces = formatWriteOut("%{http_code} %{size_download} %{time_total}\\n%%%{stderr}err\\t%{stdout}%{json}",
                                    values: values, head: nil)
        XCTAssertEqual(pieces.map(\.0), [.stdout, .stderr, .stdout])
        XCTAssertEqual(pieces[0].1, "200 12 1.500000\n%")
        XCTAssertEqual(pieces[1].1, "err\t")
        XCTAssertEqual(pieces[2].1, #"{"http_code":"200","size_download":12,"time_total":1.500000,"url_effective":"http://h/\"q\""}"#)
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
        XCTAssertTrue(try parseHeader("X-A: b") == ("X-A", "b", false))
        XCTAssertTrue(try parseHeader("Accept:") == ("Accept", "", true), "'Name:' removes")
        XCTAssertTrue(try parseHeader("X-Empty;") == ("X-Empty", "", false), "'Name;' sends it empty")
        XCTAssertThrowsError(try parseHeader("nonsense"))
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
