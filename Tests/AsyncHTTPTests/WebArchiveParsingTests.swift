import AsyncHTTP
import Foundation
import XCTest

@testable import AsyncHTTPWebArchive

/// The web archive's pure parts: the CSS URL scanner, `srcset`, the libxml2 HTML walk and rewrite, URL
/// resolution and `data:` URIs. No network.
final class WebArchiveParsingTests: XCTestCase {
    private func urls(_ css: String) -> [String] {
        CSSURLScanner.references(in: Array(css.utf8)).map { ($0.isImport ? "@" : "") + $0.url }
    }

    func testCSSScannerFindsURLsAndImportsAndSkipsCommentsAndStrings() {
        let css = """
            @charset "utf-8";
            /* url(comment.png) @import "comment.css"; */
            @import "a.css";
            @IMPORT url( 'b.css' ) screen;
            @import url(c.css);
            .x { background: URL(  "d.png"  ) no-repeat; content: "url(string.png)"; }
            .y { background-image: url(e\\(1\\).png), url( f.png ); }
            .z { mask: myurl(not.png); cursor: url('g.cur'), auto }
            """
        XCTAssertEqual(urls(css), ["@a.css", "@b.css", "@c.css", "d.png", "e(1).png", "f.png", "g.cur"])
    }

    func testCSSScannerOneByteAtATimeBoundariesAndBadTokens() {
        // Unclosed comment, unclosed string, bad url (a quote inside an unquoted url), url( at the very end.
        XCTAssertEqual(urls("a { b: url(x.png) } /* url(y.png)"), ["x.png"])
        XCTAssertEqual(urls("a { content: 'url(y.png)"), [])
        XCTAssertEqual(urls("a { b: url(x\"y.png) } c { d: url(z.png) }"), ["z.png"])
        XCTAssertEqual(urls("url("), [])
        XCTAssertEqual(urls("url(a.png"), ["a.png"])  // the end of input ends the token (a parse error, still a URL)
        XCTAssertEqual(urls("a{b:url('x.png' y) c:url(z.png)}"), ["z.png"])  // text after a quoted URL: bad url
        XCTAssertEqual(urls("\\75 rl(a.png)"), [])  // an escaped name is not the url token here
        XCTAssertEqual(urls("x{b:url(\\61 .png)}"), ["a.png"])  // hex escape with its space
        // Every prefix of a stylesheet scans without trapping (bounded loops, no index past the end).
        let css = Array("@import 'a.css'; .a{background:url( \"b\\\".png\" )} /* c */ .d{e:url(f)}".utf8)
        for end in 0...css.count { _ = CSSURLScanner.references(in: Array(css[0..<end])) }
        XCTAssertEqual(CSSURLScanner.references(in: css).map(\.url), ["a.css", "b\".png", "f"])
    }

    func testCSSRewriteReplacesWholeTokensAndKeepsTheRest() {
        let css = Array("@import 'a.css' screen;\n.x{background:url( b.png ) red}\n.y{c:url(keep.png)}".utf8)
        let out = CSSURLScanner.rewrite(css) { reference in
            reference.url == "keep.png" ? nil : "data:x;base64,\(reference.url)\"q"
        }
        XCTAssertEqual(
            String(decoding: out, as: UTF8.self),
            "@import url(\"data:x;base64,a.css\\\"q\") screen;\n.x{background:url(\"data:x;base64,b.png\\\"q\") red}\n.y{c:url(keep.png)}")
    }

