// libFuzzer target: HTTPURL parsing and reference resolution (docs/fuzzing.md).
// Input: a base URL string, then 0x00, then a reference (more 0x00-separated references are resolved too).
// Checks, for every URL that parses or resolves:
// - its `description` ("the URL as normalised", without the fragment) parses again, to an equal URL
//   (fragment aside), and that description is a fixed point;
// - the path starts with "/", the port is in 1...65535 (0 is refused), the scheme is one HTTPURL supports (http,
//   https, and http+unix / https+unix, whose host is a socket path and whose Host header is "localhost");
// - `requestTarget` and `absoluteFormTarget` are consistent with the parts.
@testable import AsyncHTTPCore
import FuzzSupport

/// The schemes HTTPURL documents (its own set is `package`, out of reach from this package).
let supportedSchemes: Set<String> = ["http", "https", "http+unix", "https+unix"]

func checkRoundTrip(_ url: HTTPURL, _ origin: @autoclosure () -> String) {
    fuzzCheck(supportedSchemes.contains(url.scheme), "scheme \(url.scheme) from \(origin())")
    fuzzCheck(url.isUnixSocket == (url.unixSocketPath != nil), "unixSocketPath for \(url.scheme) from \(origin())")
    fuzzCheck(url.path.hasPrefix("/"), "path '\(url.path)' does not start with / (from \(origin()))")
    fuzzCheck((0...65535).contains(url.port), "port \(url.port) from \(origin())")
    fuzzCheck(url.requestTarget == url.path + (url.query.map { "?" + $0 } ?? ""), "requestTarget")
    // A socket path goes in the absolute form percent-encoded; its Host header is "localhost".
    let authority = url.isUnixSocket ? URIReference.percentEncodeSocketPath(url.host) : url.hostHeader
    fuzzCheck(url.absoluteFormTarget == url.scheme + "://" + authority + url.requestTarget, "absoluteFormTarget")
    let text = url.description
    var expected = url
    expected.fragment = nil
    let again: HTTPURL
    do {
        again = try HTTPURL(text)
    } catch {
        fuzzCheck(false, "description '\(text)' of a valid URL does not parse: \(error) (from \(origin()))")
        return
    }
    fuzzCheck(again == expected, "description round trip: '\(text)' parses to \(again.debugParts), expected \(expected.debugParts) (from \(origin()))")
    fuzzCheck(again.description == text, "description not a fixed point: '\(text)' → '\(again.description)' (from \(origin()))")
}

extension HTTPURL {
    var debugParts: String {
        "[scheme=\(scheme) user=\(String(describing: user)) password=\(String(describing: password)) host=\(host) port=\(port) path=\(path) query=\(String(describing: query)) fragment=\(String(describing: fragment))]"
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzURL(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let strings = fuzzStrings(bytes, maxParts: 4)
    let base: HTTPURL
    do {
        base = try HTTPURL(strings[0])
    } catch {
        // Still exercise the reference parser on the other parts.
        for reference in strings.dropFirst() { _ = try? HTTPURL(reference) }
        return 0
    }
    checkRoundTrip(base, "'\(strings[0])'")
    for reference in strings.dropFirst() {
        guard let resolved = try? base.resolving(reference) else { continue }
        checkRoundTrip(resolved, "'\(reference)' resolved against '\(strings[0])'")
        // Resolving the result's own description against the base gives the result back (fragment aside).
        // (Only when its path has no dot segments: an empty reference path keeps the base's path as is, §5.2.2.)
        if resolved.path == URIReference.removeDotSegments(resolved.path), let again = try? base.resolving(resolved.description) {
            var expected = resolved
            expected.fragment = nil
            fuzzCheck(again == expected, "resolving the description '\(resolved.description)' gives \(again.debugParts), expected \(expected.debugParts)")
        }
    }
    return 0
}

runLibFuzzer(fuzzURL)
