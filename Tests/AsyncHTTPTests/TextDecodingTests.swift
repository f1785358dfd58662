import XCTest

@testable import AsyncHTTP

final class TextDecodingTests: XCTestCase {
    // MARK: - charset parameter

    func testCharsetIsReadFromTokenAndQuotedParameters() {
        XCTAssertEqual(TextEncoding.charset(fromContentType: "text/html; charset=utf-8"), "utf-8")
        XCTAssertEqual(TextEncoding.charset(fromContentType: "text/html;charset=ISO-8859-1"), "ISO-8859-1")
        XCTAssertEqual(TextEncoding.charset(fromContentType: #"text/html; charset="UTF-8""#), "UTF-8")
        XCTAssertEqual(TextEncoding.charset(fromContentType: "text/plain ;\tCHARSET=windows-1252 "), "windows-1252")
        XCTAssertEqual(TextEncoding.charset(fromContentType: "text/plain; charset = utf-8"), "utf-8", "lenient about spaces around =")
    }

    func testCharsetParameterIsFoundAmongOtherParameters() {
        XCTAssertEqual(
            TextEncoding.charset(fromContentType: #"multipart/mixed; boundary="a;charset=bad"; charset=us-ascii"#),
            "us-ascii", "a ';' inside a quoted value does not start a parameter")
        XCTAssertEqual(TextEncoding.charset(fromContentType: "text/html; format=flowed; charset=utf-8; x=y"), "utf-8")
        XCTAssertEqual(TextEncoding.charset(fromContentType: "text/html;;; charset=utf-8"), "utf-8", "empty parameters")
        XCTAssertEqual(TextEncoding.charset(fromContentType: "text/html; novalue; charset=utf-8"), "utf-8")
        XCTAssertEqual(TextEncoding.charset(fromContentType: "text/html; charset=utf-8; charset=latin1"), "utf-8", "first wins")
        XCTAssertEqual(TextEncoding.charset(fromContentType: "text/html; xcharset=latin1; charset=utf-8"), "utf-8")
    }

    func testQuotedCharsetEscapesAreUndone() {
        XCTAssertEqual(TextEncoding.charset(fromContentType: #"text/plain; charset="utf\-8""#), "utf-8")
        XCTAssertEqual(TextEncoding.charset(fromContentType: #"text/plain; charset="utf-8"#), "utf-8", "unterminated quote")
    }

    func testMissingOrEmptyCharsetIsNil() {
        XCTAssertNil(TextEncoding.charset(fromContentType: "text/html"))
        XCTAssertNil(TextEncoding.charset(fromContentType: "text/html;"))
        XCTAssertNil(TextEncoding.charset(fromContentType: "text/html; charset="))
        XCTAssertNil(TextEncoding.charset(fromContentType: #"text/html; charset="""#))
        XCTAssertNil(TextEncoding.charset(fromContentType: "text/html; charset"))
        XCTAssertNil(TextEncoding.charset(fromContentType: ""))
    }

    // MARK: - charset names

    func testEveryCharsetAliasIsRecognisedCaseInsensitively() {
        let expected: [(TextEncoding, [String])] = [
            (.utf8, ["utf-8", "UTF8", "csUTF8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"]),
            (.isoLatin1, [
                "ISO-8859-1", "iso_8859-1", "ISO_8859-1:1987", "iso8859-1", "iso88591", "Latin1", "L1", "iso-ir-100",
                "IBM819", "cp819", "csISOLatin1",
            ]),
            (.windows1252, ["windows-1252", "CP1252", "x-cp1252", "cswindows1252"]),
            (.ascii, [
                "US-ASCII", "ascii", "us", "ISO646-US", "ISO_646.irv:1991", "ANSI_X3.4-1968", "ANSI_X3.4-1986",
                "iso-ir-6", "IBM367", "cp367", "csASCII",
            ]),
            (.utf16, ["UTF-16", "utf16", "csUTF16", "UCS-2", "ISO-10646-UCS-2", "csUnicode", "unicode"]),
            (.utf16BE, ["UTF-16BE", "csUTF16BE", "unicodeFFFE"]),
            (.utf16LE, ["utf-16le", "csUTF16LE", "UnicodeFEFF"]),
        ]
        for (encoding, names) in expected {
            for name in names {
                XCTAssertEqual(TextEncoding(charset: name), encoding, name)
            }
        }
        XCTAssertEqual(TextEncoding.charsetNames.count, expected.reduce(0) { $0 + $1.1.count }, "every alias tested")
    }

    func testCharsetNameIgnoresSurroundingWhitespaceAndRejectsUnknownNames() {
        XCTAssertEqual(TextEncoding(charset: " utf-8\t"), .utf8)
        XCTAssertNil(TextEncoding(charset: "shift_jis"), "decoded by LegacyCharset instead")
        XCTAssertNil(TextEncoding(charset: "utf-32"))
        XCTAssertNil(TextEncoding(charset: "utf 8"))
        XCTAssertNil(TextEncoding(charset: ""))
    }

    // MARK: - Decoders

    func testUTF8DecodesAndReplacesInvalidSequences() {
        XCTAssertEqual(TextEncoding.utf8.decode(Array("héllo €😀".utf8)), "héllo €😀")
        // An invalid byte, a truncated 3-byte sequence, an overlong '/'.
        XCTAssertEqual(TextEncoding.utf8.decode([0x61, 0xFF, 0x62, 0xE2, 0x82, 0x63, 0xC0, 0xAF]), "a\u{FFFD}b\u{FFFD}c\u{FFFD}\u{FFFD}")
    }

    func testUTF8ByteOrderMarkIsStripped() {
        XCTAssertEqual(TextEncoding.utf8.decode([0xEF, 0xBB, 0xBF] + Array("abc".utf8)), "abc")
        XCTAssertEqual(TextEncoding.utf8.decode([0xEF, 0xBB, 0xBF]), "")
        XCTAssertEqual(TextEncoding.utf8.decode([]), "")
    }

    func testISOLatin1MapsEveryByteToTheSameCodePoint() {
        let all = (0...255).map { UInt8($0) }
        let text = TextEncoding.isoLatin1.decode(all)
        XCTAssertEqual(text.unicodeScalars.map(\.value), (0...255).map { UInt32($0) })
        XCTAssertEqual(TextEncoding.isoLatin1.decode([0x63, 0x61, 0x66, 0xE9]), "café")
        XCTAssertEqual(TextEncoding.isoLatin1.decode([]), "")
    }

    func testWindows1252UsesTheWHATWGTableIncludingUndefinedBytesAsC1Controls() {
        let high = (0x80...0x9F).map { UInt8($0) }
        let scalars = TextEncoding.windows1252.decode(high).unicodeScalars.map(\.value)
        XCTAssertEqual(scalars, [
            0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
            0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
            0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
            0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
        ])
        XCTAssertEqual(TextEncoding.windows1252.decode([0x93, 0x48, 0x69, 0x94, 0x20, 0x80, 0x35, 0x20, 0xE9]), "“Hi” €5 é")
        // Outside 0x80–0x9F it is ISO-8859-1.
        let rest = (0...0x7F).map { UInt8($0) } + (0xA0...0xFF).map { UInt8($0) }
        XCTAssertEqual(TextEncoding.windows1252.decode(rest).unicodeScalars.map(\.value), rest.map { UInt32($0) })
    }

    func testASCIIReplacesHighBytes() {
        XCTAssertEqual(TextEncoding.ascii.decode(Array("plain\r\n".utf8)), "plain\r\n")
        XCTAssertEqual(TextEncoding.ascii.decode([0x61, 0x80, 0xFF, 0x62]), "a\u{FFFD}\u{FFFD}b")
    }

    func testUTF16BigAndLittleEndianDecodeSurrogatePairs() {
        let text = "Aé€😀"
        let units = Array(text.utf16)
        let be = units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        let le = units.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        XCTAssertEqual(TextEncoding.utf16BE.decode(be), text)
        XCTAssertEqual(TextEncoding.utf16LE.decode(le), text)
        XCTAssertEqual(TextEncoding.utf16BE.decode([0xFE, 0xFF] + be), text, "matching BOM stripped")
        XCTAssertEqual(TextEncoding.utf16LE.decode([0xFF, 0xFE] + le), text, "matching BOM stripped")
        XCTAssertEqual(TextEncoding.utf16LE.decode([]), "")
    }

    func testUTF16DetectsByteOrderFromBOMAndDefaultsToBigEndian() {
        XCTAssertEqual(TextEncoding.utf16.decode([0xFF, 0xFE, 0x41, 0x00, 0x42, 0x00]), "AB")
        XCTAssertEqual(TextEncoding.utf16.decode([0xFE, 0xFF, 0x00, 0x41, 0x00, 0x42]), "AB")
        XCTAssertEqual(TextEncoding.utf16.decode([0x00, 0x41, 0x00, 0x42]), "AB", "RFC 2781 §4.3: big-endian without a BOM")
    }

    func testUTF16UnpairedSurrogatesAndOddByteBecomeReplacementCharacters() {
        // High surrogate followed by a non-surrogate, a lone low surrogate, a high surrogate at the end.
        let be: [UInt8] = [0xD8, 0x3D, 0x00, 0x41, 0xDE, 0x00, 0x00, 0x42, 0xD8, 0x3D]
        XCTAssertEqual(TextEncoding.utf16BE.decode(be), "\u{FFFD}A\u{FFFD}B\u{FFFD}")
        XCTAssertEqual(TextEncoding.utf16LE.decode([0x41, 0x00, 0x42]), "A\u{FFFD}", "odd trailing byte")
        // Two high surrogates then a low one: the first is unpaired, the second pairs.
        XCTAssertEqual(TextEncoding.utf16BE.decode([0xD8, 0x3D, 0xD8, 0x3D, 0xDE, 0x00]), "\u{FFFD}😀")
    }

    // MARK: - Choosing the encoding

    private func decode(_ bytes: [UInt8], _ contentType: String?, fallback: TextDecodingFallback = TextDecodingFallback())
        -> String
    {
        TextEncoding.decode(bytes, contentType: contentType, fallback: fallback)
    }

    func testDeclaredCharsetWinsOverContent() {
        let utf8Bytes = Array("é".utf8)  // C3 A9
        XCTAssertEqual(decode(utf8Bytes, "text/plain; charset=iso-8859-1"), "Ã©")
        XCTAssertEqual(decode([0x93, 0x94], "text/plain; charset=cp1252"), "“”")
        XCTAssertEqual(decode([0x00, 0x41], "text/plain; charset=utf-16be"), "A")
        XCTAssertEqual(TextEncoding.decode(utf8Bytes, contentType: "text/plain; charset=UTF-8"), "é")
    }

    /// WHATWG "decode": a byte order mark wins over the label (the old code decoded the BOM as ISO-8859-1, "ï»¿a").
    func testByteOrderMarkWinsOverTheDeclaredCharsetAndIsStripped() {
        let bomUTF8: [UInt8] = [0xEF, 0xBB, 0xBF, 0x61, 0xC3, 0xA9]
        XCTAssertEqual(decode(bomUTF8, "text/plain; charset=utf-8"), "aé")
        XCTAssertEqual(decode(bomUTF8, "text/plain; charset=iso-8859-1"), "aé")
        XCTAssertEqual(decode([0xFF, 0xFE, 0x41, 0x00], "text/plain; charset=windows-1252"), "A")
        XCTAssertEqual(decode([0xFE, 0xFF, 0x00, 0x41], "text/plain; charset=utf-16le"), "A")
    }

    func testWithoutCharsetABOMDecides() {
        XCTAssertEqual(decode([0xEF, 0xBB, 0xBF, 0x68, 0xC3, 0xA9], nil), "hé")
        XCTAssertEqual(decode([0xFE, 0xFF, 0x00, 0x68, 0x00, 0xE9], "text/plain"), "hé")
        XCTAssertEqual(decode([0xFF, 0xFE, 0x68, 0x00, 0xE9, 0x00], nil), "hé")
    }

    func testWithoutCharsetOrBOMValidUTF8IsUTF8() {
        XCTAssertEqual(decode(Array("naïve ☃".utf8), "application/json"), "naïve ☃")
        XCTAssertEqual(decode(Array("naïve ☃".utf8), nil), "naïve ☃")
        XCTAssertEqual(decode([], nil), "")
    }

    /// RFC 8259 §8.1: JSON is UTF-8 whatever charset the server names (the old code decoded it as ISO-8859-1).
    func testJSONIsAlwaysUTF8() {
        let bytes = Array(#"{"name":"José"}"#.utf8)
        XCTAssertEqual(decode(bytes, "application/json; charset=iso-8859-1"), #"{"name":"José"}"#)
        XCTAssertEqual(decode(bytes, "application/problem+json; charset=windows-1252"), #"{"name":"José"}"#)
        XCTAssertEqual(decode(bytes, "APPLICATION/JSON;charset=us-ascii"), #"{"name":"José"}"#)
        XCTAssertEqual(decode([0x4A, 0xE9], "application/json"), "J\u{FFFD}", "invalid UTF-8 is U+FFFD, not a fallback")
        XCTAssertEqual(decode([0x4A, 0xE9], "text/json; charset=iso-8859-1"), "Jé", "text/json is not the JSON media type")
    }

    /// Two Content-Type fields are joined with ", " by HTTPFields: the WHATWG reads the last media type, keeping
    /// an earlier charset of the same type (the old code read "latin1, text/html" as the charset).
    func testSeveralContentTypesAreReadAsTheWHATWGDoes() {
        let latin1: [UInt8] = [0x63, 0x61, 0x66, 0xE9]  // "café" in ISO-8859-1, invalid UTF-8
        XCTAssertEqual(decode(Array("é".utf8), "text/plain; charset=iso-8859-1, text/html; charset=utf-8"), "é")
        XCTAssertEqual(decode(latin1, "text/html; charset=utf-8, text/plain; charset=windows-1252"), "café")
        XCTAssertEqual(decode(Array("é".utf8), "text/html; charset=iso-8859-1, text/html"), "Ã©", "same type keeps it")
        XCTAssertEqual(decode(Array("é".utf8), "text/plain; charset=iso-8859-1, text/html"), "é", "another type drops it")
        XCTAssertEqual(decode(Array("é".utf8), "text/html; charset=iso-8859-1, */*"), "Ã©", "*/* is skipped")
        XCTAssertEqual(decode(Array("é".utf8), #"text/html; x="a,b"; charset=iso-8859-1"#), "Ã©", "a quoted comma")
        XCTAssertEqual(TextEncoding.mediaType(fromContentType: "text/plain, application/json").isJSON, true)
    }

    func testInvalidUTF8WithoutCharsetFallsBackToISOLatin1ByDefault() {
        let latin1: [UInt8] = [0x63, 0x61, 0x66, 0xE9, 0x20, 0x93]  // "café " + 0x93
        XCTAssertEqual(decode(latin1, "text/html").unicodeScalars.map(\.value), [0x63, 0x61, 0x66, 0xE9, 0x20, 0x93])
        XCTAssertEqual(TextEncoding.decode(latin1, contentType: nil, fallback: TextDecodingFallback()), "café \u{93}")
    }

    func testFallbackEncodingIsConfigurable() {
        let bytes: [UInt8] = [0x93, 0x6F, 0x6B, 0x94]
        XCTAssertEqual(TextEncoding.decode(bytes, contentType: nil, fallback: TextDecodingFallback(encoding: .windows1252)), "“ok”")
        XCTAssertEqual(TextEncoding.decode(bytes, contentType: nil, fallback: TextDecodingFallback(encoding: .utf8)), "\u{FFFD}ok\u{FFFD}")
        XCTAssertEqual(TextDecodingFallback().encoding, .isoLatin1)
    }

    func testUnknownDeclaredCharsetFallsBackTheSameWay() {
        XCTAssertEqual(decode(Array("日本".utf8), "text/plain; charset=x-unknown"), "日本")
        XCTAssertEqual(decode([0xFF, 0xFE, 0x41, 0x00], "text/plain; charset=x-unknown"), "A")
        XCTAssertEqual(decode([0xE9], "text/plain; charset=bogus"), "é")
        XCTAssertEqual(decode([0x93], "text/plain; charset=bogus", fallback: TextDecodingFallback(encoding: .windows1252)), "“")
        XCTAssertEqual(decode([0x93], #"text/plain; charset="../../x""#, fallback: TextDecodingFallback(encoding: .windows1252)), "“")
    }

    // MARK: - Legacy charsets

    /// Declared legacy charsets are decoded (by the platform's iconv); the old code ignored them and gave mojibake.
    func testLegacyCharsetsAreDecoded() throws {
        // "日本語" in Shift_JIS, "Привет" in windows-1251 and KOI8-R, "Łódź" in ISO-8859-2, "€" in ISO-8859-15,
        // "한국" in EUC-KR, "中文" in GBK, "中文" in Big5, "日本" in EUC-JP.
        let cases: [(String, [UInt8], String)] = [
            ("Shift_JIS", [0x93, 0xFA, 0x96, 0x7B, 0x8C, 0xEA], "日本語"),
            ("windows-1251", [0xCF, 0xF0, 0xE8, 0xE2, 0xE5, 0xF2], "Привет"),
            ("koi8-r", [0xF0, 0xD2, 0xC9, 0xD7, 0xC5, 0xD4], "Привет"),
            ("ISO-8859-2", [0xA3, 0xF3, 0x64, 0xBC], "Łódź"),
            ("iso-8859-15", [0xA4], "€"),
            ("EUC-KR", [0xC7, 0xD1, 0xB1, 0xB9], "한국"),
            ("gbk", [0xD6, 0xD0, 0xCE, 0xC4], "中文"),
            ("gb2312", [0xD6, 0xD0, 0xCE, 0xC4], "中文"),
            ("big5", [0xA4, 0xA4, 0xA4, 0xE5], "中文"),
            ("euc-jp", [0xC6, 0xFC, 0xCB, 0xDC], "日本"),
        ]
        for (charset, bytes, text) in cases {
            XCTAssertEqual(decode(bytes, "text/html; charset=\(charset)"), text, charset)
            XCTAssertEqual(try TextEncoding.decodeChecked(bytes, contentType: "text/plain;charset=\(charset)",
                                                          fallback: TextDecodingFallback()), text, charset)
        }
    }

    /// A label outside the WHATWG's table is ignored, as browsers ignore it, even where iconv knows it: UTF-7 and
    /// ISO-2022-KR can hide markup from a sanitizer (`+ADw-script+AD4-` is `<script>` in UTF-7).
    func testALabelBrowsersRefuseIsNotDecoded() throws {
        let bytes = Array("+ADw-script+AD4-".utf8)
        for charset in ["utf-7", "iso-2022-kr", "ibm037"] {
            XCTAssertEqual(try TextEncoding.decodeChecked(bytes, contentType: "text/html; charset=\(charset)",
                                                          fallback: TextDecodingFallback()), "+ADw-script+AD4-", charset)
        }
    }

    func testLegacyCharsetsReplaceWhatTheyCannotDecode() {
        // 0x81 0x20 is no Shift_JIS character; a lead byte at the very end is cut short.
        XCTAssertEqual(decode([0x61, 0x81, 0x20, 0x62, 0x93], "text/plain; charset=shift_jis"), "a\u{FFFD} b\u{FFFD}")
        XCTAssertEqual(decode([], "text/plain; charset=shift_jis"), "")
    }

    /// A charset this client knows of but the platform cannot decode is an error naming it, not a guess.
    func testAKnownCharsetThePlatformCannotDecodeIsAnError() throws {
        let table = ["x-test-legacy": ["NO-SUCH-CHARSET-HERE"]]
        let outcome = [UInt8]([0x41]).withUnsafeBufferPointer {
            LegacyCharset.decode($0, charset: "X-Test-Legacy", table: table)
        }
        guard case .unsupported = outcome else { return XCTFail("\(outcome)") }
        let unknown = [UInt8]([0x41]).withUnsafeBufferPointer { LegacyCharset.decode($0, charset: "x-nothing", table: table) }
        guard case .unknown = unknown else { return XCTFail("\(unknown)") }
        XCTAssertThrowsError(try TextEncoding.decodeChecked([0x41], contentType: "text/plain; charset=x-test-legacy",
                                                            fallback: TextDecodingFallback(), legacyNames: table)) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .malformedResponse)
            XCTAssertTrue("\(error)".contains("x-test-legacy"), "\(error)")
        }
    }
}
