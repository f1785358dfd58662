import Foundation
import XCTest

@testable import AsyncHTTP

final class PublicSuffixListTests: XCTestCase {
    /// Runs every `checkPublicSuffix(input, expected)` line of the list's own test file
    /// (publicsuffix/list tests/test_psl.txt). Despite its name the function checks the *registrable domain*.
    func testEveryCaseInTheOfficialTestFilePasses() throws {
        let url = try XCTUnwrap(
            Bundle.module.url(forResource: "test_psl", withExtension: "txt", subdirectory: "Resources"))
        let text = try String(contentsOf: url, encoding: .utf8)
        let list = PublicSuffixList.shared
        var checked = 0
        var failures: [String] = []
        for line in text.split(separator: "\n") where line.hasPrefix("checkPublicSuffix(") {
            let arguments = line.dropFirst("checkPublicSuffix(".count).prefix { $0 != ")" }
                .split(separator: ",").map { Self.literal($0) }
            XCTAssertEqual(arguments.count, 2, "cannot read \(line)")
            guard arguments.count == 2 else { continue }
            checked += 1
            let actual = arguments[0].flatMap { list.registrableDomain(of: $0) }
            if actual != arguments[1] {
                failures.append("\(line) -> \(actual ?? "null")")
            }
        }
        // The file holds 78 checks; a parse that silently skipped some would pass vacuously.
        XCTAssertEqual(checked, 78)
        XCTAssertEqual(failures, [], "failing cases:\n" + failures.joined(separator: "\n"))
    }

    /// `'text'` -> "text", `null` -> nil.
    private static func literal(_ raw: Substring) -> String? {
        let trimmed = raw.trimmingCharacters(in: .whitespaces)
        if trimmed == "null" { return nil }
        return String(trimmed.dropFirst().dropLast())
    }

    func testBundledListLoadsBothSections() {
        let list = PublicSuffixList.shared
        XCTAssertGreaterThan(list.ruleCount, 9000)
        // ICANN section.
        XCTAssertEqual(list.publicSuffix(of: "www.example.co.uk"), "co.uk")
        XCTAssertEqual(list.registrableDomain(of: "www.example.co.uk"), "example.co.uk")
        // Private section counts too, as in browsers: github.io users cannot set cookies for each other.
        XCTAssertEqual(list.publicSuffix(of: "octocat.github.io"), "github.io")
        XCTAssertEqual(list.registrableDomain(of: "octocat.github.io"), "octocat.github.io")
        XCTAssertNil(list.registrableDomain(of: "github.io"))
    }

    /// The compiled-in copy must be the shipped `.dat`, byte for byte (a multi-line literal drops the last
    /// newline). Fails when the `.dat` is replaced without running `scripts/embed-psl.sh`.
    func testCompiledInListMatchesTheShippedFile() throws {
        let datPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/AsyncHTTP/Resources/public_suffix_list.dat").path
        let file = try XCTUnwrap(FileManager.default.contents(atPath: datPath), "cannot read \(datPath)")
        let compiled = PublicSuffixList.bundledText.withUTF8Buffer { Array($0) }
        XCTAssertGreaterThan(compiled.count, 300_000)
        XCTAssertTrue(compiled == Array(file) || compiled + [0x0A] == Array(file),
                      "PublicSuffixListData.swift differs from public_suffix_list.dat: run scripts/embed-psl.sh")
    }

    func testWildcardExceptionAndDefaultRulesFromListText() {
        let list = PublicSuffixList(listText: """
            // comment line
            com
            *.kawasaki.jp
            !city.kawasaki.jp
            uk   trailing text after whitespace is ignored
            co.uk
            """)
        XCTAssertEqual(list.ruleCount, 5)
        XCTAssertEqual(list.publicSuffix(of: "a.b.kawasaki.jp"), "b.kawasaki.jp")
        XCTAssertEqual(list.registrableDomain(of: "a.b.kawasaki.jp"), "a.b.kawasaki.jp")
        XCTAssertEqual(list.publicSuffix(of: "www.city.kawasaki.jp"), "kawasaki.jp")
        XCTAssertEqual(list.registrableDomain(of: "www.city.kawasaki.jp"), "city.kawasaki.jp")
        XCTAssertEqual(list.publicSuffix(of: "x.y.example"), "example")  // default rule "*"
        XCTAssertEqual(list.publicSuffix(of: "shop.CO.UK"), "co.uk")
        XCTAssertTrue(list.isPublicSuffix("co.uk"))
        XCTAssertTrue(list.isPublicSuffix("b.kawasaki.jp"))
        XCTAssertFalse(list.isPublicSuffix("city.kawasaki.jp"))
        XCTAssertFalse(list.isPublicSuffix("example.com"))
    }