    func testSourceSetParsesCandidatesWithCommasInURLs() {
        XCTAssertEqual(SourceSet.parse("a.png 1x, b.png 2x"), [.init(url: "a.png", descriptors: "1x"), .init(url: "b.png", descriptors: "2x")])
        XCTAssertEqual(SourceSet.parse(" a.png, b.png 480w ,  "), [.init(url: "a.png", descriptors: ""), .init(url: "b.png", descriptors: "480w")])
        // Without a space the comma is part of the URL (the spec collects non-whitespace first).
        XCTAssertEqual(SourceSet.parse("a.png,b.png 480w").map(\.url), ["a.png,b.png"])
        XCTAssertEqual(SourceSet.parse("data:image/png;base64,AAAA 1x, c.png 2x").map(\.url), ["data:image/png;base64,AAAA", "c.png"])
        XCTAssertEqual(SourceSet.serialize(SourceSet.parse("a.png 1x,b.png")), "a.png 1x, b.png")
        XCTAssertEqual(SourceSet.parse(""), [])
    }

    func testHTMLDocumentFindsEveryKindOfReference() throws {
        let html = """
            <!doctype html><html><head><base href="/sub/">
            <link rel="stylesheet" href="s.css"><link rel="shortcut icon" href="i.ico"><link rel="alternate" href="feed.xml">
            <style>@import "imp.css"; p { background: url(p.png) }</style>
            <script src="j.js"></script><script>var x = "<img src=not.png>";</script>
            </head><body style="background-image:url('body.png')">
            <img src=" a.png " srcset="a.png 1x, a2.png 2x"><picture><source srcset="s1.png"></picture>
            <input type="image" src="in.png"><video poster="poster.png"></video>
            <iframe src="f.html"></iframe>
            <object data="o.svg"></object><embed src="e.swf"><a href="link.html">x</a><table background="t.png"></table>
            </body></html>
            """
        let document = try XCTUnwrap(HTMLDocument(Array(html.utf8), encoding: nil))
        XCTAssertEqual(document.baseHref, "/sub/")
        var found: [String] = []
        document.forEachReference { url, kind in
            found.append("\(kind.rawValue):\(url)")
            return nil
        }
        XCTAssertEqual(found, [
            "stylesheet:s.css", "icon:i.ico", "styleImport:imp.css", "styleResource:p.png", "script:j.js",
            "styleResource:body.png", "image:a.png", "image:a.png", "image:a2.png", "image:s1.png", "image:in.png",
            "image:poster.png", "frame:f.html", "embedded:o.svg", "embedded:e.swf", "image:t.png",
        ])
    }

