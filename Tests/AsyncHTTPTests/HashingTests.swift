import XCTest

@testable import AsyncHTTP

final class HashingTests: XCTestCase {
    private func hash(_ function: HashFunction, _ text: String) throws -> String {
        hexString(try function.hash(text))
    }

    func testMD5MatchesRFC1321TestSuite() throws {
        // RFC 1321 §A.5.
        XCTAssertEqual(try hash(.md5, ""), "d41d8cd98f00b204e9800998ecf8427e")
        XCTAssertEqual(try hash(.md5, "abc"), "900150983cd24fb0d6963f7d28e17f72")
        XCTAssertEqual(try hash(.md5, "message digest"), "f96b697d7cb7938d525a2f31aaf161d0")
    }

    func testSHA256MatchesFIPS180Examples() throws {
        XCTAssertEqual(try hash(.sha256, "abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(try hash(.sha256, ""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    func testSHA512Slash256IsNotTruncatedSHA512() throws {
        // FIPS 180-4 example "abc" for SHA-512/256 (also Python's hashlib.new('sha512_256')).
        XCTAssertEqual(try hash(.sha512_256, "abc"), "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23")
        XCTAssertEqual(try hash(.sha512_256, ""), "c672b8d1ef56ed28ab87c3622c5114069bdd3ad7b8f9737498d0c01ecef0967a")
        XCTAssertEqual(try HashFunction.sha512_256.hash([]).count, 32)
    }

    func testHMACMD5MatchesRFC2202() throws {
        // RFC 2202 §2, test cases 1, 2 and 6 (a key longer than the block is hashed first).
        XCTAssertEqual(
            hexString(try HashFunction.md5.hmac(key: [UInt8](repeating: 0x0B, count: 16), Array("Hi There".utf8))),
            "9294727a3638bb1c13f48ef8158bfc9d")
        XCTAssertEqual(
            hexString(try HashFunction.md5.hmac(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))),
            "750c783e6ab0b503eaa86e310a5db738")
        XCTAssertEqual(
            hexString(
                try HashFunction.md5.hmac(
                    key: [UInt8](repeating: 0xAA, count: 80),
                    Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))),
            "6b1ab7fe4bd7bf8f0b62e6ce61b9d0cd")
    }

    func testHMACWithEmptyKeyAndMessage() throws {
        // Python: hmac.new(b'', b'', 'md5').hexdigest()
        XCTAssertEqual(hexString(try HashFunction.md5.hmac(key: [], [])), "74e6f7298a9c2d168935f58c001bad88")
    }

    func testHexIsLowercaseAndTwoDigitsPerByte() {
        XCTAssertEqual(hexString([0x00, 0x0F, 0xA0, 0xFF]), "000fa0ff")
        XCTAssertEqual(hexString([]), "")
    }

    func testSecureRandomBytesHaveTheRequestedLengthAndDiffer() {
        XCTAssertEqual(secureRandomBytes(0), [])
        let a = secureRandomBytes(16)
        let b = secureRandomBytes(16)
        XCTAssertEqual(a.count, 16)
        XCTAssertNotEqual(a, b, "two 128-bit draws colliding means the generator is broken")
    }
}
