import AsyncHTTPTracing
import Foundation
import InMemoryTracing
import Tracing
import XCTest

@testable import AsyncHTTP
@testable import AsyncHTTPTracing

/// An `InMemoryTracer` with W3C-shaped ids that propagates `traceparent` and `tracestate`, as an OpenTelemetry
/// tracer does (the in-memory tracer's own `inject` writes keys of its own).
struct W3CTestTracer: Tracer {
    let base: InMemoryTracer

    init() {
        let counter = Locked<UInt64>(0)
        @Sendable func next() -> UInt64 { counter.withLock { $0 += 1; return $0 } }
        base = InMemoryTracer(idGenerator: .init(
            nextTraceID: { String(repeating: "0", count: 16) + Self.hex(next(), width: 16) },
            nextSpanID: { Self.hex(next(), width: 16) }))
    }

    static func hex(_ value: UInt64, width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        base.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
        injector.inject("asynchttp=test", forKey: "tracestate", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}

    var finished: [FinishedInMemorySpan] { base.finishedSpans }
}

extension FinishedInMemorySpan {
    func string(_ key: String) -> String? {
        if case .string(let value) = attributes[key]?.toSpanAttribute() { return value }
        return nil
    }
    func int(_ key: String) -> Int? {
        switch attributes[key]?.toSpanAttribute() {
        case .int64(let value): return Int(value)
        case .int32(let value): return Int(value)
        default: return nil
        }
    }
    func bool(_ key: String) -> Bool? {
        if case .bool(let value) = attributes[key]?.toSpanAttribute() { return value }
        return nil
    }
}

/// Tracing against httpbin and nginx: spans, attributes, propagation, hops and failures.
final class TracingTests: XCTestCase {
    var tracer: W3CTestTracer!
    var client: HTTPClient!

    override func setUp() async throws {
        tracer = W3CTestTracer()
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        configuration.authentication.allowsBasicOverPlainHTTP = true  // the peers listen on plain loopback http
        configuration.enableTracing(HTTPClientTracing(tracer: tracer))
        client = HTTPClient(configuration: configuration)
    }

    override func tearDown() async throws {
        await client?.shutdown()
    }

    private func clientSpans() -> [FinishedInMemorySpan] { tracer.finished.filter { $0.kind == .client } }

    func testGETSpanCarriesTheConventionsAttributesAndAConnectChild() async throws {
        let base = try Peers.httpbin()
        let url = try HTTPURL(base)
        let response = try await client.send(HTTPClientRequest(url: base + "/get?x=1&token=abc123&X-Amz-Signature=deadbeef"))
        _ = try await response.body.collect(upTo: 1 << 20)

        let spans = clientSpans()
        XCTAssertEqual(spans.count, 1)
        let span = try XCTUnwrap(spans.first)
        XCTAssertEqual(span.operationName, "GET")
        XCTAssertEqual(span.string("http.request.method"), "GET")
        XCTAssertEqual(span.string("url.full"), "http://\(url.hostHeader)/get?x=1&token=REDACTED&X-Amz-Signature=REDACTED")
        XCTAssertEqual(span.string("url.scheme"), "http")
        XCTAssertEqual(span.string("server.address"), url.host)
        XCTAssertEqual(span.int("server.port"), url.port)
        XCTAssertEqual(span.int("http.response.status_code"), 200)
        XCTAssertEqual(span.string("network.peer.address"), "127.0.0.1")
        XCTAssertEqual(span.int("network.peer.port"), url.port)
        XCTAssertEqual(span.string("network.protocol.version"), "1.1")
        XCTAssertNil(span.int("http.request.resend_count"), "a first send is not a resend")
        XCTAssertNil(span.string("error.type"))
        XCTAssertNil(span.status)
        XCTAssertNil(span.parentSpanID, "no current span: the request span is a root")

        let connects = tracer.finished.filter { $0.operationName == "connect" }
        XCTAssertEqual(connects.count, 1, "a new connection gets a child span")
        let connect = try XCTUnwrap(connects.first)
        XCTAssertEqual(connect.parentSpanID, span.spanID)
        XCTAssertEqual(connect.traceID, span.traceID)
        XCTAssertEqual(connect.string("network.peer.address"), "127.0.0.1")
        XCTAssertLessThanOrEqual(connect.startInstant.nanosecondsSinceEpoch, connect.endInstant.nanosecondsSinceEpoch)
        XCTAssertLessThanOrEqual(connect.endInstant.nanosecondsSinceEpoch, span.endInstant.nanosecondsSinceEpoch)

        // A second request reuses the connection: no connect span.
        let again = try await client.send(HTTPClientRequest(url: base + "/get"))
        _ = try await again.body.collect(upTo: 1 << 20)
        XCTAssertEqual(clientSpans().count, 2)
        XCTAssertEqual(tracer.finished.filter { $0.operationName == "connect" }.count, 1)
    }

