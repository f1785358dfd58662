import XCTest

@testable import AsyncHTTP

final class Base64Tests: XCTestCase {
    func testRFC4648TestVectors() {
        // RFC 4648 §10.
        let vectors = [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                       ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64.encode(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base64.decode(encoded), Array(plain.utf8), encoded)
        }
    }

    func testEveryByteValueRoundTrips() {
        let bytes = (0...255).map { UInt8($0) }
        for length in [0, 1, 2, 3, 254, 255, 256] {
            let slice = Array(bytes.prefix(length))
            XCTAssertEqual(Base64.decode(Base64.encode(slice)), slice)
        }
        XCTAssertEqual(Base64.encode([0xFB, 0xFF, 0xBF]), "+/+/")
    }

    func testMissingPaddingIsAccepted() {
        XCTAssertEqual(Base64.decode("Zg"), Array("f".utf8))
        XCTAssertEqual(Base64.decode("Zm8"), Array("fo".utf8))
    }

    func testInvalidInputIsRefused() {
        XCTAssertNil(Base64.decode("Z"))  // a single leftover character encodes nothing
        XCTAssertNil(Base64.decode("Zm9v!"))
        XCTAssertNil(Base64.decode("Zm=v"))
        XCTAssertNil(Base64.decode("Zm8=="))  // too much padding for the length
        XCTAssertNil(Base64.decode("Zm 9v"))
        XCTAssertNil(Base64.decode("Zm9v-_"))  // the URL-safe alphabet is a different encoding
    }
}
