@testable import AsyncHTTP
import NIOCore
import NIOPosix
import NIOSSL

/// An HTTPS server (SwiftNIO with NIOSSL, the test CA's certificate for 127.0.0.1) that answers the first
/// request on each connection with fixed bytes and then ends the connection in a chosen way: with TLS
/// close_notify, by closing (or resetting) the TCP connection underneath TLS, without close_notify — what
/// a truncation attack, a crashed server or a middlebox looks like (RFC 9112 §9.8) — or with a fatal TLS alert
/// record written underneath TLS.
///
/// The unclean endings are made by a handler that sits below `NIOSSLServerHandler` in the pipeline: a close or
/// a write started from its context travels only towards the socket and never reaches the TLS handler, so no
/// close_notify is written and the alert goes out as plaintext.
final class TLSCloseServer: Sendable {
    enum Ending: Sendable {
        /// close_notify, then the TCP close (NIOSSL's ordinary close).
        case closeNotify
        /// A TCP FIN without close_notify.
        case tcpCloseWithoutCloseNotify
        /// A TCP RST (`SO_LINGER` 0) without close_notify.
        case reset
        /// A fatal `internal_error` alert record (content type 21, TLS 1.2, level fatal) written straight onto
        /// the TCP stream, and the connection kept open. NIOSSL cannot be asked to send an alert of its own
        /// choosing (BoringSSL queues one only when it fails, and NIOSSL closes without flushing it), so the
        /// record is the plaintext one an on-path middlebox or a broken TLS terminator writes.
        case fatalAlertBelowTLS
    }

    static let alertRecord: [UInt8] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x50]

    let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    init(response: [UInt8], ending: Ending) async throws {
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
                    try pipeline.addHandler(BelowTLS())
                    try pipeline.addHandler(NIOSSLServerHandler(context: context))
                    try pipeline.addHandler(Responder(response: response, ending: ending))
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

/// Marks the place below TLS in the pipeline; see ``TLSCloseServer``.
private final class BelowTLS: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
}

/// Reads one request head (decrypted), writes the response, then ends the connection as told.
private final class Responder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let response: [UInt8]
    let ending: TLSCloseServer.Ending
    var received: [UInt8] = []
    var answered = false

    init(response: [UInt8], ending: TLSCloseServer.Ending) {
        self.response = response
        self.ending = ending
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received += buffer.readBytes(length: buffer.readableBytes) ?? []
        guard !answered, received.count >= 4,
              (0...(received.count - 4)).contains(where: { received[$0..<$0 + 4].elementsEqual("\r\n\r\n".utf8) })
        else { return }
        answered = true
        let ending = self.ending
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: response))).whenComplete { _ in
            let context = loopBound.value
            switch ending {
            case .closeNotify:
                context.close(promise: nil)
            case .tcpCloseWithoutCloseNotify, .reset, .fatalAlertBelowTLS:
                guard let below = try? context.pipeline.syncOperations.context(handlerType: BelowTLS.self) else {
                    context.close(promise: nil)
                    return
                }
                if ending == .fatalAlertBelowTLS {
                    below.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: TLSCloseServer.alertRecord)), promise: nil)
                    return
                }
                if ending == .reset {
                    _ = (context.channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
                }
                below.close(promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