    func testTraceparentFromTheCurrentContextArrivesAtTheServer() async throws {
        let base = try Peers.httpbin()
        let parent = tracer.startSpan("caller", context: .topLevel)
        let response = try await ServiceContext.withValue(parent.context) {
            try await client.send(HTTPClientRequest(url: base + "/headers"))
        }
        let echoed = try JSONSerialization.jsonObject(with: Data(try await response.body.collect(upTo: 1 << 20))) as? [String: Any]
        parent.end()
        let headers = try XCTUnwrap(echoed?["headers"] as? [String: String])

        let span = try XCTUnwrap(clientSpans().first)
        let parentContext = try XCTUnwrap(parent.context.inMemorySpanContext)
        XCTAssertEqual(span.traceID, parentContext.traceID)
        XCTAssertEqual(span.parentSpanID, parentContext.spanID)
        XCTAssertEqual(headers["Traceparent"], "00-\(span.traceID)-\(span.spanID)-01", "\(headers)")
        XCTAssertEqual(headers["Tracestate"], "asynchttp=test")
    }

    func testRedirectHopsAreSiblingSpansWithResendCounts() async throws {
        let base = try Peers.httpbin()
        let parent = tracer.startSpan("caller", context: .topLevel)
        let response = try await ServiceContext.withValue(parent.context) {
            try await client.send(HTTPClientRequest(url: base + "/redirect/2"))
        }
        _ = try await response.body.collect(upTo: 1 << 20)
        parent.end()
        XCTAssertEqual(response.status.code, 200)

        let spans = clientSpans().sorted { $0.startInstant.nanosecondsSinceEpoch < $1.startInstant.nanosecondsSinceEpoch }
        XCTAssertEqual(spans.map { $0.int("http.response.status_code") }, [302, 302, 200])
        XCTAssertEqual(spans.map { $0.int("http.request.resend_count") }, [nil, 1, 2])
        XCTAssertEqual(Set(spans.map(\.parentSpanID)), [parent.context.inMemorySpanContext?.spanID], "siblings under the caller")
        XCTAssertTrue(spans[0].string("url.full")?.hasSuffix("/redirect/2") ?? false)
        XCTAssertTrue(spans[2].string("url.full")?.hasSuffix("/get") ?? false)
        XCTAssertTrue(spans.allSatisfy { $0.status == nil }, "3xx is not an error")
    }

    func testConnectionRefusedIsAnErrorSpan() async throws {
        let port = try unusedPort()
        do {
            _ = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(port)/"))
            XCTFail("connected to a closed port")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .connectFailed)
        }
        let span = try XCTUnwrap(clientSpans().first)
        XCTAssertEqual(span.string("error.type"), "connectFailed")
        XCTAssertEqual(span.status?.code, .error)
        XCTAssertEqual(span.errors.count, 1)
        XCTAssertNil(span.int("http.response.status_code"))
    }

