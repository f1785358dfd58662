#if canImport(FoundationEssentials)
import FoundationEssentials
#elseif canImport(Foundation)
import Foundation
#endif
import AsyncHTTP

/// How the signing middleware treats a request's body (`x-amz-content-sha256`).
public enum AWSPayloadSigning: Sendable, Hashable {
    /// The body's SHA-256: bytes are hashed in memory, a file is read once to hash it (and again when sent); a
    /// one-shot stream of known length is chunk-signed for S3 (``streaming(chunkSize:)`` with 64 KiB chunks)
    /// and refused for other services, which need the hash before the first byte.
    case automatic
    /// `UNSIGNED-PAYLOAD`: the body is not hashed (S3 only; use it over HTTPS).
    case unsigned
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: the body re-framed as signed `aws-chunked` chunks of `chunkSize`
    /// bytes (S3 asks for at least 8 KiB). The body's length must be known.
    case streaming(chunkSize: Int)
    /// A hash (or marker) you computed yourself.
    case precomputed(AWSPayload)
}

/// The request option behind ``AsyncHTTP/HTTPClientRequest/awsPayloadSigning``.
public enum AWSPayloadSigningOption: HTTPRequestOption {
    /// ``AWSPayloadSigning/automatic``.
    public static let defaultValue = AWSPayloadSigning.automatic
}

extension HTTPClientRequest {
    /// How ``AWSSigningMiddleware`` signs this request's body (default ``AWSPayloadSigning/automatic``).
    ///
    /// ```swift
    /// request.awsPayloadSigning = .unsigned
    /// ```
    public var awsPayloadSigning: AWSPayloadSigning {
        get { self[AWSPayloadSigningOption.self] }
        set { self[AWSPayloadSigningOption.self] = newValue }
    }
}

/// Signs every request that passes through it with AWS Signature Version 4, for any service and region.
///
/// ```swift
/// let credentials = AWSCredentials(accessKeyID: "AKIA…", secretAccessKey: secret)
/// var configuration = HTTPClient.Configuration()
/// configuration.middleware = [AWSSigningMiddleware(
///     signer: AWSSigV4Signer(credentials: credentials, region: "eu-west-1", service: "execute-api"))]
/// let client = HTTPClient(configuration: configuration)
/// ```
///
/// As user middleware it runs innermost, once per redirect hop and authentication round, so every request
/// that goes out is signed afresh with the headers the built-in steps added (`Accept-Encoding`, `Cookie`).
/// The body's hash comes from ``AsyncHTTP/HTTPClientRequest/awsPayloadSigning``.
///
/// A redirect hop to another origin than the request's first
/// (`HTTPClientRequest.isRedirectedFromAnotherOrigin`) goes out unsigned: the credentials are for
/// the server the caller named, and a server that could redirect a signed request elsewhere would otherwise have
/// it signed there too (curl sends `--aws-sigv4` only to the first host unless `--location-trusted`).
public struct AWSSigningMiddleware: HTTPClientMiddleware {
    /// The signer (credentials, region, service).
    public var signer: AWSSigV4Signer
    private let now: @Sendable () -> Date

    /// Default chunk size of a chunk-signed upload: 64 KiB, the size of AWS's own example.
    public static let defaultChunkSize = 64 * 1024

    /// A middleware signing with `signer` at the time `now` returns (the system clock unless a test injects one).
    public init(signer: AWSSigV4Signer, now: @escaping @Sendable () -> Date = { Date() }) {
        self.signer = signer
        self.now = now
    }

    /// Signs `request` and passes it on; a redirect hop to another origin passes unsigned.
    public func intercept(_ request: HTTPClientRequest, next: Next) async throws -> HTTPClientResponse {
        guard !request.isRedirectedFromAnotherOrigin else { return try await next(request) }
        return try await next(try await sign(request))
    }