    func testInvalidHostsHaveNoPublicSuffix() {
        let list = PublicSuffixList.shared
        XCTAssertNil(list.publicSuffix(of: ""))
        XCTAssertNil(list.publicSuffix(of: ".com"))
        XCTAssertNil(list.publicSuffix(of: "a..com"))
        XCTAssertFalse(list.isPublicSuffix(""))
    }

    func testADotFollowedByACombiningMarkIsAnInvalidHostNotOneLabel() {
        // Found by FuzzPublicSuffix (Fuzz/findings/psl-dot-with-combining-mark.bin): "." + U+0301 is one
        // Character, so the host used to be one label whose ASCII form had two, and the whole host came back
        // as both its public suffix and its registrable domain.
        let list = PublicSuffixList.shared
        for host in ["example.\u{301}com", "a.\u{5BA}b.com"] {
            XCTAssertNil(list.publicSuffix(of: host), host)
            XCTAssertNil(list.registrableDomain(of: host), host)
            XCTAssertFalse(list.isPublicSuffix(host), host)
        }
        XCTAssertEqual(list.registrableDomain(of: "www.exa\u{301}mple.com"), "exa\u{301}mple.com", "a mark inside a label is fine")
    }

    func testUnicodeHostAnswersInUnicodeAndPunycodeInPunycode() {
        let list = PublicSuffixList.shared
        XCTAssertEqual(list.publicSuffix(of: "www.食狮.公司.cn"), "公司.cn")
        XCTAssertEqual(list.publicSuffix(of: "www.xn--85x722f.xn--55qx5d.cn"), "xn--55qx5d.cn")
        // The ideographic full stop separates labels, as IDNA says.
        XCTAssertEqual(list.registrableDomain(of: "www。食狮。中国"), "食狮.中国")
    }

    func testPunycodeEncodesRFC3492Samples() {
        XCTAssertEqual(Punycode.encode("食狮"), "85x722f")
        XCTAssertEqual(Punycode.encode("公司"), "55qx5d")
        XCTAssertEqual(Punycode.encode("中国"), "fiqs8s")
        XCTAssertEqual(Punycode.encode("bücher"), "bcher-kva")
        // RFC 3492 §7.1 (B) Chinese (simplified) and (A) Arabic (Egyptian).
        XCTAssertEqual(Punycode.encode("他们为什么不说中文"), "ihqwcrb4cv8a8dqg056pqjye")
        XCTAssertEqual(Punycode.encode("\u{0644}\u{064A}\u{0647}\u{0645}\u{0627}\u{0628}\u{062A}\u{0643}\u{0644}"
            + "\u{0645}\u{0648}\u{0634}\u{0639}\u{0631}\u{0628}\u{064A}\u{061F}"), "egbpdaj6bu4bxfgehfvwxn")
        // (L) mixed: "3<nen>B<gumi><kinpachi><sensei>"
        XCTAssertEqual(Punycode.encode("3年B組金八先生"), "3B-ww4c5e180e575a65lsy2b")
    }

    func testIDNAToASCIILowercasesAndEncodesOnlyNonASCIILabels() {
        XCTAssertEqual(IDNA.toASCII("WWW.Bücher.DE"), "www.xn--bcher-kva.de")
        XCTAssertEqual(IDNA.toASCII("Example.COM"), "example.com")
        XCTAssertEqual(IDNA.toASCII("BÜCHER.de"), "xn--bcher-kva.de")
    }
}