    func testServerErrorStatusMarksTheSpanAsAnError() async throws {
        let base = try Peers.httpbin()
        let notFound = try await client.send(HTTPClientRequest(url: base + "/status/404"))
        _ = try await notFound.body.collect(upTo: 1 << 20)
        let span = try XCTUnwrap(clientSpans().first)
        XCTAssertEqual(span.int("http.response.status_code"), 404)
        XCTAssertEqual(span.string("error.type"), "404")
        XCTAssertEqual(span.status?.code, .error)
    }

    /// A body that fails with an error that is not an HTTPClientError (a CancellationError from its source) gives
    /// the span `error.type` `_OTHER`, as a failed request does; it was left unset.
    func testABodyFailingWithAnotherErrorSetsErrorTypeOther() async throws {
        let middleware = TracingMiddleware(tracer: tracer)
        let response = try await middleware.intercept(HTTPClientRequest(url: "http://a.test/file")) { request in
            HTTPClientResponse(status: .ok, headers: [:],
                               body: HTTPClientResponse.Body(AsyncThrowingStream<ArraySlice<UInt8>, any Error> { continuation in
                                   continuation.yield([1, 2, 3])
                                   continuation.finish(throwing: CancellationError())
                               }), url: try HTTPURL(request.url))
        }
        do {
            _ = try await response.body.collect(upTo: 1 << 20)
            XCTFail("the body's failure was not passed on")
        } catch {}
        let span = try XCTUnwrap(clientSpans().first)
        XCTAssertEqual(span.int("http.response.status_code"), 200)
        XCTAssertEqual(span.string("error.type"), "_OTHER")
        XCTAssertEqual(span.status?.code, .error)
        XCTAssertEqual(span.errors.count, 1)
    }

    func testCredentialsNeverAppearInSpans() async throws {
        let base = try Peers.httpbin()
        let withUserinfo = base.replacingOccurrences(of: "://", with: "://alice:pw-s3cret@")
        var request = HTTPClientRequest(url: withUserinfo + "/headers?api_key=k-s3cret&Signature=sig-s3cret&page=2")
        request.headers[.cookie] = "session=c-s3cret"
        let response = try await client.send(request)
        _ = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(response.status.code, 200)

        let spans = clientSpans()
        XCTAssertEqual(spans.count, 1)
        XCTAssertFalse(tracer.finished.isEmpty)
        for span in tracer.finished {
            span.attributes.forEach { key, value in
                XCTAssertFalse("\(value)".contains("s3cret"), "\(span.operationName) \(key)=\(value)")
                XCTAssertFalse("\(value)".contains("alice"), "\(span.operationName) \(key)=\(value)")
            }
        }
        XCTAssertEqual(spans.first?.string("url.full"), "\(base)/headers?api_key=REDACTED&Signature=REDACTED&page=2")
    }

    func testAuthenticationRoundsAreSpansWithResendCounts() async throws {
        let base = try Peers.httpbin()
        var request = HTTPClientRequest(url: base + "/basic-auth/alice/letmein")
        request.credentials = HTTPCredentials(username: "alice", password: "letmein")
        let response = try await client.send(request)
        _ = try await response.body.collect(upTo: 1 << 20)
        XCTAssertEqual(response.status.code, 200)
        let spans = clientSpans().sorted { $0.startInstant.nanosecondsSinceEpoch < $1.startInstant.nanosecondsSinceEpoch }
        XCTAssertEqual(spans.map { $0.int("http.response.status_code") }, [401, 200], "a challenge, then the answer")
        XCTAssertEqual(spans.map { $0.int("http.request.resend_count") }, [nil, 1])
    }

    func testDroppedBodyEndsTheSpanAndHeadEndsAtOnce() async throws {
        let (httpPort, _, _) = try Peers.nginx()
        var head = HTTPClientRequest(url: "http://127.0.0.1:\(httpPort)/small.txt")
        head.method = .head
        _ = try await client.send(head)
        XCTAssertEqual(clientSpans().count, 1, "HEAD has no body to wait for")

        do {
            _ = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(httpPort)/small.txt"))
        }
        XCTAssertEqual(clientSpans().count, 2, "a dropped body ends its span")
    }