    /// `request` as it would leave this middleware: hashed (or re-framed as signed chunks) and signed.
    ///
    /// - Throws: `HTTPClientError/Code/invalidRequest` for a body that cannot be signed as asked (a
    ///   one-shot stream without a length, or for a service other than S3); the body's own read errors.
    public func sign(_ request: HTTPClientRequest) async throws -> HTTPClientRequest {
        var request = request
        let payload: AWSPayload
        var chunkSize: Int?
        switch request.awsPayloadSigning {
        case .unsigned: payload = .unsigned
        case .precomputed(let given): payload = given
        case .streaming(let size): payload = .streaming; chunkSize = size
        case .automatic:
            if let body = request.body {
                if let bytes = body.bytesInMemory {
                    payload = try .bytes(bytes)
                } else if body.isReplayable {
                    payload = try await Self.hash(body)
                } else if signer.pathEncoding == .s3 {
                    payload = .streaming
                    chunkSize = Self.defaultChunkSize
                } else {
                    throw HTTPClientError(
                        .invalidRequest,
                        "a one-shot stream body cannot be signed for '\(signer.service)': AWS needs its SHA-256 "
                            + "before it is sent (give bytes or a file, or a precomputed hash)")
                }
            } else {
                payload = .empty
            }
        }
        if let chunkSize {
            try prepareStreaming(&request, chunkSize: chunkSize)
        }
        let signed = try signer.sign(
            method: request.method.rawValue, url: request.url, headers: request.headers, payload: payload, date: now())
        request.headers = signed.headers
        if let chunkSize, let body = request.body {
            let chunks = signer.chunkSigner(continuing: signed)
            let declared = body.length ?? 0
            let encoded = AWSChunkSigner.encodedLength(payloadLength: declared, chunkSize: chunkSize)
            request.body = body.mappingChunks(length: encoded) { source in
                Self.chunkSigned(source, signer: chunks, chunkSize: chunkSize, declaredLength: declared)
            }
        }
        return request
    }

    /// Sets the headers of a chunk-signed upload (all signed): `Content-Encoding: aws-chunked`,
    /// `X-Amz-Decoded-Content-Length`, and `Content-Length` as it will be on the wire (the transport writes the
    /// same value from the body's length).
    private func prepareStreaming(_ request: inout HTTPClientRequest, chunkSize: Int) throws(HTTPClientError) {
        guard chunkSize >= 1 else {
            throw HTTPClientError(.invalidRequest, "the chunk size of a chunk-signed upload must be positive, not \(chunkSize)")
        }
        guard let length = request.body?.length ?? (request.body == nil ? 0 : nil) else {
            throw HTTPClientError(
                .invalidRequest,
                "a chunk-signed upload needs the body's length (X-Amz-Decoded-Content-Length): "
                    + "give the stream a length, or sign it as UNSIGNED-PAYLOAD")
        }
        if request.body == nil { request.body = .bytes([]) }
        let encodingName = HTTPField.Name("Content-Encoding")!
        let existing = request.headers[encodingName]
        request.headers[encodingName] = existing.map { "aws-chunked," + $0 } ?? "aws-chunked"
        request.headers[HTTPField.Name("X-Amz-Decoded-Content-Length")!] = String(length)
        request.headers[.contentLength] = String(AWSChunkSigner.encodedLength(payloadLength: length, chunkSize: chunkSize))
    }

    /// The SHA-256 of a replayable body (a file is read through once).
    static func hash(_ body: HTTPClientRequest.Body) async throws -> AWSPayload {
        let reader = try body.makeChunkReader()
        let hasher = try DigestHasher()
        while let chunk = try await reader.next() {
            try hasher.update(chunk)
        }
        return .sha256(hex(try hasher.finish()))
    }

    /// `source` cut into `chunkSize` pieces, each framed and signed, then the final empty chunk. A source that
    /// ends short of, or runs past, its declared length fails instead of sending a body its headers misstate.
    static func chunkSigned(
        _ source: RequestBodyChunks, signer: AWSChunkSigner, chunkSize: Int, declaredLength: Int
    ) -> RequestBodyChunks {
        var signer = signer
        var buffer: [UInt8] = []
        var total = 0
        var sourceEnded = false
        var finished = false
        return RequestBodyChunks {
            if finished { return nil }
            while !sourceEnded, buffer.count < chunkSize {
                if let chunk = try await source.next() {
                    buffer.append(contentsOf: chunk)
                    total += chunk.count
                    guard total <= declaredLength else {
                        throw HTTPClientError(
                            .invalidRequest, "the upload body ran past its declared length of \(declaredLength) bytes")
                    }
                } else {
                    sourceEnded = true
                }
            }
            if buffer.count >= chunkSize {
                let piece = try signer.encode(buffer[..<chunkSize])
                buffer.removeFirst(chunkSize)
                return piece[...]
            }
            guard total == declaredLength else {
                throw HTTPClientError(
                    .invalidRequest, "the upload body ended after \(total) of its declared \(declaredLength) bytes")
            }
            finished = true
            var out: [UInt8] = []
            if !buffer.isEmpty { out = try signer.encode(buffer) }
            out += try signer.encode([UInt8]())
            return out[...]
        }
    }
}
