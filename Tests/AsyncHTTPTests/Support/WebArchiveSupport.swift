import Foundation
import XCTest

@testable import AsyncHTTPWebArchive

/// The web archive's test site (Tests/AsyncHTTPTests/Resources/webarchive-site), served by the second nginx that
/// `./scripts/test.sh` starts: `url` is the page's origin, `otherURL` a second origin (another port) serving the
/// same files, `directory` the files as served (placeholders replaced), to compare archived bytes with.
struct WebArchiveSite {
    let url: String
    let otherURL: String
    let directory: String

    static func fromEnvironment() throws -> WebArchiveSite {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["ASYNCHTTP_WEBARCHIVE_URL"], let other = environment["ASYNCHTTP_WEBARCHIVE_OTHER_URL"],
            let directory = environment["ASYNCHTTP_WEBARCHIVE_SITE"]
        else {
            throw PeerError("web archive site is not running (ASYNCHTTP_WEBARCHIVE_*): run ./scripts/test.sh")
        }
        return WebArchiveSite(url: url, otherURL: other, directory: directory)
    }

    /// The bytes of the file nginx serves at `path` (`/img/red.png`).
    func file(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + path)))
    }
}

/// A fresh temporary directory, removed by the returned closure.
func makeTemporaryDirectory(_ name: String) throws -> (path: String, remove: () -> Void) {
    let path = NSTemporaryDirectory() + "asynchttp-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return (path, { try? FileManager.default.removeItem(atPath: path) })
}

/// Every reference an archived HTML document makes (through the same libxml2 walk the archiver uses, so the
/// check sees what a browser would load), with its kind.
func references(inHTML bytes: [UInt8]) throws -> [(url: String, kind: WebArchiveResource.Kind)] {
    let document = try XCTUnwrap(HTMLDocument(bytes, encoding: nil), "archived HTML does not parse")
    var found: [(String, WebArchiveResource.Kind)] = []
    document.forEachReference { url, kind in
        found.append((url, kind))
        return nil
    }
    return found
}

/// The `url(…)`s and `@import`s of a stylesheet.
func references(inCSS bytes: [UInt8]) -> [(url: String, kind: WebArchiveResource.Kind)] {
    CSSURLScanner.references(in: bytes).map { ($0.url, $0.isImport ? .styleImport : .styleResource) }
}

/// A `data:` URI's media type and decoded bytes (base64 or percent-encoded), or nil if it is not one.
func decodeDataURI(_ uri: String) -> (mediaType: String, bytes: [UInt8])? {
    guard uri.hasPrefix("data:"), let comma = uri.firstIndex(of: ",") else { return nil }
    var header = String(uri[uri.index(uri.startIndex, offsetBy: 5)..<comma])
    var payload = String(uri[uri.index(after: comma)...])
    if let hash = payload.firstIndex(of: "#") { payload = String(payload[..<hash]) }
    if header.hasSuffix(";base64") {
        header.removeLast(7)
        guard let data = Data(base64Encoded: payload) else { return nil }
        return (header, [UInt8](data))
    }
    return (header, Array((payload.removingPercentEncoding ?? payload).utf8))
}

/// Pixels of two PNG files compared after decoding (by Python's zlib: PNG filters undone, any bit depth Chromium
/// writes, 8-bit RGB or RGBA): the number of pixels that differ, or an error if they cannot be compared (different
/// sizes, not a PNG). Decoding makes the comparison independent of how the encoder compressed the same pixels.
func differingPixels(_ first: String, _ second: String) throws -> Int {
    let script = #"""
        import sys, zlib, struct
        def pixels(path):
            data = open(path, 'rb').read()
            assert data[:8] == b'\x89PNG\r\n\x1a\n', path + ': not a PNG'
            pos, idat, width = 8, b'', None
            while pos < len(data):
                length, kind = struct.unpack('>I4s', data[pos:pos + 8])
                body = data[pos + 8:pos + 8 + length]
                if kind == b'IHDR':
                    width, height, depth, color, _, _, interlace = struct.unpack('>IIBBBBB', body)
                    assert depth == 8 and color in (2, 6) and interlace == 0, 'unsupported PNG: depth %d color %d' % (depth, color)
                    channels = 3 if color == 2 else 4
                elif kind == b'IDAT':
                    idat += body
                pos += 12 + length
            raw = zlib.decompress(idat)
            stride = width * channels
            rows, prev, i = [], bytearray(stride), 0
            for _ in range(height):
                f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
                for x in range(stride):
                    a = line[x - channels] if x >= channels else 0
                    b = prev[x]; c = prev[x - channels] if x >= channels else 0
                    if f == 1: line[x] = (line[x] + a) & 255
                    elif f == 2: line[x] = (line[x] + b) & 255
                    elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
                    elif f == 4:
                        p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                        line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
                rows.append(bytes(line)); prev = line
            return width, height, channels, rows
        w1, h1, c1, r1 = pixels(sys.argv[1]); w2, h2, c2, r2 = pixels(sys.argv[2])
        assert (w1, h1) == (w2, h2), 'sizes differ: %dx%d and %dx%d' % (w1, h1, w2, h2)
        diff = 0
        for a, b in zip(r1, r2):
            for x in range(w1):
                if a[x * c1:x * c1 + 3] != b[x * c2:x * c2 + 3]: diff += 1
        print(diff)
        """#
    let result = try runBounded("/usr/bin/env", ["python3", "-c", script, first, second], seconds: 120)
    guard result.status == 0, let count = Int(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
        throw PeerError("PNG comparison failed (status \(result.status)): \(result.output)")
    }
    return count
}

/// Runs a program with a deadline (coreutils `timeout` sends TERM, then KILL 10 s later): its status and its
/// stdout and stderr together.
func runBounded(_ program: String, _ arguments: [String], seconds: Int) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
    process.arguments = ["-k", "10", String(seconds), program] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Read to EOF before waiting: a child that fills the pipe would otherwise never exit.
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}
