import XCTest

@testable import AsyncHTTP

final class HTTPURLTests: XCTestCase {
    func assertInvalid(_ string: String, _ fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try HTTPURL(string), string, file: file, line: line) { error in
            guard let error = error as? HTTPClientError else { return XCTFail("unexpected \(error)", file: file, line: line) }
            XCTAssertEqual(error.code, .invalidURL, file: file, line: line)
            XCTAssertTrue(error.message.contains(fragment), "\(string): '\(error.message)' lacks '\(fragment)'", file: file, line: line)
        }
    }

    // MARK: - Parsing

    func testComponentsOfAFullURL() throws {
        let url = try HTTPURL("https://user:p%40ss@Example.COM:8443/a/B%20c;p?x=1&y=%2F#Frag")
        XCTAssertEqual(url.scheme, "https")
        XCTAssertEqual(url.user, "user")
        XCTAssertEqual(url.password, "p@ss")
        XCTAssertEqual(url.host, "example.com")
        XCTAssertEqual(url.port, 8443)
        XCTAssertEqual(url.path, "/a/B%20c;p")
        XCTAssertEqual(url.query, "x=1&y=%2F")
        XCTAssertEqual(url.fragment, "Frag")
        XCTAssertEqual(url.requestTarget, "/a/B%20c;p?x=1&y=%2F")
        XCTAssertEqual(url.hostHeader, "example.com:8443")
        XCTAssertTrue(url.isSecure)
        XCTAssertFalse(url.isIPAddress)
        XCTAssertEqual(url.description, "https://user:p%40ss@example.com:8443/a/B%20c;p?x=1&y=%2F")
    }

    func testDefaultsAndNormalisation() throws {
        let url = try HTTPURL("HTTP://WWW.Example.com")
        XCTAssertEqual(url.scheme, "http")
        XCTAssertEqual(url.host, "www.example.com")
        XCTAssertEqual(url.port, 80)
        XCTAssertEqual(url.path, "/")
        XCTAssertNil(url.query)
        XCTAssertNil(url.fragment)
        XCTAssertNil(url.user)
        XCTAssertEqual(url.requestTarget, "/")
        XCTAssertEqual(url.hostHeader, "www.example.com")
        XCTAssertFalse(url.isSecure)
        XCTAssertEqual(url.description, "http://www.example.com/")
        XCTAssertEqual(try HTTPURL("https://a/").port, 443)
        XCTAssertEqual(try HTTPURL("https://a:443/").hostHeader, "a", "the default port is not repeated")
        XCTAssertEqual(try HTTPURL("http://a:/").port, 80, "an empty port means the default (RFC 3986 §3.2.3)")
        XCTAssertEqual(try HTTPURL("http://a:0080/").port, 80)
        XCTAssertEqual(try HTTPURL("http://a:65535/").port, 65535)
    }

    func testEmptyQueryAndFragmentAreKeptDistinctFromAbsent() throws {
        let url = try HTTPURL("http://a/p?#")
        XCTAssertEqual(url.query, "")
        XCTAssertEqual(url.fragment, "")
        XCTAssertEqual(url.requestTarget, "/p?")
        XCTAssertEqual(try HTTPURL("http://a?q").requestTarget, "/?q")
    }

    func testUserinfoVariants() throws {
        let userOnly = try HTTPURL("http://alice@a/")
        XCTAssertEqual(userOnly.user, "alice")
        XCTAssertNil(userOnly.password)
        XCTAssertEqual(userOnly.description, "http://alice@a/")
        let emptyPassword = try HTTPURL("http://alice:@a/")
        XCTAssertEqual(emptyPassword.password, "")
        let encoded = try HTTPURL("http://%C3%BC:a:b@a/")
        XCTAssertEqual(encoded.user, "ü")
        XCTAssertEqual(encoded.password, "a:b")
        XCTAssertEqual(encoded.description, "http://%C3%BC:a:b@a/")
    }

    func testIPLiterals() throws {
        let v6 = try HTTPURL("http://[2001:DB8::1]:8080/x")
        XCTAssertEqual(v6.host, "2001:db8::1")
        XCTAssertEqual(v6.port, 8080)
        XCTAssertEqual(v6.hostHeader, "[2001:db8::1]:8080")
        XCTAssertTrue(v6.isIPv6Literal)
        XCTAssertTrue(v6.isIPAddress)
        XCTAssertEqual(v6.description, "http://[2001:db8::1]:8080/x")
        XCTAssertEqual(try HTTPURL("https://[::1]").hostHeader, "[::1]")

        let v4 = try HTTPURL("http://127.0.0.1:8080/")
        XCTAssertTrue(v4.isIPAddress)
        XCTAssertFalse(v4.isIPv6Literal)
        XCTAssertFalse(try HTTPURL("http://localhost/").isIPAddress)
        XCTAssertFalse(try HTTPURL("http://1.2.3.example/").isIPAddress)
    }

    func testValidIPv6Forms() throws {
        for literal in [
            "::", "::1", "1::", "1:2:3:4:5:6:7:8", "1::8", "1:2:3:4:5:6::8", "::2:3:4:5:6:7:8", "::ffff:192.0.2.1",
            "1:2:3:4:5:6:1.2.3.4", "fe80::abcd:ef01",
        ] {
            XCTAssertEqual(try HTTPURL("http://[\(literal)]/").host, literal, literal)
        }
    }

    func testInvalidIPv6Forms() {
        for literal in ["1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "1::2::3", "12345::", ":1", "1:", ":::", "1::2:3:4:5:6:7:8", "::1.2.3", "::256.1.1.1", "g::"] {
            assertInvalid("http://[\(literal)]/", "invalid IPv6 address")
        }
        assertInvalid("http://[fe80::1%25eth0]/", "IPv6 zone identifiers are not supported")
        assertInvalid("http://[v1.fe]/", "IPvFuture address")
        assertInvalid("http://[::1/", "without its closing ']'")
        assertInvalid("http://[::1]x/", "invalid character 'x' at offset 12 in URL authority")
    }

    func testPercentEscapesArePreservedAsGiven() throws {
        let url = try HTTPURL("http://a/%7Euser/%2e%2E/x?q=%20%41")
        XCTAssertEqual(url.path, "/%7Euser/%2e%2E/x")
        XCTAssertEqual(url.query, "q=%20%41")
    }

    // MARK: - Rejections

    func testRejectionsNameTheReason() {
        let cases: [(String, String)] = [
            ("ftp://example.com/", "unsupported scheme 'ftp'"),
            ("FILE:///etc/passwd", "unsupported scheme 'file'"),
            ("mailto:someone@example.com", "unsupported scheme 'mailto'"),
            ("example.com/path", "missing scheme"),
            ("//example.com/path", "missing scheme"),
            (":8080/x", "missing scheme before ':'"),
            ("1http://x/", "invalid scheme '1http'"),
            ("ht tp://x/", "space at offset 2 in URL"),
            ("http:/example.com", "missing host"),
            ("http://", "missing host"),
            ("http:///path", "missing host"),
            ("http://:80/", "missing host"),
            ("http://user@/", "missing host"),
            ("http://a:70000/", "port 70000 out of range"),
            ("http://a:0/", "port 0 out of range"),
            ("http://a:99999999999999999999/", "port 99999999999999999999 out of range"),
            ("http://a:8x/", "invalid port '8x'"),
            ("http://a:80:90/", "invalid port '80:90'"),
            ("http://exa mple.com/", "space at offset 10 in URL (percent-encode it as %20)"),
            ("http://a/b c", "space at offset 10 in URL"),
            ("http://a/\u{7}", "control character 0x07 at offset 9 in URL"),
            ("http://a/\r\nHost: evil", "control character 0x0D at offset 9 in URL"),
            ("http://a/\u{0}", "control character 0x00 at offset 9 in URL"),
            ("http://a/\u{7F}", "control character 0x7F at offset 9 in URL"),
            (" http://a/", "space at offset 0 in URL"),
            ("http://a/ ", "space at offset 9 in URL"),
            ("http://a/caf\u{E9}", "non-ASCII character '\u{E9}' at offset 12 in URL (percent-encode it)"),
            ("http://\u{E9}\u{E9}.com/\u{E9}", "non-ASCII character '\u{E9}' at offset 7 in URL"),
            ("http://a/<script>", "invalid character '<' at offset 9 in URL"),
            ("http://a/\"q\"", "invalid character '\"' at offset 9 in URL"),
            ("http://a/{x}", "invalid character '{' at offset 9"),
            ("http://a/a|b", "invalid character '|' at offset 10"),
            ("http://a/a\\b", "invalid character '\\' at offset 10"),
            ("http://a/a^b", "invalid character '^' at offset 10"),
            ("http://a/a`b", "invalid character '`' at offset 10"),
            ("http://a/%zz", "invalid percent-escape '%zz' at offset 9 in URL"),
            ("http://a/%4", "invalid percent-escape '%4' at offset 9"),
            ("http://a/%", "invalid percent-escape '%' at offset 9"),
            ("http://a/[x]", "invalid character '[' at offset 9 in URL path"),
            ("http://a/?q=[1]", "invalid character '[' at offset 12 in URL query"),
            ("http://a/#x#y", "invalid character '#' at offset 11 in URL fragment"),
            ("http://u@v@a/", "a character at offset 8 in URL userinfo must be percent-encoded"),
            ("http://u[1]@a/", "a character at offset 8 in URL userinfo must be percent-encoded"),
            ("http://a[1]/", "invalid character '[' at offset 8 in URL host"),
            ("http://a%41/", "percent-encoded host names are not supported"),
            ("http://%C3%A9t%C3%A9.com/", "percent-encoded host names are not supported"),
        ]
        for (string, fragment) in cases {
            assertInvalid(string, fragment)
        }
    }

    func testAmbiguousNumericHostsAreRejected() throws {
        // inet_aton would read each of these as an IPv4 address.
        for host in ["127.1", "0x7f.0.0.1", "017.0.0.1", "2130706433", "1.2.3.256", "1.2.3.4.5", "example.123", "0x7F000001"] {
            assertInvalid("http://\(host)/", "ambiguous numeric host '\(host.lowercased())'")
        }
        // WHATWG reads "10.0.0.1." as 10.0.0.1, a resolver as a name: ambiguous too.
        assertInvalid("http://10.0.0.1./", "ambiguous numeric host '10.0.0.1.'")
        XCTAssertEqual(try HTTPURL("http://example.com./").host, "example.com.")
        XCTAssertEqual(try HTTPURL("http://123.example/").host, "123.example")
        XCTAssertEqual(try HTTPURL("http://0.0.0.0/").host, "0.0.0.0")
    }

    func testEqualURLsHashEqually() throws {
        let a = try HTTPURL("HTTP://Example.com:80/x?y")
        let b = try HTTPURL("http://example.com/x?y")
        XCTAssertEqual(a, b)
        XCTAssertEqual(Set([a, b]).count, 1)
        XCTAssertNotEqual(try HTTPURL("http://example.com/x?y#f"), b)
    }

    // MARK: - Reference resolution (RFC 3986 §5.4)

    static let base = "http://a/b/c/d;p?q"

    func assertResolves(_ cases: [(String, String)], file: StaticString = #filePath, line: UInt = #line) throws {
        let base = try HTTPURL(Self.base)
        for (reference, expected) in cases {
            let resolved = try base.resolving(reference)
            XCTAssertEqual(resolved, try HTTPURL(expected), "\(reference) resolved to \(resolved)", file: file, line: line)
            var text = resolved.description
            if let fragment = resolved.fragment { text += "#" + fragment }
            // Our description writes an empty path as "/" (the only difference from the RFC's strings).
            XCTAssertEqual(text, expected == "http://g" ? "http://g/" : expected, reference, file: file, line: line)
        }
    }

    func testRFC3986NormalExamples() throws {
        // §5.4.1, all of them except "g:h" (a scheme HTTPURL refuses; see the next test).
        try assertResolves([
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g"),
            ("?y", "http://a/b/c/d;p?y"),
            ("g?y", "http://a/b/c/g?y"),
            ("#s", "http://a/b/c/d;p?q#s"),
            ("g#s", "http://a/b/c/g#s"),
            ("g?y#s", "http://a/b/c/g?y#s"),
            (";x", "http://a/b/c/;x"),
            ("g;x", "http://a/b/c/g;x"),
            ("g;x?y#s", "http://a/b/c/g;x?y#s"),
            ("", "http://a/b/c/d;p?q"),
            (".", "http://a/b/c/"),
            ("./", "http://a/b/c/"),
            ("..", "http://a/b/"),
            ("../", "http://a/b/"),
            ("../g", "http://a/b/g"),
            ("../..", "http://a/"),
            ("../../", "http://a/"),
            ("../../g", "http://a/g"),
        ])
    }

    func testRFC3986ExampleWithOtherSchemeIsRefused() throws {
        // §5.4.1: "g:h" = "g:h", a valid URI but not an http(s) URL.
        XCTAssertThrowsError(try HTTPURL(Self.base).resolving("g:h")) { error in
            XCTAssertEqual((error as? HTTPClientError)?.message, "unsupported scheme 'g'")
        }
    }

    func testRFC3986AbnormalExamples() throws {
        // §5.4.2, all of them; "http:g" takes the backward-compatible reading the RFC allows.
        try assertResolves([
            ("../../../g", "http://a/g"),
            ("../../../../g", "http://a/g"),
            ("/./g", "http://a/g"),
            ("/../g", "http://a/g"),
            ("g.", "http://a/b/c/g."),
            (".g", "http://a/b/c/.g"),
            ("g..", "http://a/b/c/g.."),
            ("..g", "http://a/b/c/..g"),
            ("./../g", "http://a/b/g"),
            ("./g/.", "http://a/b/c/g/"),
            ("g/./h", "http://a/b/c/g/h"),
            ("g/../h", "http://a/b/c/h"),
            ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
            ("g;x=1/../y", "http://a/b/c/y"),
            ("g?y/./x", "http://a/b/c/g?y/./x"),
            ("g?y/../x", "http://a/b/c/g?y/../x"),
            ("g#s/./x", "http://a/b/c/g#s/./x"),
            ("g#s/../x", "http://a/b/c/g#s/../x"),
            ("http:g", "http://a/b/c/g"),
        ])
    }

    func testFragmentLessReferenceDropsTheBaseFragment() throws {
        let base = try HTTPURL("http://a/b/c?q#frag")
        XCTAssertNil(try base.resolving("d").fragment)
        XCTAssertNil(try base.resolving("").fragment)
        XCTAssertEqual(try base.resolving("").requestTarget, "/b/c?q")
        XCTAssertEqual(try base.resolving("#other").fragment, "other")
    }

    func testResolvingAbsoluteAndNetworkPathReferences() throws {
        let base = try HTTPURL("https://user:pw@a:8443/b/c")
        let absolute = try base.resolving("http://Other.example/x/../y?z")
        XCTAssertEqual(absolute.description, "http://other.example/y?z")
        XCTAssertEqual(absolute.port, 80)
        let networkPath = try base.resolving("//g/h")
        XCTAssertEqual(networkPath.description, "https://g/h", "the scheme stays, the authority (port, userinfo) is replaced")
        XCTAssertEqual(networkPath.port, 443)
        let samePlace = try base.resolving("/x")
        XCTAssertEqual(samePlace.description, "https://user:pw@a:8443/x")
        XCTAssertEqual(try base.resolving("https://b/./c/../d").path, "/d")
    }

    /// Found by FuzzURL: "//s:2" against a socket URL took a TCP port that the socket URL's text cannot show.
    func testNetworkPathReferenceAgainstASocketURLNamesAnotherSocket() throws {
        let base = try HTTPURL("https+unix://%2Frun%2Fa.sock/x")
        let other = try base.resolving("//%2Frun%2Fb.sock/y/../z?q")
        XCTAssertEqual(other.unixSocketPath, "/run/b.sock")
        XCTAssertEqual(other.requestTarget, "/z?q")
        XCTAssertEqual(try HTTPURL(other.description), other)
        XCTAssertThrowsError(try base.resolving("//s:2/")) { error in
            XCTAssertTrue((error as? HTTPClientError)?.message.contains("no port") ?? false, "\(error)")
        }
    }

    func testResolvingRejectsInvalidReferences() {
        let base = try! HTTPURL("http://a/b")
        for (reference, fragment) in [("ftp://x/", "unsupported scheme 'ftp'"), ("a b", "space at offset 1"), ("//:80/", "missing host"), ("/x y", "space at offset 2")] {
            XCTAssertThrowsError(try base.resolving(reference), reference) { error in
                XCTAssertTrue((error as? HTTPClientError)?.message.contains(fragment) ?? false, "\(reference): \(error)")
            }
        }
    }

    /// The one-pass parser of common URLs must give what the general parser gives, or leave the URL to it.
    func testCommonURLsParseAsTheGeneralParserParsesThem() throws {
        let schemes = ["http://", "https://", "HTTP://", "httpx://", "http:/"]
        let hosts = ["127.0.0.1", "example.com", "a-b.example.org", "h042.bench.test", "Example.com", "1.2.3.com", "10.0.0",
                     "256.1.1.1", "01.2.3.4", "0x7f.1", "123", "host.1a", "example.com.", "a_b.example", "[::1]", "", "u@h", "h%41"]
        let ports = ["", ":8080", ":1", ":65535", ":65536", ":0", ":080", ":", ":123456", ":8x"]
        let paths = ["", "/", "/1k.bin", "/a/b/c;p=1", "/a b", "/%20", "/a[b]", "/~user/x.html", "/@:!$&'()*+,=", "/é"]
        let queries = ["", "?", "?x=1&y=2", "?a?b", "?q=[1]", "?q=%2F"]
        let fragments = ["", "#frag", "#"]
        var common = 0
        for scheme in schemes {
            for host in hosts {
                for port in ports {
                    for path in paths {
                        for query in queries {
                            for fragment in fragments {
                                let string = scheme + host + port + path + query + fragment
                                guard let fast = HTTPURL.parseCommon(string) else { continue }
                                common += 1
                                XCTAssertEqual(fast, try HTTPURL.parseGeneral(string), string)
                            }
                        }
                    }
                }
            }
        }
        XCTAssertGreaterThan(common, 500, "the common-URL parser took almost nothing")
        for string in ["http://127.0.0.1:18080/1k.bin", "https://example.com/", "http://h042.bench.test:18080/hosts/1k.bin?x=1"] {
            XCTAssertNotNil(HTTPURL.parseCommon(string), string)
        }
    }

    func testRemoveDotSegments() {
        // RFC 3986 §5.2.4's two worked examples, and edge cases.
        XCTAssertEqual(URIReference.removeDotSegments("/a/b/c/./../../g"), "/a/g")
        XCTAssertEqual(URIReference.removeDotSegments("mid/content=5/../6"), "mid/6")
        XCTAssertEqual(URIReference.removeDotSegments("/.."), "/")
        XCTAssertEqual(URIReference.removeDotSegments("/a/.."), "/")
        XCTAssertEqual(URIReference.removeDotSegments("/a//../b"), "/a/b")
        XCTAssertEqual(URIReference.removeDotSegments(""), "")
    }
}
