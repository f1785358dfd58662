@testable import AsyncHTTP
import NIOCore
import NIOPosix
import NIOSSL

/// An HTTPS server (SwiftNIO with NIOSSL, the test CA's certificate for 127.0.0.1) that answers the first
/// request with a head promising 100 bytes and 40 of them, then writes a fatal TLS alert record
/// (`internal_error`) straight onto the TCP stream, below TLS, and keeps the connection open.
///
/// NIOSSL cannot be asked to send an alert of its own choosing (BoringSSL queues one only when it fails, and
/// NIOSSL closes without flushing it), so the record is the plaintext one an on-path middlebox or a broken
/// TLS terminator writes: content type 21, TLS 1.2 version, level fatal. After the handshake the client must
/// take it as a fatal TLS error mid-body — a typed failure at once, not a wait for the inactivity timeout.
final class TLSAlertServer: Sendable {
    static let alertRecord: [UInt8] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x50]

    let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    init() async throws {
        let config = TestTLS.ServerConfig.trusted
        let chain = try NIOSSLCertificate.fromPEMFile(config.certificateFile).map { NIOSSLCertificateSource.certificate($0) }
        let key = try NIOSSLPrivateKey(file: config.keyFile, format: .pem)
        let context = try NIOSSLContext(configuration: NIOSSL.TLSConfiguration.makeServerConfiguration(
            certificateChain: chain, privateKey: .privateKey(key)))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(AlertBelowTLS())
                    try pipeline.addHandler(NIOSSLServerHandler(context: context))
                    try pipeline.addHandler(AlertResponder())
                }
            }
        do {
            channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        self.group = group
        self.port = channel.localAddress?.port ?? 0
    }

    var url: String { "https://127.0.0.1:\(port)/" }

    func shutdown() async throws {
        try? await channel.close()
        try await group.shutdownGracefully()
    }
}

/// Marks the place below TLS in the pipeline: a write from its context goes to the socket unencrypted.
private final class AlertBelowTLS: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
}

/// Reads one request head (decrypted), writes part of a response through TLS, then the alert below it.
private final class AlertResponder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let partial = Array(("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + String(repeating: "x", count: 40)).utf8)
    var received: [UInt8] = []
    var answered = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received += buffer.readBytes(length: buffer.readableBytes) ?? []
        guard !answered, received.count >= 4,
              (0...(received.count - 4)).contains(where: { received[$0..<$0 + 4].elementsEqual("\r\n\r\n".utf8) })
        else { return }
        answered = true
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: Self.partial))).whenComplete { _ in
            let context = loopBound.value
            guard let below = try? context.pipeline.syncOperations.context(handlerType: AlertBelowTLS.self) else {
                context.close(promise: nil)
                return
            }
            below.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: TLSAlertServer.alertRecord)), promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
