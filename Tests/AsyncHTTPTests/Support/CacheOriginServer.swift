@testable import AsyncHTTP
import NIOCore
import NIOHTTP1
import NIOPosix

/// A scriptable origin for the cache tests, on SwiftNIO (independent of AsyncHTTP's own code): each test
/// gives it a function from the request to the reply, and keeps its own state (an ETag that changes, a
/// counter) in that function. It counts the requests per path and can stall in the middle of a body, to
/// kill a client that is writing a cache entry.
///
/// ```swift
/// let origin = try await CacheOriginServer { request in
///     .init(status: 200, headers: [("Cache-Control", "max-age=60")], body: Array("hello".utf8))
/// }
/// defer { Task { try await origin.shutdown() } }
/// ```
final class CacheOriginServer: Sendable {
    struct Request: Sendable {
        var method: String
        /// The request target as received (path and query).
        var target: String
        /// Lowercased names; lines of one name joined with ", ".
        var headers: [String: String]
    }

    struct Reply: Sendable {
        var status: Int
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        /// Send this many body bytes, then wait ``stallMilliseconds`` before the rest.
        var stallAfter: Int?
        var stallMilliseconds = 0
    }

    let port: Int
    let baseURL: String
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let log: Locked<[Request]>

    init(handler: @escaping @Sendable (Request) -> Reply) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let log = Locked<[Request]>([])
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(OriginHandler(handler: handler, log: log))
                }
            }
        do {
            channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        self.group = group
        self.log = log
        port = channel.localAddress?.port ?? 0
        baseURL = "http://127.0.0.1:\(port)"
    }

    func url(_ path: String) -> String { baseURL + path }

    /// Every request received, oldest first.
    var requests: [Request] { log.withLock { $0 } }

    /// How many requests had this target.
    func count(_ target: String) -> Int { log.withLock { $0.filter { $0.target == target }.count } }

    func shutdown() async throws {
        try? await channel.close()
        try await group.shutdownGracefully()
    }
}

private final class OriginHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked Sendable: used only on its channel's event loop.
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let handler: @Sendable (CacheOriginServer.Request) -> CacheOriginServer.Reply
    private let log: Locked<[CacheOriginServer.Request]>
    private var head: HTTPRequestHead?

    init(handler: @escaping @Sendable (CacheOriginServer.Request) -> CacheOriginServer.Reply,
         log: Locked<[CacheOriginServer.Request]>) {
        self.handler = handler
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            var headers: [String: String] = [:]
            for (name, value) in head.headers {
                let key = name.lowercased()
                headers[key] = headers[key].map { $0 + ", " + value } ?? value
            }
            let request = CacheOriginServer.Request(method: head.method.rawValue, target: head.uri, headers: headers)
            log.withLock { $0.append(request) }
            let reply = handler(request)
            var responseHeaders = HTTPHeaders(reply.headers)
            if !responseHeaders.contains(name: "content-length"), !responseHeaders.contains(name: "transfer-encoding"),
               reply.status != 304, reply.status != 204 {
                responseHeaders.add(name: "Content-Length", value: String(reply.body.count))
            }
            let status = HTTPResponseStatus(statusCode: reply.status)
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: responseHeaders))),
                          promise: nil)
            let isHead = head.method == .HEAD
            let body = isHead ? [] : reply.body
            if let stallAfter = reply.stallAfter, stallAfter < body.count {
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body[..<stallAfter])))), promise: nil)
                let rest = Array(body[stallAfter...])
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: .milliseconds(Int64(reply.stallMilliseconds))) {
                    let context = loopBound.value
                    context.write(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: rest)))), promise: nil)
                    context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
                }
            } else {
                if !body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
            self.head = nil
        }
    }
}
