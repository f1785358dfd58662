// S3's XML bodies (errors, listings, multipart uploads) read with libxml2, the parser ASIHTTPRequest's
// ASIS3Request used, into a small tree of elements. The target's only libxml2 file.
//
// Safety: XML_PARSE_NONET (no network fetches), no XML_PARSE_NOENT and no DTD loading, so external entities
// are never resolved (no XXE); libxml2's default limits on depth and entity expansion stay on (no
// XML_PARSE_HUGE). Callers cap the body's size before parsing.

import AsyncHTTP
import CLibXML2

/// One element of a parsed XML document: its local name, the text directly inside it, and its child elements.
struct XMLNode: Sendable {
    var name: String
    var text: String
    var children: [XMLNode]

    /// The first child element called `name`.
    func child(_ name: String) -> XMLNode? { children.first { $0.name == name } }

    /// Every child element called `name`, in document order.
    func children(_ name: String) -> [XMLNode] { children.filter { $0.name == name } }

    /// The text of the first child element called `name`.
    func value(_ name: String) -> String? { child(name)?.text }

    /// Parses `bytes` as an XML document and returns its root element.
    ///
    /// - Throws: `HTTPClientError/Code/malformedResponse` naming what `what` was, for a body that is
    ///   not well-formed XML; `HTTPClientError/Code/invalidConfiguration` with the dynamic loader's reason
    ///   when libxml2 cannot be loaded.
    static func parse(_ bytes: [UInt8], what: String) throws(HTTPClientError) -> XMLNode {
        // libxml2 is loaded on first use, not at program start (`CLibXML2`'s shim).
        if let reason = asynchttp_libxml2_load() {
            throw HTTPClientError(.invalidConfiguration, "libxml2, which reads S3's XML, could not be loaded: \(String(cString: reason))")
        }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        let document = bytes.withUnsafeBufferPointer { buffer -> xmlDocPtr? in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                asynchttp_xmlReadMemory(chars.baseAddress, Int32(chars.count), "s3.xml", "UTF-8", options)
            }
        }
        guard let document else {
            throw HTTPClientError(.malformedResponse, "S3 sent \(what) that is not well-formed XML (\(bytes.count) bytes)")
        }
        defer { asynchttp_xmlFreeDoc(document) }
        guard let root = asynchttp_xmlDocGetRootElement(document) else {
            throw HTTPClientError(.malformedResponse, "S3 sent \(what) as an XML document without a root element")
        }
        return node(root)
    }

    /// The element `pointer` and everything under it. S3's documents are a few levels deep; libxml2 has already
    /// refused anything deeper than its default limit (256).
    private static func node(_ pointer: xmlNodePtr) -> XMLNode {
        var result = XMLNode(name: String(cString: pointer.pointee.name), text: "", children: [])
        var child = pointer.pointee.children
        while let current = child {
            switch current.pointee.type {
            case XML_ELEMENT_NODE:
                result.children.append(node(current))
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                if let content = current.pointee.content { result.text += String(cString: content) }
            default:
                break
            }
            child = current.pointee.next
        }
        return result
    }
}

/// An error answer from S3 (or an S3-compatible store): the status and S3's error `Code`, `Message` and
/// request ID, from its XML body (`<Error><Code>NoSuchKey</Code>…`).
///
/// ```swift
/// do { _ = try await s3.headObject(bucket: "photos", key: "missing.jpg") }
/// catch let error as S3Error where error.code == "NotFound" || error.code == "NoSuchKey" { … }
/// ```
///
/// Only these fields are kept: S3's `SignatureDoesNotMatch` body also echoes the string to sign and the
/// signature provided, which never reach an `S3Error` (nor its description).
public struct S3Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status (404, 403, 409, …).
    public var status: Int
    /// S3's error code (`NoSuchKey`, `NoSuchBucket`, `AccessDenied`, `SignatureDoesNotMatch`, …). For an answer
    /// without a body (a `HEAD`), a name for the status: `NotFound`, `Forbidden`, … or `HTTP <status>`.
    public var code: String
    /// S3's human-readable message (empty when the answer had none).
    public var message: String
    /// The request ID (`<RequestId>` or the `x-amz-request-id` header), for AWS support.
    public var requestID: String?
    /// The extended request ID (`<HostId>` or `x-amz-id-2`).
    public var hostID: String?
    /// The bucket or key the error is about, when S3 names it.
    public var resource: String?

    /// Builds an error from its parts.
    public init(status: Int, code: String, message: String, requestID: String? = nil, hostID: String? = nil,
                resource: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.requestID = requestID
        self.hostID = hostID
        self.resource = resource
    }

    /// `S3 error NoSuchKey (HTTP 404): The specified key does not exist. [photos/missing.jpg] (request ID …)`.
    public var description: String {
        var text = "S3 error \(code) (HTTP \(status))"
        if !message.isEmpty { text += ": " + message }
        if let resource { text += " [\(resource)]" }
        if let requestID { text += " (request ID \(requestID))" }
        return text
    }

    /// The error in an `<Error>` document, or nil when `root` is something else.
    static func from(_ root: XMLNode, status: Int, headers: HTTPFields) -> S3Error? {
        guard root.name == "Error" else { return nil }
        return S3Error(
            status: status, code: root.value("Code") ?? "HTTP \(status)", message: root.value("Message") ?? "",
            requestID: root.value("RequestId") ?? root.value("RequestID") ?? headers[HTTPField.Name("x-amz-request-id")!],
            hostID: root.value("HostId") ?? headers[HTTPField.Name("x-amz-id-2")!],
            resource: root.value("Key") ?? root.value("BucketName") ?? root.value("Resource"))
    }

    /// The error for a response without a usable XML body.
    static func fromStatus(_ status: Int, headers: HTTPFields) -> S3Error {
        let names = [301: "PermanentRedirect", 304: "NotModified", 400: "BadRequest", 403: "Forbidden", 404: "NotFound",
                     405: "MethodNotAllowed", 409: "Conflict", 412: "PreconditionFailed", 416: "InvalidRange",
                     500: "InternalError", 501: "NotImplemented", 503: "SlowDown"]
        return S3Error(
            status: status, code: names[status] ?? "HTTP \(status)", message: "",
            requestID: headers[HTTPField.Name("x-amz-request-id")!], hostID: headers[HTTPField.Name("x-amz-id-2")!])
    }
}
