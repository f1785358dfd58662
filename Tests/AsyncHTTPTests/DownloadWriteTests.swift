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
}
