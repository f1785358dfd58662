import HTTPTypes
import XCTest
@testable import AsyncHTTP

/// The resume decisions as pure functions: which validator may go in `If-Range`, `Content-Range` parsing, and
/// what a response means for the partial file.
final class DownloadResumeTests: XCTestCase {
    func fields(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    func testAStrongETagIsTheValidatorAndAWeakOneIsNot() {
        XCTAssertEqual(DownloadResume.validator(from: fields([("ETag", "\"abc\"")])),
                       .init(kind: .etag, value: "\"abc\""))
        XCTAssertNil(DownloadResume.validator(from: fields([("ETag", "W/\"abc\"")])))
        XCTAssertNil(DownloadResume.validator(from: fields([("ETag", "abc")])))
    }

    func testLastModifiedOnlyWhenDateIsAtLeastOneSecondLater() {
        let modified = "Tue, 24 Nov 2026 10:00:00 GMT"
        XCTAssertEqual(DownloadResume.validator(from: fields([("Last-Modified", modified), ("Date", "Tue, 24 Nov 2026 10:00:01 GMT")])),
                       .init(kind: .lastModified, value: modified))
        XCTAssertNil(DownloadResume.validator(from: fields([("Last-Modified", modified), ("Date", modified)])),
                     "modified in the second it was sent: weak (RFC 9110 §8.8.2.2)")
        XCTAssertNil(DownloadResume.validator(from: fields([("Last-Modified", modified)])), "no Date: cannot tell")
        XCTAssertEqual(DownloadResume.validator(from: fields([
            ("ETag", "W/\"w\""), ("Last-Modified", modified), ("Date", "Wed, 25 Nov 2026 10:00:00 GMT"),
        ]))?.kind, .lastModified)
    }

    func testContentRangeParsing() {
        XCTAssertEqual(DownloadResume.parseContentRange("bytes 100-199/200"), .range(first: 100, last: 199, completeLength: 200))
        XCTAssertEqual(DownloadResume.parseContentRange("bytes 0-9/*"), .range(first: 0, last: 9, completeLength: nil))
        XCTAssertEqual(DownloadResume.parseContentRange("bytes */500"), .unsatisfied(completeLength: 500))
        for bad in ["bytes 10-5/20", "bytes 0-20/20", "items 0-1/2", "bytes */*", "bytes 1-2", "bytes a-b/3"] {
            XCTAssertNil(DownloadResume.parseContentRange(bad), bad)
        }
    }

    /// A range ending at `Int.max` with an unknown complete length: the byte after its end is not representable,
    /// and the download trapped computing it. Refused as malformed; the largest representable end still parses.
    func testAContentRangeEndingAtIntMaxIsMalformed() {
        XCTAssertNil(DownloadResume.parseContentRange("bytes 5-9223372036854775807/*"))
        XCTAssertNil(DownloadResume.parseContentRange("bytes 9223372036854775807-9223372036854775807/*"))
        XCTAssertNil(DownloadResume.parseContentRange("bytes 5-9223372036854775808/*"), "past Int.max")
        XCTAssertEqual(DownloadResume.parseContentRange("bytes 5-9223372036854775806/*"),
                       .range(first: 5, last: Int.max - 1, completeLength: nil))
        XCTAssertEqual(DownloadResume.parseContentRange("bytes 5-9223372036854775806/9223372036854775807"),
                       .range(first: 5, last: Int.max - 1, completeLength: Int.max))
        if case .startOver = DownloadResume.decide(status: 206, headers: fields([("Content-Range", "bytes 5-9223372036854775807/*")]),
                                                   offset: 5) {
        } else { XCTFail("a 206 ending at Int.max was appended") }
    }

    func testDecisions() {
        func decide(_ status: Int, _ pairs: [(String, String)] = [], offset: Int) -> DownloadResume.Decision {
            DownloadResume.decide(status: status, headers: fields(pairs), offset: offset)
        }
        XCTAssertEqual(decide(206, [("Content-Range", "bytes 400-999/1000")], offset: 400), .append)
        if case .startOver = decide(206, [("Content-Range", "bytes 0-999/1000")], offset: 400) {} else { XCTFail("206 elsewhere") }
        if case .startOver = decide(206, [], offset: 400) {} else { XCTFail("206 without Content-Range") }
        XCTAssertEqual(decide(200, offset: 400), .restart, "changed resource: the whole of it, no splice")
        XCTAssertEqual(decide(416, [("Content-Range", "bytes */400")], offset: 400), .complete)
        if case .startOver = decide(416, [("Content-Range", "bytes */300")], offset: 400) {} else { XCTFail("416 other length") }
        XCTAssertEqual(decide(404, offset: 400), .notSuccess)
        XCTAssertEqual(decide(200, offset: 0), .restart)
        XCTAssertEqual(decide(500, offset: 0), .notSuccess)
        if case .startOver = decide(206, [("Content-Range", "bytes 0-9/10")], offset: 0) {} else { XCTFail("206 unasked") }

        // A server that honours Range but not If-Range: a 206 naming another version is not appended.
        let v1 = DownloadResume.Validator(kind: .etag, value: "\"v1\"")
        let range = ("Content-Range", "bytes 400-999/1000")
        XCTAssertEqual(DownloadResume.decide(status: 206, headers: fields([range, ("ETag", "\"v1\"")]), offset: 400, stored: v1), .append)
        XCTAssertEqual(DownloadResume.decide(status: 206, headers: fields([range]), offset: 400, stored: v1), .append,
                       "a 206 without the field says nothing against the validator")
        if case .startOver = DownloadResume.decide(status: 206, headers: fields([range, ("ETag", "\"v2\"")]), offset: 400, stored: v1) {
        } else { XCTFail("a 206 of another ETag was appended") }
        let modified = DownloadResume.Validator(kind: .lastModified, value: "Sun, 29 Nov 2026 10:00:00 GMT")
        if case .startOver = DownloadResume.decide(status: 206, headers: fields([range, ("Last-Modified", "Sun, 29 Nov 2026 11:00:00 GMT")]),
                                                   offset: 400, stored: modified) {
        } else { XCTFail("a 206 of another Last-Modified was appended") }
    }

    /// What an interrupted download leaves: `bytes` in the partial file at `partialPath`, and its validator `etag`.
    private func leavePartial(_ partialPath: String, _ bytes: String, etag: String = "\"v1\"") throws {
        XCTAssertTrue(FileManager.default.createFile(atPath: partialPath, contents: Data(bytes.utf8)))
        try Data(DownloadResume.sidecarText(.init(kind: .etag, value: etag)).utf8)
            .write(to: URL(fileURLWithPath: LocalFiles.sibling(of: partialPath, suffix: ".validator")))
    }

    /// An origin serving `body` with `etag`: a 200 of all of it, or for `Range: bytes=5-` a 206 of the rest, whose
    /// `Content-Range` is `contentRange` and whose body is `rangeBody` (the rest of `body` unless given).
    private func rangeOrigin(_ body: String, etag: String = "\"v1\"", contentRange: String, rangeBody: String? = nil)
        async throws -> CacheOriginServer {
        try await CacheOriginServer { request in
            guard request.headers["range"] == "bytes=5-" else {
                return .init(status: 200, headers: [("ETag", etag)], body: Array(body.utf8))
            }
            return .init(status: 206, headers: [("ETag", etag), ("Content-Range", contentRange)],
                         body: Array((rangeBody ?? String(body.dropFirst(5))).utf8))
        }
    }

    /// A 206 of unknown complete length (`bytes first-last/*`) that ends before `last` is kept for resuming, not
    /// moved into place: only a known complete length was checked.
    func testA206OfUnknownLengthThatEndsShortIsNotMovedIntoPlace() async throws {
        let origin = try await rangeOrigin("01234567890123456789", contentRange: "bytes 5-19/*", rangeBody: "56789")
        let client = HTTPClient()
        let destination = makeCacheDirectory() + "/file.bin"
        try leavePartial(destination + ".part", "01234")
        do {
            let result = try await client.download(HTTPClientRequest(url: origin.url("/file")), to: destination, options: DownloadOptions(resume: true))
            XCTFail("a short 206 was taken as the whole file: \(result.fileSize) bytes")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .connectionClosed, "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination), "moved into place")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: destination + ".part")), Data("0123456789".utf8), "kept for resuming")
        await client.shutdown()
        try await origin.shutdown()
    }

    /// A resumed download answered `206` with `Content-Range: bytes 5-9223372036854775807/*` trapped on the check of
    /// its length (`last + 1`). The range is malformed now: the partial file starts over, and the server's `200` to
    /// the request without a range is the whole file. A server that answers that one with a `206` too is a typed
    /// error.
    func testA206EndingAtIntMaxStartsOverInsteadOfTrapping() async throws {
        let origin = try await rangeOrigin("0123456789", contentRange: "bytes 5-9223372036854775807/*")
        let client = HTTPClient()
        let destination = makeCacheDirectory() + "/file.bin"
        try leavePartial(destination + ".part", "01234")
        let result = try await client.download(HTTPClientRequest(url: origin.url("/file")), to: destination, options: DownloadOptions(resume: true))
        XCTAssertEqual(result.resumedFrom, 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: destination)), Data("0123456789".utf8))
        try await origin.shutdown()

        let always206 = try await CacheOriginServer { _ in
            .init(status: 206, headers: [("ETag", "\"v1\""), ("Content-Range", "bytes 5-9223372036854775807/*")], body: Array("56789".utf8))
        }
        let other = makeCacheDirectory() + "/file.bin"
        try leavePartial(other + ".part", "01234")
        do {
            let taken = try await client.download(HTTPClientRequest(url: always206.url("/file")), to: other, options: DownloadOptions(resume: true))
            XCTFail("a 206 ending at Int.max was taken: \(taken.fileSize) bytes")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .malformedResponse, "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: other), "moved into place")
        await client.shutdown()
        try await always206.shutdown()
    }

    /// A finished download has the mode any new file of the user's gets (0666 less the umask), as curl's output
    /// files do, whole or resumed: its temporary file's 0600 used to survive the rename, so a file downloaded into
    /// a web root could not be served, and one replaced lost its old mode.
    func testAFinishedDownloadHasTheModeOfANewFile() async throws {
        let origin = try await CacheOriginServer { _ in .init(status: 200, headers: [("ETag", "\"v1\"")], body: Array("0123456789".utf8)) }
        let client = HTTPClient()
        let directory = makeCacheDirectory()
        let probe = directory + "/probe"
        XCTAssertTrue(FileManager.default.createFile(atPath: probe, contents: Data()))  // 0666 less the umask
        let expected = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: probe)[.posixPermissions] as? Int)
        for resume in [false, true] {
            let destination = directory + "/file-\(resume).bin"
            _ = try await client.download(HTTPClientRequest(url: origin.url("/file")), to: destination, options: DownloadOptions(resume: resume))
            let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: destination)[.posixPermissions] as? Int)
            XCTAssertEqual(String(mode, radix: 8), String(expected, radix: 8), "resume: \(resume)")
            // A file that exists keeps its mode, as curl writes over it in place: a 0600 key stays private.
            XCTAssertEqual(chmod(destination, 0o600), 0)
            _ = try await client.download(HTTPClientRequest(url: origin.url("/file")), to: destination, options: DownloadOptions(resume: resume))
            let kept = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: destination)[.posixPermissions] as? Int)
            XCTAssertEqual(String(kept, radix: 8), "600", "resume: \(resume): the existing file's mode was not kept")
            // Its permission bits only: a set-user-ID bit is not given to the new bytes.
            XCTAssertEqual(chmod(destination, 0o4755), 0)
            _ = try await client.download(HTTPClientRequest(url: origin.url("/file")), to: destination, options: DownloadOptions(resume: resume))
            let plain = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: destination)[.posixPermissions] as? Int)
            XCTAssertEqual(String(plain, radix: 8), "755", "resume: \(resume): a special bit was carried over")
        }
        await client.shutdown()
        try await origin.shutdown()
    }

    /// Two downloads given one `temporaryPath` at once: the second removes the first's file and writes its own there.
    /// The first, finishing while the second still writes, renamed the second's half-written file over its own
    /// destination and reported success; now it fails, and the second completes whole.
    func testTwoDownloadsSharingATemporaryPathDoNotTakeEachOthersFile() async throws {
        let origin = try await CacheOriginServer { request in
            let first = request.target == "/a"
            return .init(status: 200, body: Array(repeating: first ? 0x41 : 0x42, count: 1000),
                         stallAfter: 1, stallMilliseconds: first ? 1000 : 3000)
        }
        let client = HTTPClient()
        let directory = makeCacheDirectory()
        let options = DownloadOptions(temporaryPath: directory + "/shared.tmp")
        let a = Task { try await client.download(HTTPClientRequest(url: origin.url("/a")), to: directory + "/a.bin", options: options) }
        try await waitUntil("the first download writes its temporary file") {
            FileManager.default.fileExists(atPath: directory + "/shared.tmp")
        }
        let b = Task { try await client.download(HTTPClientRequest(url: origin.url("/b")), to: directory + "/b.bin", options: options) }
        do {
            let taken = try await a.value
            XCTFail("the first download renamed the second's file: \(taken.fileSize) bytes")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .ioFailure, "\(error)")
        }
        let second = try await b.value
        XCTAssertEqual(second.fileSize, 1000)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: directory + "/b.bin")), Data(repeating: 0x42, count: 1000))
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/a.bin"), "the first download's destination holds the other's bytes")
        await client.shutdown()
        try await origin.shutdown()
    }

    /// A long but legal file name (here 250 bytes) downloads, and resumes: its temporary, partial and validator
    /// files' names went past the 255-byte limit and the download failed with `ioFailure`.
    func testALongFileNameDownloadsAndResumes() async throws {
        let origin = try await rangeOrigin("0123456789", contentRange: "bytes 5-9/10")
        let client = HTTPClient()
        let directory = makeCacheDirectory()
        let name = String(repeating: "\u{6587}", count: 83) + "x"  // 83 × 3 bytes + 1 = 250 bytes
        XCTAssertEqual(name.utf8.count, 250)
        let whole = try await client.download(HTTPClientRequest(url: origin.url("/file")), to: directory + "/" + name)
        XCTAssertEqual(whole.fileSize, 10)

        let resumed = directory + "/r" + name.dropFirst()
        let partial = LocalFiles.sibling(of: resumed, suffix: ".part")
        XCTAssertLessThanOrEqual(partial.split(separator: "/").last!.utf8.count, 255)
        try leavePartial(partial, "01234")
        let result = try await client.download(HTTPClientRequest(url: origin.url("/file")), to: resumed, options: DownloadOptions(resume: true))
        XCTAssertEqual(result.resumedFrom, 5)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: resumed)), Data("0123456789".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).count, 2, "nothing left behind")
        await client.shutdown()
        try await origin.shutdown()
    }

    /// A 206 of another version (the server ignored If-Range) starts the file over instead of splicing two versions.
    func testA206OfAnotherVersionStartsTheFileOver() async throws {
        let origin = try await rangeOrigin("ABCDEFGHIJ", etag: "\"v2\"", contentRange: "bytes 5-9/10")
        let client = HTTPClient()
        let destination = makeCacheDirectory() + "/file.bin"
        try leavePartial(destination + ".part", "01234", etag: "\"v1\"")
        let result = try await client.download(HTTPClientRequest(url: origin.url("/file")), to: destination, options: DownloadOptions(resume: true))
        XCTAssertEqual(result.resumedFrom, 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: destination)), Data("ABCDEFGHIJ".utf8), "two versions spliced")
        await client.shutdown()
        try await origin.shutdown()
    }

    /// A resume that starts over sends twice: the dropped 206's final value ended progressUpdates() before the
    /// real download, and a handler saw two final values.
    func testAResumeThatStartsOverReportsOneTransferWithOneFinalValue() async throws {
        let origin = try await rangeOrigin("ABCDEFGHIJ", etag: "\"v2\"", contentRange: "bytes 5-9/10")
        let client = HTTPClient()
        let destination = makeCacheDirectory() + "/file.bin"
        try leavePartial(destination + ".part", "01234", etag: "\"v1\"")
        let seen = Locked<[HTTPTransferProgress]>([])
        var request = HTTPClientRequest(url: origin.url("/file"))
        request.progressHandler = HTTPProgressHandler { progress in seen.withLock { $0.append(progress) } }
        _ = try await client.download(request, to: destination, options: DownloadOptions(resume: true))
        let values = seen.withLock { $0 }
        XCTAssertEqual(values.filter(\.isFinal).count, 1, "\(values)")
        XCTAssertEqual(values.last, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 10, bytesExpectedToReceive: 10, isFinal: true))
        await client.shutdown()
        try await origin.shutdown()
    }

    /// A resumed download counts from the start of the file, as curl's meter and ASIHTTPRequest do: the kept bytes
    /// and the 206's. It counted the 206's 5 bytes of 5.
    func testAResumedDownloadsProgressCountsTheBytesKept() async throws {
        let origin = try await rangeOrigin("0123456789", contentRange: "bytes 5-9/10")
        let client = HTTPClient()
        let destination = makeCacheDirectory() + "/file.bin"
        try leavePartial(destination + ".part", "01234")
        let seen = Locked<[HTTPTransferProgress]>([])
        var request = HTTPClientRequest(url: origin.url("/file"))
        request.progressHandler = HTTPProgressHandler { progress in seen.withLock { $0.append(progress) } }
        let result = try await client.download(request, to: destination, options: DownloadOptions(resume: true))
        XCTAssertEqual(result.resumedFrom, 5)
        XCTAssertEqual(result.bytesReceived, 5)
        let values = seen.withLock { $0 }
        XCTAssertEqual(values.last, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 10, bytesExpectedToReceive: 10, isFinal: true))
        XCTAssertEqual(values.filter(\.isFinal).count, 1)
        XCTAssertTrue(values.allSatisfy { $0.bytesReceived >= 5 && $0.bytesExpectedToReceive == 10 }, "\(values)")
        await client.shutdown()
        try await origin.shutdown()
    }

    /// A download that fails after its body ended normally (here a 206 of unknown length that is short of the
    /// file) ends its progress failed: the body's own final value is held until the download knows (it came
    /// first, not failed, and the failure could no longer be told).
    func testADownloadThatFailsAfterItsBodyEndsItsProgressFailed() async throws {
        let origin = try await rangeOrigin("01234567890123456789", contentRange: "bytes 5-19/*", rangeBody: "56789")
        let client = HTTPClient()
        let destination = makeCacheDirectory() + "/file.bin"
        try leavePartial(destination + ".part", "01234")
        let seen = Locked<[HTTPTransferProgress]>([])
        var request = HTTPClientRequest(url: origin.url("/file"))
        request.progressHandler = HTTPProgressHandler { progress in seen.withLock { $0.append(progress) } }
        do {
            _ = try await client.download(request, to: destination, options: DownloadOptions(resume: true))
            XCTFail("a short 206 was taken as the whole file")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .connectionClosed, "\(error)")
        }
        let values = seen.withLock { $0 }
        XCTAssertEqual(values.filter(\.isFinal).count, 1, "\(values)")
        XCTAssertEqual(values.last?.isFinal, true)
        XCTAssertEqual(values.last?.didFail, true, "\(values)")
        XCTAssertEqual(values.last?.bytesReceived, 10, "the 5 bytes kept and the 5 received")
        await client.shutdown()
        try await origin.shutdown()
    }

    /// A destination refused before anything is sent (a directory) still ends the request's progress.
    func testARefusedDestinationEndsTheProgress() async throws {
        let client = HTTPClient()
        let seen = Locked<[HTTPTransferProgress]>([])
        var request = HTTPClientRequest(url: "http://127.0.0.1:9/file")
        request.progressHandler = HTTPProgressHandler { progress in seen.withLock { $0.append(progress) } }
        for options in [DownloadOptions(), DownloadOptions(resume: true)] {
            seen.withLock { $0 = [] }
            do {
                _ = try await client.download(request, to: makeCacheDirectory(), options: options)
                XCTFail("a directory is no destination")
            } catch let error as HTTPClientError {
                XCTAssertEqual(error.code, .invalidRequest)
            }
            XCTAssertEqual(seen.withLock { $0 }, [HTTPTransferProgress(bytesExpectedToSend: 0, isFinal: true, didFail: true)])
        }
        await client.shutdown()
    }

    func testSidecarRoundTrip() {
        let validator = DownloadResume.Validator(kind: .etag, value: "\"5f-abc\"")
        XCTAssertEqual(DownloadResume.parseSidecar(DownloadResume.sidecarText(validator)), validator)
        let modified = DownloadResume.Validator(kind: .lastModified, value: "Tue, 24 Nov 2026 10:00:00 GMT")
        XCTAssertEqual(DownloadResume.parseSidecar(DownloadResume.sidecarText(modified)), modified)
        XCTAssertNil(DownloadResume.parseSidecar(DownloadResume.sidecarText(nil)))
        XCTAssertNil(DownloadResume.parseSidecar("etag: \"x\"\n"), "no header line: not ours")
    }

    /// Another download moves its partial file into place between our open and our lock: the lock would be on
    /// the finished file. The partial path is opened again, and the finished file is left as it was.
    func testAPartialFileMovedIntoPlaceBetweenOpenAndLockIsOpenedAgain() throws {
        let directory = makeCacheDirectory()
        let partialPath = directory + "/file.part", destination = directory + "/file"
        XCTAssertTrue(FileManager.default.createFile(atPath: partialPath, contents: Data("finished".utf8)))
        var opens = 0
        let partial = try HTTPClient.openLockedPartial(partialPath) {
            opens += 1
            if opens == 1 { XCTAssertEqual(rename(partialPath, destination), 0) }
        }
        defer { partial.close() }
        XCTAssertEqual(opens, 2)
        XCTAssertTrue(partial.isStill(at: partialPath))
        XCTAssertEqual(try partial.status().size, 0, "the lock is on a new partial file, not the finished one")
        try partial.write(Array("x".utf8)[...])
        XCTAssertEqual(FileManager.default.contents(atPath: destination), Data("finished".utf8))

        // A partial file locked by another download is refused, by name.
        XCTAssertThrowsError(try HTTPClient.openLockedPartial(partialPath)) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .invalidRequest)
            XCTAssertTrue("\(error)".contains("another download is writing"), "\(error)")
        }
    }

    /// A partial file planted as a symbolic link to another of the user's files is refused: a resume would
    /// truncate that file and rename the link into place.
    func testAPartialFileThatIsASymbolicLinkIsRefused() throws {
        let directory = makeCacheDirectory()
        let victim = directory + "/bashrc", partialPath = directory + "/file.part"
        XCTAssertTrue(FileManager.default.createFile(atPath: victim, contents: Data("precious".utf8)))
        try FileManager.default.createSymbolicLink(atPath: partialPath, withDestinationPath: victim)
        XCTAssertThrowsError(try HTTPClient.openLockedPartial(partialPath)) { error in
            XCTAssertEqual((error as? HTTPClientError)?.code, .invalidRequest, "\(error)")
        }
        XCTAssertEqual(FileManager.default.contents(atPath: victim), Data("precious".utf8))
    }

    /// A FIFO at the partial path used to hold the download in `open` until some process opened it for reading.
    func testAPartialFileThatIsAFIFOIsRefusedWithoutWaitingForAReader() throws {
        let directory = makeCacheDirectory()
        let partialPath = directory + "/file.part"
        XCTAssertEqual(mkfifo(partialPath, 0o600), 0)
        let outcome = resultOnAThreadOfItsOwn(release: { openOtherEnd(ofFIFO: partialPath, forWriting: false) }) { () -> String in
            do {
                _ = try HTTPClient.openLockedPartial(partialPath)
                return "opened"
            } catch {
                return (error as? HTTPClientError).map { "\($0.code)" } ?? "\(error)"
            }
        }
        XCTAssertEqual(outcome, "invalidRequest", "nil: opening a FIFO as the partial file waited for a reader")
    }

    /// A FIFO where the partial file's validator belongs used to hold a resumable download in `open`, waiting for
    /// a writer; it now counts as no validator, and the download starts again from zero.
    func testAValidatorThatIsAFIFOIsNoValidatorAndDoesNotWaitForAWriter() async throws {
        let server = try await NIOTestServer()
        let client = HTTPClient()
        let directory = makeCacheDirectory()
        let destination = directory + "/file.bin"
        XCTAssertTrue(FileManager.default.createFile(atPath: destination + ".part", contents: Data("abc".utf8)))
        XCTAssertEqual(mkfifo(destination + ".part.validator", 0o600), 0)
        // Bounded: after 5 s a writer opens the FIFO, which releases a blocked open, and the test fails.
        let released = Locked(false)
        let watchdog = Task.detached {
            try await Task.sleep(for: .seconds(5))
            let writer = open(destination + ".part.validator", O_WRONLY | O_NONBLOCK)
            if writer >= 0 {
                released.withLock { $0 = true }
                close(writer)
            }
        }
        let result = try await client.download(HTTPClientRequest(url: server.url("/bytes?n=1000")), to: destination,
                                               options: DownloadOptions(resume: true))
        watchdog.cancel()
        XCTAssertFalse(released.withLock { $0 }, "the download waited for a writer of the FIFO")
        XCTAssertEqual(result.resumedFrom, 0)
        XCTAssertEqual(result.fileSize, 1000)
        await client.shutdown()
        try await server.shutdown()
    }
}