    func testHTMLDocumentRewritesAndSerializesWithoutBaseAndWithAbsoluteLinks() throws {
        let html = """
            <!doctype html><html><head><base href="http://h/sub/"><link rel=stylesheet href="s.css" integrity="sha256-x" crossorigin>
            <style>p{background:url(p.png)}</style><script>if (a < b && c) {}</script></head>
            <body><img src="a.png" srcset="a.png 1x, b.png 2x" style="x:url(c.png)"><a href="l.html#top">&amp;</a></body></html>
            """
        let document = try XCTUnwrap(HTMLDocument(Array(html.utf8), encoding: "utf-8"))
        document.forEachReference { url, _ in "L/" + url }
        document.detachFromBase { "http://h/sub/" + $0 }
        let out = String(decoding: document.serialized(), as: UTF8.self)
        XCTAssertTrue(out.hasPrefix("<!DOCTYPE html>"), out)
        XCTAssertTrue(out.contains(#"<link rel="stylesheet" href="L/s.css">"#), out)
        XCTAssertTrue(out.contains(#"url("L/p.png")"#), out)
        XCTAssertTrue(out.contains("if (a < b && c) {}"), out)  // script text stays raw
        XCTAssertTrue(out.contains(#"srcset="L/a.png 1x, L/b.png 2x""#), out)
        XCTAssertTrue(out.contains(#"style='x:url("L/c.png")'"#), out)  // libxml2 quotes with ' around a "
        XCTAssertTrue(out.contains(#"href="http://h/sub/l.html#top""#), out)
        XCTAssertFalse(out.contains("integrity"), out)
        XCTAssertFalse(out.contains("href=\"http://h/sub/\""), out)  // <base href> removed
    }

    func testHTMLDocumentSurvivesTagSoupAndEmptyInput() throws {
        XCTAssertNil(HTMLDocument([], encoding: nil))
        let soup = "<p><img src=a.png<div><img src='b.png'><<<>>></p></td></table><img src=c.png"
        let document = try XCTUnwrap(HTMLDocument(Array(soup.utf8), encoding: nil))
        var found: [String] = []
        document.forEachReference { url, _ in
            found.append(url)
            return nil
        }
        XCTAssertTrue(found.contains("c.png"), "\(found)")
        // Deep nesting is walked without recursion.
        let deep = String(repeating: "<div>", count: 5000) + "<img src=deep.png>" + String(repeating: "</div>", count: 5000)
        let deepDocument = try XCTUnwrap(HTMLDocument(Array(deep.utf8), encoding: nil))
        deepDocument.forEachReference { _, _ in nil }
    }

    func testReferencesResolveRelativeAbsoluteProtocolRelativeAndSkipOtherSchemes() throws {
        let base = try HTTPURL("https://example.com/a/b/page.html")
        func resolved(_ reference: String) -> String? {
            ArchiveCrawl.resolve(reference, against: base).map { $0.url.description + ($0.fragment.map { "#" + $0 } ?? "") }
        }
        XCTAssertEqual(resolved("../c.png"), "https://example.com/a/c.png")
        XCTAssertEqual(resolved("/d.png?x=1#frag"), "https://example.com/d.png?x=1#frag")
        XCTAssertEqual(resolved("//cdn.example.net/e.png"), "https://cdn.example.net/e.png")
        XCTAssertEqual(resolved("http://other:8080/f.png"), "http://other:8080/f.png")
        XCTAssertEqual(resolved("g h.png"), "https://example.com/a/b/g%20h.png")
        XCTAssertEqual(resolved("ü.png"), "https://example.com/a/b/%C3%BC.png")
        XCTAssertEqual(resolved("100%.png"), "https://example.com/a/b/100%25.png")
        for skipped in ["", "#top", "data:image/png;base64,AA==", "javascript:void(0)", "mailto:a@b", "about:blank", "ftp://x/y"] {
            XCTAssertNil(resolved(skipped), skipped)
        }
    }

    func testDataURIsAndFileNames() {
        XCTAssertEqual(MediaTypes.base64(Array("".utf8)), "")
        XCTAssertEqual(MediaTypes.base64(Array("f".utf8)), "Zg==")
        XCTAssertEqual(MediaTypes.base64(Array("fo".utf8)), "Zm8=")
        XCTAssertEqual(MediaTypes.base64(Array("foobar".utf8)), "Zm9vYmFy")
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }
        let uri = MediaTypes.dataURI(bytes, mediaType: "image/png; charset=\"x\"")
        XCTAssertTrue(uri.hasPrefix("data:image/png;charset=x;base64,"))
        XCTAssertEqual(Data(base64Encoded: String(uri.split(separator: ",", maxSplits: 1)[1])).map { [UInt8]($0) }, bytes)
        XCTAssertEqual(MediaTypes.fileName(prefix: "3", path: "/img/logo.png", mediaType: "image/png"), "3-logo.png")
        XCTAssertEqual(MediaTypes.fileName(prefix: "4", path: "/", mediaType: "text/html"), "4-resource.html")
        XCTAssertEqual(MediaTypes.fileName(prefix: "5", path: "/x/../..%2F.css", mediaType: "text/css"), "5-_2F.css")
        XCTAssertEqual(MediaTypes.fileName(prefix: "6", path: "/api/style", mediaType: "text/css; charset=utf-8"), "6-style.css")
        XCTAssertEqual(MediaTypes.digest(""), "811c9dc5")  // FNV-1a's offset basis
        XCTAssertEqual(MediaTypes.digest("a"), "e40c292c")
        XCTAssertEqual(MediaTypes.charset("text/html; Charset=\"ISO-8859-1\""), "ISO-8859-1")
        XCTAssertEqual(MediaTypes.essence(" Text/HTML ; charset=utf-8"), "text/html")
    }
}