    func testTracedBodyStillDecompressesAndEndsTheSpanAtItsEnd() async throws {
        let response = try await client.send(HTTPClientRequest(url: try Peers.httpbin() + "/gzip"))
        XCTAssertTrue(clientSpans().isEmpty, "the span is open while the body is unread")
        let json = try JSONSerialization.jsonObject(with: Data(try await response.body.collect(upTo: 1 << 20))) as? [String: Any]
        XCTAssertEqual(json?["gzipped"] as? Bool, true)
        XCTAssertEqual(clientSpans().count, 1)
        XCTAssertEqual(clientSpans().first?.int("http.response.status_code"), 200)
    }

    func testNoOpTracerSendsNoTraceContext() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        configuration.enableTracing(HTTPClientTracing(tracer: NoOpTracer()))
        let plain = HTTPClient(configuration: configuration)
        defer { Task { await plain.shutdown() } }
        let response = try await plain.send(HTTPClientRequest(url: try Peers.httpbin() + "/headers"))
        let text = String(decoding: try await response.body.collect(upTo: 1 << 20), as: UTF8.self)
        XCTAssertFalse(text.lowercased().contains("traceparent"), text)
    }

    func testObserversThatAllDeclineLeaveTheRequestUnobserved() async throws {
        final class Declining: HTTPClientObserver, @unchecked Sendable {
            // @unchecked: `count` is behind `Locked`.
            let observing: Bool
            let count = Locked(0)
            init(observing: Bool) { self.observing = observing }
            var isObserving: Bool { observing }
            func observe(_ event: HTTPClientEvent) { count.withLock { $0 += 1 } }
        }
        XCTAssertFalse(TracingObserver(tracer: NoOpTracer()).isObserving)
        XCTAssertTrue(TracingObserver(tracer: tracer).isObserving)

        let (httpPort, _, _) = try Peers.nginx()
        let declining = Declining(observing: false)
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .none
        configuration.observers = [declining]
        let quiet = HTTPClient(configuration: configuration)
        _ = try await quiet.send(HTTPClientRequest(url: "http://127.0.0.1:\(httpPort)/small.txt")).body.collect(upTo: 1 << 20)
        await quiet.shutdown()
        XCTAssertEqual(declining.count.withLock { $0 }, 0, "no observer wants it: no events")

        let watching = Declining(observing: true)
        configuration.observers = [declining, watching]
        let observed = HTTPClient(configuration: configuration)
        _ = try await observed.send(HTTPClientRequest(url: "http://127.0.0.1:\(httpPort)/small.txt")).body.collect(upTo: 1 << 20)
        await observed.shutdown()
        XCTAssertGreaterThan(watching.count.withLock { $0 }, 0)
        XCTAssertEqual(declining.count.withLock { $0 }, watching.count.withLock { $0 }, "one observing: all see the events")
    }

    func testURLRedactionKeepsOrdinaryParametersAndRedactsSecretOnes() throws {
        let url = try HTTPURL("https://u:p@example.com:8443/a?q=1&Signature=abc&sig=x&X%2DAmz%2DSignature=y&flag&empty=#frag")
        XCTAssertEqual(url.loggableDescription,
                       "https://example.com:8443/a?q=1&Signature=REDACTED&sig=REDACTED&X%2DAmz%2DSignature=REDACTED&flag&empty=")
        XCTAssertEqual(try HTTPURL("http://example.com/").loggableDescription, "http://example.com/")
        XCTAssertEqual(HTTPMethodName(.init("PURGE")!).name, "_OTHER")
        XCTAssertEqual(HTTPMethodName(.init("PURGE")!).spanName, "HTTP")
        XCTAssertEqual(PeerAddress("[::1]:8080")?.address, "::1")
        XCTAssertEqual(PeerAddress("[::1]:8080")?.port, 8080)
        XCTAssertEqual(PeerAddress("unix:/tmp/s")?.address, "/tmp/s")
    }
}
