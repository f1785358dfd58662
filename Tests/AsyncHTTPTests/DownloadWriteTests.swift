import Foundation
import XCTest
@testable import AsyncHTTP

/// A whole body written to disk (``HTTPClientResponse/Body/write(toFileAtPath:replacingExisting:)``, and the
/// downloads built on it) leaves nothing behind when its final rename is refused.
final class DownloadWriteTests: XCTestCase {
    /// A file appears at the destination while the body streams, so the rename that must not replace it fails
    /// (`RENAME_NOREPLACE`, `EEXIST`). The temporary file was closed before the rename, and the failure path asked
    /// the closed descriptor whether the temporary file was still its own: never, so `.file.bin.<pid>.<random>.download`
    /// stayed in the directory. Now it is removed, and the file that arrived is untouched.
    func testARefusedRenameRemovesTheTemporaryFile() async throws {
        let directory = makeCacheDirectory()
        let path = directory + "/file.bin"
        let step = Locked(0)
        let chunks = AsyncThrowingStream<ArraySlice<UInt8>, Error>(unfolding: {
            let n = step.withLock { count -> Int in
                count += 1
                return count
            }
            switch n {
            case 1:
                return Array("ours, ".utf8)[...]
            case 2:
                // Another writer takes the name while our body is still arriving.
                XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("theirs".utf8)))
                return Array("still ours".utf8)[...]
            default:
                return nil
            }
        })
        let body = HTTPClientResponse.Body(chunks)
        do {
            let written = try await body.write(toFileAtPath: path, replacingExisting: false)
            XCTFail("a file that arrived meanwhile was replaced: \(written) bytes")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .ioFailure, "\(error)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), ["file.bin"], "a temporary file was left behind")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), Data("theirs".utf8))
        XCTAssertEqual(step.withLock { $0 }, 3, "the body was read to its end before the rename")
    }

    /// A download to a symbolic link writes through it, as curl writes its output file in place: the link's target
    /// gets the bytes (and keeps its 0600 mode), the link stays a link, and the temporary file was beside the target
    /// (nothing left in either directory). The rename replaced the link with a regular file, and the target kept its
    /// old bytes. For the whole-body download, the resumable one and a body written in hand.
    func testADownloadToASymbolicLinkWritesItsTarget() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        let root = makeCacheDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let links = root + "/links", targets = root + "/targets"
        for directory in [links, targets] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        for (index, options) in [DownloadOptions(), DownloadOptions(resume: true)].enumerated() {
            let target = targets + "/real-\(index).bin", link = links + "/link-\(index).bin"
            XCTAssertTrue(FileManager.default.createFile(atPath: target, contents: Data("old".utf8), attributes: [.posixPermissions: 0o600]))
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "../targets/real-\(index).bin")
            let result = try await client.download(HTTPClientRequest(url: server.url("/bytes?n=\(100 + index)")), to: link, options: options)
            XCTAssertTrue(result.written)
            XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: link), "../targets/real-\(index).bin", "\(options)")
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: target)).count, 100 + index, "\(options)")
            XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int, 0o600, "\(options)")
        }
        let response = try await client.send(HTTPClientRequest(url: server.url("/bytes?n=7")))
        let target = targets + "/real-2.bin", link = links + "/link-2.bin"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)  // dangling: created
        let written = try await response.body.write(toFileAtPath: link)
        XCTAssertEqual(written, 7)
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: link), target)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: target)).count, 7)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: links).sorted(), ["link-0.bin", "link-1.bin", "link-2.bin"])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: targets).sorted(), ["real-0.bin", "real-1.bin", "real-2.bin"])
        await client.shutdown()
        try await server.shutdown()
    }
}
