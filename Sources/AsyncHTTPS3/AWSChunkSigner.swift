import AsyncHTTP

/// The chunk signatures of an upload signed with ``AWSPayload/streaming`` (S3's "Transferring Payload in
/// Multiple Chunks"): each chunk is sent as `hex(size);chunk-signature=SIG\r\nDATA\r\n`, where SIG signs the
/// chunk's SHA-256 together with the previous signature (the request's own signature for the first chunk), and a
/// last chunk of size 0 ends the body.
///
/// ```swift
/// var chunks = signer.chunkSigner(continuing: signed)
/// let first = try chunks.encode(firstSixtyFourKiB)   // "10000;chunk-signature=…\r\n" + bytes + "\r\n"
/// let end = try chunks.encode([])                    // "0;chunk-signature=…\r\n\r\n"
/// ```
public struct AWSChunkSigner: Sendable {
    let signingKey: [UInt8]
    let timestamp: String
    let scope: String
    /// The signature of the last chunk signed (the seed signature before the first).
    public private(set) var previousSignature: String

    /// The hash of an empty string, which each chunk's string to sign holds where a request has its headers.
    private static let emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    init(signingKey: [UInt8], timestamp: String, scope: String, seedSignature: String) {
        self.signingKey = signingKey
        self.timestamp = timestamp
        self.scope = scope
        previousSignature = seedSignature
    }

    /// Signs the next chunk (an empty one ends the body) and returns its signature.
    public mutating func sign(_ chunk: some Collection<UInt8>) throws(HTTPClientError) -> String {
        let stringToSign = "AWS4-HMAC-SHA256-PAYLOAD\n\(timestamp)\n\(scope)\n\(previousSignature)\n"
            + Self.emptyHash + "\n" + hex(try sha256Digest(chunk))
        previousSignature = hex(try hmacSHA256(key: signingKey, Array(stringToSign.utf8)))
        return previousSignature
    }

    /// The next chunk as it goes on the wire: its size in hex, its signature, the data, CRLF.
    public mutating func encode(_ chunk: some Collection<UInt8>) throws(HTTPClientError) -> [UInt8] {
        let signature = try sign(chunk)
        var out = Array((String(chunk.count, radix: 16) + ";chunk-signature=" + signature + "\r\n").utf8)
        out.reserveCapacity(out.count + chunk.count + 2)
        out.append(contentsOf: chunk)
        out.append(contentsOf: [13, 10])
        return out
    }

    /// The length on the wire of a `payloadLength`-byte body cut into `chunkSize`-byte chunks (the last one
    /// shorter) plus the final empty chunk: what `Content-Length` says for a chunk-signed upload.
    public static func encodedLength(payloadLength: Int, chunkSize: Int) -> Int {
        func framed(_ size: Int) -> Int {
            String(size, radix: 16).utf8.count + ";chunk-signature=".utf8.count + 64 + 2 + size + 2
        }
        let full = payloadLength / chunkSize
        let rest = payloadLength % chunkSize
        return full * framed(chunkSize) + (rest > 0 ? framed(rest) : 0) + framed(0)
    }
}
