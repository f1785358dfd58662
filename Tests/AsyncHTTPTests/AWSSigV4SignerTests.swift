import AsyncHTTP
@testable import AsyncHTTPS3
import Foundation
import XCTest

/// The SigV4 signer against AWS's published values (the Signature Version 4 test suite, S3's documented
/// examples for header signing, presigned URLs and chunked uploads) and against botocore computing the same
/// requests. Every expected signature below is copied from those documents or produced by botocore at test
/// time, never from this implementation.
final class AWSSigV4SignerTests: XCTestCase {
    // The test suite's credentials and time: "aws-sig-v4-test-suite" (docs.aws.amazon.com/general/latest/gr/
    // signature-v4-test-suite.html), service "service", region us-east-1, 20150830T123600Z.
    let suite = AWSSigV4Signer(
        credentials: AWSCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1", service: "service")
    let suiteDate = Date(timeIntervalSince1970: 1_440_938_160)   // 2015-08-30T12:36:00Z
    // S3's examples (docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html and siblings).
    let s3 = AWSSigV4Signer(
        credentials: AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1", service: "s3")
    let s3Date = Date(timeIntervalSince1970: 1_369_353_600)      // 2013-05-24T00:00:00Z

    private func fields(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    private func suiteAuthorization(signedHeaders: String, signature: String) -> String {
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=\(signedHeaders), Signature=\(signature)"
    }

    // MARK: The SigV4 test suite

    func testSuiteGetVanilla() throws {
        let signed = try suite.sign(method: "GET", url: "https://example.amazonaws.com/", headers: [:], payload: .empty, date: suiteDate)
        // get-vanilla.creq, .sts and .authz.
        XCTAssertEqual(signed.canonicalRequest, """
            GET
            /

            host:example.amazonaws.com
            x-amz-date:20150830T123600Z

            host;x-amz-date
            e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            """)
        XCTAssertEqual(signed.stringToSign, """
            AWS4-HMAC-SHA256
            20150830T123600Z
            20150830/us-east-1/service/aws4_request
            bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63
            """)
        XCTAssertEqual(signed.authorization, suiteAuthorization(
            signedHeaders: "host;x-amz-date", signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"))
        XCTAssertEqual(signed.headers[HTTPField.Name("X-Amz-Date")!], "20150830T123600Z")
        XCTAssertNil(signed.headers[HTTPField.Name("X-Amz-Content-SHA256")!], "the generic suite signs no payload header")
    }

    func testSuiteVectors() throws {
        // (name, method, path and query, headers, body, signed headers, signature) from the suite's .authz files.
        let vectors: [(String, String, String, [(String, String)], String, String, String)] = [
            ("get-unreserved", "GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", [], "",
             "host;x-amz-date", "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"),
            ("get-slashes", "GET", "//example//", [], "",
             "host;x-amz-date", "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84"),
            ("get-vanilla-query-order-key-case", "GET", "/?Param2=value2&Param1=value1", [], "",
             "host;x-amz-date", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
            ("get-vanilla-query-order-value", "GET", "/?Param1=value2&Param1=value1", [], "",
             "host;x-amz-date", "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"),
            // The suite's request line holds the raw UTF-8 (U+1234); as a URL it is sent percent-encoded.
            ("get-vanilla-utf8-query", "GET", "/?%E1%88%B4=bar", [], "",
             "host;x-amz-date", "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"),
            ("get-header-value-order", "GET", "/",
             [("My-Header1", "value4"), ("My-Header1", "value1"), ("My-Header1", "value3"), ("My-Header1", "value2")], "",
             "host;my-header1;x-amz-date", "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"),
            ("get-header-key-duplicate", "GET", "/",
             [("My-Header1", "value2"), ("My-Header1", "value2"), ("My-Header1", "value1")], "",
             "host;my-header1;x-amz-date", "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"),
            ("get-header-value-trim", "GET", "/", [("My-Header1", " value1"), ("My-Header2", "\"a   b   c\"")], "",
             "host;my-header1;my-header2;x-amz-date", "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"),
            ("post-x-www-form-urlencoded", "POST", "/", [("Content-Type", "application/x-www-form-urlencoded")], "Param1=value1",
             "content-type;host;x-amz-date", "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"),
        ]
        for (name, method, target, headers, body, signedHeaders, signature) in vectors {
            let signed = try suite.sign(
                method: method, url: "https://example.amazonaws.com" + target, headers: fields(headers),
                payload: try .bytes(Array(body.utf8)), date: suiteDate)
            XCTAssertEqual(signed.authorization, suiteAuthorization(signedHeaders: signedHeaders, signature: signature), name)
        }
    }

    func testSuiteSessionToken() throws {
        // post-sts-token/post-sts-header-after: the token is added before signing and signed.
        var signer = suite
        signer.credentials.sessionToken = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
        let signed = try signer.sign(method: "GET", url: "https://example.amazonaws.com/", headers: [:], payload: .empty, date: suiteDate)
        XCTAssertEqual(signed.authorization, suiteAuthorization(
            signedHeaders: "host;x-amz-date;x-amz-security-token",
            signature: "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"))
        XCTAssertEqual(signed.headers[HTTPField.Name("X-Amz-Security-Token")!], signer.credentials.sessionToken)
    }

    func testStandardServicesNormaliseAndDoubleEncodeThePath() {
        XCTAssertEqual(suite.canonicalURI("/example/./a/../b//c/"), "/example/b/c/")
        XCTAssertEqual(suite.canonicalURI("/a%20b"), "/a%2520b")
        XCTAssertEqual(s3.canonicalURI("/bucket/a//b/./c"), "/bucket/a//b/./c", "S3 keys are not normalised")
        XCTAssertEqual(s3.canonicalURI("/test$file.text"), "/test%24file.text")
        XCTAssertEqual(s3.canonicalURI("/a%20b"), "/a%20b", "S3 encodes once")
    }

    // MARK: S3's documented examples

    func testS3GetObjectExample() throws {
        let signed = try s3.sign(
            method: "GET", url: "https://examplebucket.s3.amazonaws.com/test.txt", headers: fields([("Range", "bytes=0-9")]),
            payload: .empty, date: s3Date)
        XCTAssertEqual(signed.signedHeaders, "host;range;x-amz-content-sha256;x-amz-date")
        XCTAssertEqual(signed.stringToSign.split(separator: "\n").last, "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972")
        XCTAssertEqual(signed.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    func testS3PutObjectExample() throws {
        let body = Array("Welcome to Amazon S3.".utf8)
        let payload = try AWSPayload.bytes(body)
        XCTAssertEqual(payload, .sha256("44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"))
        let signed = try s3.sign(
            method: "PUT", url: "https://examplebucket.s3.amazonaws.com/test$file.text",
            headers: fields([("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")]),
            payload: payload, date: s3Date)
        XCTAssertTrue(signed.canonicalRequest.hasPrefix("PUT\n/test%24file.text\n\n"))
        XCTAssertEqual(signed.signedHeaders, "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class")
        XCTAssertEqual(signed.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    func testS3ListObjectsExample() throws {
        let signed = try s3.sign(
            method: "GET", url: "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J", headers: [:], payload: .empty, date: s3Date)
        XCTAssertEqual(signed.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    func testS3PresignedURLExample() throws {
        // sigv4-query-string-auth.html: GET test.txt, expires in 86400 s.
        let url = try s3.presignedURL(
            method: "GET", url: "https://examplebucket.s3.amazonaws.com/test.txt", expires: .seconds(86400), date: s3Date)
        XCTAssertEqual(url, "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            + "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z"
            + "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
            + "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
    }

    func testPresignedURLRefusesAnExpiryBeyondSevenDays() {
        XCTAssertThrowsError(try s3.presignedURL(method: "GET", url: "https://b.s3.amazonaws.com/k", expires: .seconds(604_801), date: s3Date)) {
            XCTAssertEqual(($0 as? HTTPClientError)?.code, .invalidRequest)
        }
        XCTAssertThrowsError(try s3.presignedURL(method: "GET", url: "https://b.s3.amazonaws.com/k", expires: .zero, date: s3Date))
    }

    func testS3ChunkedUploadExample() throws {
        // sigv4-streaming.html: 65 KiB of "a" in 64 KiB chunks, storage class REDUCED_REDUNDANCY.
        let signed = try s3.sign(
            method: "PUT", url: "https://s3.amazonaws.com/examplebucket/chunkObject.txt",
            headers: fields([
                ("x-amz-storage-class", "REDUCED_REDUNDANCY"), ("Content-Encoding", "aws-chunked"),
                ("x-amz-decoded-content-length", "66560"), ("Content-Length", "66824"),
            ]),
            payload: .streaming, date: s3Date)
        XCTAssertEqual(signed.signedHeaders,
            "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class")
        XCTAssertEqual(signed.signature, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
        var chunks = s3.chunkSigner(continuing: signed)
        XCTAssertEqual(try chunks.sign([UInt8](repeating: UInt8(ascii: "a"), count: 65536)),
            "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648")
        XCTAssertEqual(try chunks.sign([UInt8](repeating: UInt8(ascii: "a"), count: 1024)),
            "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497")
        XCTAssertEqual(try chunks.sign([UInt8]()), "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9")
        XCTAssertEqual(AWSChunkSigner.encodedLength(payloadLength: 66560, chunkSize: 65536), 66824)
    }

    func testTimestampFormatting() {
        XCTAssertEqual(amzTimestamp(secondsSince1970: 0), "19700101T000000Z")
        XCTAssertEqual(amzTimestamp(secondsSince1970: 951_782_400), "20000229T000000Z")
        XCTAssertEqual(amzTimestamp(secondsSince1970: 1_440_938_160), "20150830T123600Z")
        XCTAssertEqual(amzTimestamp(secondsSince1970: 4_102_444_799), "20991231T235959Z")
        XCTAssertEqual(amzTimestamp(secondsSince1970: 4_107_542_399), "21000228T235959Z")   // 2100 is not a leap year
    }

    func testCredentialsNeverPrintTheSecret() {
        let credentials = AWSCredentials(accessKeyID: "AKID", secretAccessKey: "SECRET-KEY", sessionToken: "TOKEN-VALUE")
        for text in [credentials.description, credentials.debugDescription, String(reflecting: credentials), { var s = ""; dump(credentials, to: &s); return s }()] {
            XCTAssertFalse(text.contains("SECRET-KEY"), text)
            XCTAssertFalse(text.contains("TOKEN-VALUE"), text)
            XCTAssertTrue(text.contains("AKID"), text)
        }
    }

    // MARK: Against botocore

    private func spec(_ signer: AWSSigV4Signer, method: String, url: String, headers: [(String, String)], body: [UInt8],
                      timestamp: String, mode: String = "header") -> [String: Any] {
        var spec: [String: Any] = [
            "method": method, "url": url, "headers": headers.map { [$0.0, $0.1] }, "body_hex": testHex(body),
            "region": signer.region, "service": signer.service, "access_key": signer.credentials.accessKeyID,
            "secret_key": signer.credentials.secretAccessKey, "timestamp": timestamp, "mode": mode,
        ]
        if let token = signer.credentials.sessionToken { spec["token"] = token }
        return spec
    }

    func testAuthorizationMatchesBotocore() throws {
        let regional = AWSSigV4Signer(
            credentials: AWSCredentials(accessKeyID: "AKIAEXAMPLE123", secretAccessKey: "s3cr3t/Key+With=Symbols", sessionToken: "session-TOKEN/+="),
            region: "eu-west-3", service: "s3")
        let date = Date(timeIntervalSince1970: 1_763_000_123)
        let timestamp = amzTimestamp(secondsSince1970: 1_763_000_123)
        let cases: [(AWSSigV4Signer, String, String, [(String, String)], [UInt8])] = [
            (regional, "PUT", "http://127.0.0.1:9000/my-bucket/dir/file%20name%2B1.txt", [("Content-Type", "text/plain"), ("x-amz-meta-colour", "  deep   blue ")], Array("hello world".utf8)),
            (regional, "GET", "http://127.0.0.1:9000/my-bucket?list-type=2&prefix=a%2Fb&delimiter=%2F&continuation-token=1%2F2%3D", [], []),
            (regional, "DELETE", "https://my-bucket.s3.eu-west-3.amazonaws.com/k~ey-_.", [], []),
            (AWSSigV4Signer(credentials: AWSCredentials(accessKeyID: "AKID2", secretAccessKey: "other"), region: "us-west-2", service: "execute-api"),
             "POST", "https://api.example.com:8443/stage/./items/../orders//x?b=2&a=1&a=0", [("Content-Type", "application/json")], Array("{\"id\":1}".utf8)),
        ]
        let expected = try botocoreSign(cases.map { spec($0.0, method: $0.1, url: $0.2, headers: $0.3, body: $0.4, timestamp: timestamp) })
        for (index, (signer, method, url, headers, body)) in cases.enumerated() {
            let signed = try signer.sign(method: method, url: url, headers: fields(headers), payload: try .bytes(body), date: date)
            XCTAssertEqual(signed.authorization, expected[index]["authorization"] as? String, "\(method) \(url)")
        }
    }

    func testPresignedURLMatchesBotocore() throws {
        let signer = AWSSigV4Signer(
            credentials: AWSCredentials(accessKeyID: "AKIAPRESIGN", secretAccessKey: "presign/secret", sessionToken: "tok/en+1"),
            region: "ap-south-1", service: "s3")
        let timestamp = amzTimestamp(secondsSince1970: 1_763_000_000)
        var request = spec(signer, method: "GET", url: "https://bucket.s3.ap-south-1.amazonaws.com/photos/2026/a%20b.jpg", headers: [], body: [], timestamp: timestamp, mode: "presign")
        request["expires"] = 900
        let expected = try botocoreSign([request])[0]["url"] as? String
        let url = try signer.presignedURL(
            method: "GET", url: "https://bucket.s3.ap-south-1.amazonaws.com/photos/2026/a%20b.jpg", expires: .seconds(900),
            date: Date(timeIntervalSince1970: 1_763_000_000))
        // botocore orders the query parameters differently: compare the signatures and the sets of parameters.
        func parts(_ url: String?) -> Set<Substring> { Set(url?.split(separator: "?").last?.split(separator: "&") ?? []) }
        XCTAssertEqual(parts(url), parts(expected))
        XCTAssertTrue(url.hasPrefix("https://bucket.s3.ap-south-1.amazonaws.com/photos/2026/a%20b.jpg?"))
    }

    func testStreamedUploadChunkSignaturesMatchBotocore() async throws {
        let signer = AWSSigV4Signer(
            credentials: AWSCredentials(accessKeyID: "AKIASTREAM", secretAccessKey: "stream-secret"), region: "us-east-1", service: "s3")
        let payload = (0..<(150 * 1024 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let chunkSize = 64 * 1024
        let middleware = AWSSigningMiddleware(signer: signer, now: { Date(timeIntervalSince1970: 1_763_000_000) })
        var request = HTTPClientRequest(url: "http://127.0.0.1:5000/bucket/streamed.bin")
        request.method = .put
        let stream = AsyncStream<[UInt8]> { continuation in
            var offset = 0
            while offset < payload.count {
                let end = min(offset + 10_000, payload.count)   // chunks that do not line up with the 64 KiB frames
                continuation.yield(Array(payload[offset..<end]))
                offset = end
            }
            continuation.finish()
        }
        request.body = .stream(stream, length: .known(payload.count))
        let signed = try await middleware.sign(request)
        XCTAssertEqual(signed.headers[HTTPField.Name("X-Amz-Content-SHA256")!], "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
        XCTAssertEqual(signed.headers[HTTPField.Name("X-Amz-Decoded-Content-Length")!], String(payload.count))
        let encodedLength = AWSChunkSigner.encodedLength(payloadLength: payload.count, chunkSize: chunkSize)
        XCTAssertEqual(signed.body?.length, encodedLength)

        // What goes on the wire.
        let reader = try XCTUnwrap(signed.body).makeChunkReader()
        var wire: [UInt8] = []
        while let chunk = try await reader.next() { wire += chunk }
        XCTAssertEqual(wire.count, encodedLength)
        var signatures: [String] = []
        var decoded: [UInt8] = []
        var index = 0
        while index < wire.count {
            let lineEnd = try XCTUnwrap((index..<wire.count - 1).first { wire[$0] == 13 && wire[$0 + 1] == 10 })
            let line = String(decoding: wire[index..<lineEnd], as: UTF8.self)
            let parts = line.split(separator: ";chunk-signature=")
            let size = try XCTUnwrap(Int(parts[0], radix: 16))
            signatures.append(String(parts[1]))
            decoded += wire[(lineEnd + 2)..<(lineEnd + 2 + size)]
            index = lineEnd + 2 + size + 2
        }
        XCTAssertEqual(decoded, payload)

        var streamingSpec = spec(signer, method: "PUT", url: "http://127.0.0.1:5000/bucket/streamed.bin", headers: [
            ("Content-Encoding", "aws-chunked"), ("X-Amz-Decoded-Content-Length", String(payload.count)),
            ("Content-Length", String(encodedLength)), ("X-Amz-Content-SHA256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
        ], body: [], timestamp: amzTimestamp(secondsSince1970: 1_763_000_000), mode: "streaming")
        streamingSpec["payload_hex"] = testHex(payload)
        streamingSpec["chunk_size"] = chunkSize
        let expected = try botocoreSign([streamingSpec])[0]
        XCTAssertEqual(signed.headers[.authorization], expected["authorization"] as? String)
        XCTAssertEqual(signatures, expected["chunk_signatures"] as? [String])
        XCTAssertEqual(signatures.count, 4, "three data chunks and the final empty one")
    }

    func testOneShotStreamOfUnknownLengthIsRefusedWithAClearError() async {
        let middleware = AWSSigningMiddleware(signer: s3)
        var request = HTTPClientRequest(url: "http://127.0.0.1:5000/bucket/x")
        request.method = .put
        request.body = .stream(AsyncStream<[UInt8]> { $0.finish() })
        do {
            _ = try await middleware.sign(request)
            XCTFail("signed a body whose length is unknown")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .invalidRequest)
            XCTAssertTrue(error.message.contains("length"), error.message)
        } catch { XCTFail("\(error)") }
    }

    func testFileBodyIsHashedFromDisk() async throws {
        let path = NSTemporaryDirectory() + "sigv4-file-\(getpid()).txt"
        try Data("Welcome to Amazon S3.".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var request = HTTPClientRequest(url: "https://examplebucket.s3.amazonaws.com/test$file.text")
        request.method = .put
        request.body = try .file(path)
        let date = s3Date
        let signed = try await AWSSigningMiddleware(signer: s3, now: { date }).sign(request)
        XCTAssertEqual(signed.headers[HTTPField.Name("X-Amz-Content-SHA256")!], "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
    }
}

private func testHex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
