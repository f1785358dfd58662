import XCTest

@testable import AsyncHTTP

final class MD4Tests: XCTestCase {
    private func md4(_ text: String) -> String { hexString(MD4.hash(Array(text.utf8))) }

    func testRFC1320TestSuite() {
        // RFC 1320 §A.5, "Test suite".
        XCTAssertEqual(md4(""), "31d6cfe0d16ae931b73c59d7e0c089c0")
        XCTAssertEqual(md4("a"), "bde52cb31de33e46245e05fbdbd6fb24")
        XCTAssertEqual(md4("abc"), "a448017aaf21d8525fc10ae87aa6729d")
        XCTAssertEqual(md4("message digest"), "d9130a8164549fe818874806e1c7014b")
        XCTAssertEqual(md4("abcdefghijklmnopqrstuvwxyz"), "d79e1c308aa5bbcdeea8ed63df412da9")
        XCTAssertEqual(
            md4("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"), "043f8582f241db351ce627e153e7f0e4")
        XCTAssertEqual(
            md4("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
            "e33b4ddc9c38f2199c3e7b164fcc0536")
    }

    func testLengthsAroundTheBlockAndPaddingBoundaries() {
        // 55 bytes is the longest message whose padding fits in one block; 56 needs a second block.
        // Expected values from pycryptodome's independent C implementation (Crypto.Hash.MD4) over
        // bytes(i % 251 for i in range(n)).
        let expected: [(Int, String)] = [
            (55, "cc8a7f2bd608e3eeecb7f121d13bea55"), (56, "b8e94b6408bbfa6ec9805bf21bc05cbd"),
            (63, "54ba4472fcd03e99cf28f90eed9f2ae0"), (64, "2de6578f0e7898fa17acd84b79685d3a"),
            (65, "3a4f2ca37eebdf6dc99a6155517b74fc"), (119, "9c1067170940ce8f8e4745d362675fab"),
            (120, "c5bb35660e3d0a286a96ea3aa4922b3c"), (128, "e1275970eb67d2d996e6e658270aa149"),
        ]
        for (length, digest) in expected {
            let message = (0..<length).map { UInt8($0 % 251) }
            XCTAssertEqual(hexString(MD4.hash(message)), digest, "length \(length)")
        }
    }

    func testNTHashOfPasswordMatchesMSNLMP() {
        // MS-NLMP §4.2.2.1.2, NTOWFv1("Password") = MD4(UTF-16LE("Password")).
        let password = "Password".utf16.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
        XCTAssertEqual(hexString(MD4.hash(password)), "a4f49c406510bdcab6824ee7c30fd852")
    }
}
