import Foundation
import XCTest

/// `ahttp`'s curl-style body options, run as a user would: -F, --data-urlencode, --data-binary @file, -T, -o,
/// -O and -C -, against httpbin, nginx and the fault server.
final class CommandLineBodiesTests: XCTestCase {
    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-bodies-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        return directory
    }

    func json(_ text: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw PeerError("not a JSON object: \(text.prefix(200))")
        }
        return object
    }

    func testMultipartFormWithFileParts() throws {
        let directory = try temporaryDirectory()
        let binary = Data((0...255).map { UInt8($0) } + Array(repeating: 0xFF, count: 1000))
        let file = directory.appendingPathComponent("raw.dat")
        try binary.write(to: file)
        let result = try runAhttp(["-s", "-F", "title=Hello world", "-F", "tag=a", "-F", "tag=b",
                                   "-F", "file=@\(file.path);type=image/png;filename=shown.png",
                                   try Peers.httpbin() + "/anything"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let answer = try json(result.stdout)
        XCTAssertEqual(answer["method"] as? String, "POST")
        XCTAssertEqual((answer["form"] as? [String: Any])?["title"] as? String, "Hello world")
        XCTAssertEqual((answer["form"] as? [String: Any])?["tag"] as? [String], ["a", "b"])
        XCTAssertEqual((answer["files"] as? [String: Any])?["file"] as? String, "data:image/png;base64," + binary.base64EncodedString())
    }

    func testDataURLEncodeAndDataBinaryFromAFile() throws {
        let directory = try temporaryDirectory()
        let result = try runAhttp(["-s", "--data-urlencode", "q=a b&c=€", "--data-urlencode", "plain text",
                                   try Peers.httpbin() + "/post"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let form = try json(result.stdout)["form"] as? [String: Any]
        XCTAssertEqual(form?["q"] as? String, "a b&c=€")
        XCTAssertNotNil(form?["plain text"], "a bare content is encoded whole, as curl does: \(String(describing: form))")

        let text = String(repeating: "line one\r\nline two\n", count: 100)
        let file = directory.appendingPathComponent("payload.txt")
        try Data(text.utf8).write(to: file)
        let binary = try runAhttp(["-s", "--data-binary", "@\(file.path)", "-H", "Content-Type: text/plain",
                                   try Peers.httpbin() + "/anything"])
        XCTAssertEqual(binary.status, 0, binary.stderr)
        XCTAssertEqual(try json(binary.stdout)["data"] as? String, text, "CR and LF kept, as curl's --data-binary")
    }

    /// A file's bytes go out as they are, as curl sends them: `--data-urlencode name@file` percent-encodes each byte
    /// (a Latin-1 é is %E9), and `-F 'name=<file'` puts them in the part unchanged. Decoded as UTF-8 first, every
    /// byte that is not UTF-8 became U+FFFD (%EF%BF%BD).
    func testFileContentsInFormsAreSentAsTheirBytes() async throws {
        let server = try await NIOTestServer()
        let directory = try temporaryDirectory()
        let latin1 = directory.appendingPathComponent("latin1.txt")
        try Data([0x63, 0x61, 0x66, 0xE9]).write(to: latin1)  // "café" in ISO 8859-1
        let echoed = directory.appendingPathComponent("echoed")

        let encoded = try runAhttp(["-s", "-o", echoed.path, "--data-urlencode", "name@\(latin1.path)", server.url("/echo")])
        XCTAssertEqual(encoded.status, 0, encoded.stderr)
        XCTAssertEqual(String(decoding: try Data(contentsOf: echoed), as: UTF8.self), "name=caf%E9")

        let form = try runAhttp(["-s", "-o", echoed.path, "-F", "name=<\(latin1.path)", server.url("/echo")])
        XCTAssertEqual(form.status, 0, form.stderr)
        let body = [UInt8](try Data(contentsOf: echoed))
        XCTAssertNotNil(body.firstRange(of: [0x0D, 0x0A, 0x0D, 0x0A, 0x63, 0x61, 0x66, 0xE9, 0x0D, 0x0A]),
                        "the part holds the file's bytes: \(String(decoding: body, as: UTF8.self))")
        try await server.shutdown()
    }

    func testUploadFileWithTAppendsTheNameToADirectoryURLAndStoresItExactly() throws {
        let nginx = try Peers.nginx()
        let directory = try temporaryDirectory()
        let name = "t-\(UUID().uuidString).bin"
        let file = directory.appendingPathComponent(name)
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try bytes.write(to: file)
        let stored = try Peers.directory() + "/dav/" + name
        addTeardownBlock { try? FileManager.default.removeItem(atPath: stored) }
        let result = try runAhttp(["-s", "-w", "%{http_code}", "-o", "/dev/null", "-T", file.path,
                                   "http://127.0.0.1:\(nginx.httpPort)/dav/"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "201")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: stored)), bytes)

        let missing = try runAhttp(["-T", directory.appendingPathComponent("nope.bin").path, "http://127.0.0.1:\(nginx.httpPort)/dav/x"])
        XCTAssertEqual(missing.status, 26)
        XCTAssertTrue(missing.stderr.contains("nope.bin"), missing.stderr)
    }

    func testOutputIsAtomicAndAnErrorStatusLeavesTheFileAlone() throws {
        let nginx = try Peers.nginx()
        let directory = try temporaryDirectory()
        let destination = directory.appendingPathComponent("out.bin").path
        let ok = try runAhttp(["-s", "-o", destination, "http://127.0.0.1:\(nginx.httpPort)/big.bin"])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: destination)),
                       try Data(contentsOf: URL(fileURLWithPath: try Peers.directory() + "/www/big.bin")))
        let missing = try runAhttp(["-o", destination, "http://127.0.0.1:\(nginx.httpPort)/missing"])
        XCTAssertEqual(missing.status, 22)
        XCTAssertTrue(missing.stderr.contains("404"), missing.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: destination)).count, 8 << 20, "left as it was")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["out.bin"])
    }

    /// curl writes `-o FILE` in place: a file there keeps its mode (a 0600 key stays 0600) and a symbolic link is
    /// written through (its target gets the bytes, the link stays). ahttp chmodded the file it renamed into place to
    /// 0666 less the umask (a private file became world-readable) and replaced a link with a regular file. Also with
    /// -i (the heads prepended, a second rename) and -Z; a new file gets 0666 less the umask, as curl's.
    func testOutputOverAnExistingFileKeepsItsModeAndWritesThroughASymbolicLink() async throws {
        let server = try await NIOTestServer()
        let directory = try temporaryDirectory()
        let manager = FileManager.default
        func mode(_ path: String) throws -> Int? { try manager.attributesOfItem(atPath: path)[.posixPermissions] as? Int }
        for (index, extra) in [[], ["-i"], ["-Z"]].enumerated() {
            let file = directory.appendingPathComponent("key-\(index)").path
            XCTAssertTrue(manager.createFile(atPath: file, contents: Data("secret".utf8), attributes: [.posixPermissions: 0o600]))
            let result = try runAhttp(["-s"] + extra + ["-o", file, server.url("/bytes?n=10")])
            XCTAssertEqual(result.status, 0, "\(extra): \(result.stderr)")
            XCTAssertEqual(try mode(file), 0o600, "\(extra)")

            let target = directory.appendingPathComponent("target-\(index)").path
            let link = directory.appendingPathComponent("link-\(index)").path
            XCTAssertTrue(manager.createFile(atPath: target, contents: Data("old".utf8), attributes: [.posixPermissions: 0o640]))
            try manager.createSymbolicLink(atPath: link, withDestinationPath: "target-\(index)")
            let linked = try runAhttp(["-s"] + extra + ["-o", link, server.url("/bytes?n=10")])
            XCTAssertEqual(linked.status, 0, "\(extra): \(linked.stderr)")
            XCTAssertEqual(try manager.destinationOfSymbolicLink(atPath: link), "target-\(index)", "\(extra): the link stays")
            let body = try Data(contentsOf: URL(fileURLWithPath: target))
            XCTAssertTrue(body.count == 10 || (extra == ["-i"] && body.starts(with: Data("HTTP/1.1 200".utf8))), "\(extra): \(body)")
            XCTAssertEqual(try mode(target), 0o640, "\(extra)")
        }
        let probe = directory.appendingPathComponent("probe").path
        XCTAssertTrue(manager.createFile(atPath: probe, contents: Data()))
        let fresh = directory.appendingPathComponent("fresh").path
        XCTAssertEqual(try runAhttp(["-s", "-o", fresh, server.url("/bytes?n=3")]).status, 0)
        XCTAssertEqual(try mode(fresh), try mode(probe), "a new file: 0666 less the umask")
        XCTAssertEqual(try manager.contentsOfDirectory(atPath: directory.path).count, 3 * 3 + 2, "no temporary file left")
        try await server.shutdown()
    }

    /// curl: `-o DIR` cannot be written, exit 23 (ahttp exited 43, the library's invalid request), with -Z too; a
    /// `-F name=@FILE` that cannot be read exits 26 without a word under -s (ahttp printed its error), and with it
    /// under -sS.
    func testOutputToADirectoryExits23AndAnUnreadableFormFileIsSilentUnderS() async throws {
        let server = try await NIOTestServer()
        let directory = try temporaryDirectory()
        for extra in [[], ["-Z"]] {
            let result = try runAhttp(["-s"] + extra + ["-o", directory.path, server.url("/bytes?n=3")])
            XCTAssertEqual(result.status, 23, "\(extra): \(result.stderr)")
        }
        let missing = directory.appendingPathComponent("nope.txt").path
        let silent = try runAhttp(["-s", "-F", "f=@\(missing)", server.url("/echo")])
        XCTAssertEqual(silent.status, 26)
        XCTAssertEqual(silent.stderr, "")
        let shown = try runAhttp(["-sS", "-F", "f=@\(missing)", server.url("/echo")])
        XCTAssertEqual(shown.status, 26)
        XCTAssertTrue(shown.stderr.contains("nope.txt"), shown.stderr)
        try await server.shutdown()
    }

    /// -F's `;headers=` (ahttp exited 2), as curl's get_param_part and read_field_headers: a field line, quoted or
    /// not, or `@file` / `<file` of them (a folded line joined as it is, CRs, comments and empty lines dropped),
    /// after the part's own fields; a Content-Type among them is the type only without `type=`, in its place; a
    /// headers file that cannot be read is a warning and the part goes without (exit 0); a line that is no field
    /// is refused (2), where curl would send it.
    func testFormPartHeadersAsCurlSendsThem() async throws {
        let server = try await NIOTestServer()
        let directory = try temporaryDirectory()
        let headerFile = directory.appendingPathComponent("headers.txt")
        try Data("# a comment\r\nX-One: 1\r\n\r\nX-Two: two\r\n  folded\nX-Three: 3   \n".utf8).write(to: headerFile)
        let echoed = directory.appendingPathComponent("echoed").path
        func sent(_ arguments: [String]) throws -> (body: String, stderr: String) {
            let result = try runAhttp(["-o", echoed] + arguments + [server.url("/echo")])
            XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)")
            return ((try? String(contentsOfFile: echoed, encoding: .utf8)) ?? "", result.stderr)
        }
        let inline = try sent(["-F", "a=hello;headers=X-Note: 1;headers= \"X-Quoted: a;b\""]).body
        XCTAssertTrue(inline.contains("Content-Disposition: form-data; name=\"a\"\r\nX-Note: 1\r\nX-Quoted: a;b\r\n\r\nhello\r\n"), inline)
        for marker in ["@", "< "] {
            let fromFile = try sent(["-F", "b=text;type=text/x-b;headers=\(marker)\(headerFile.path)"]).body
            XCTAssertTrue(fromFile.contains(
                "name=\"b\"\r\nContent-Type: text/x-b\r\nX-One: 1\r\nX-Two: two  folded\r\nX-Three: 3\r\n\r\ntext\r\n"), fromFile)
        }
        let typed = try sent(["-F", "c=x;type=text/x-c;headers=Content-Type: text/x-mine"]).body
        XCTAssertTrue(typed.contains("name=\"c\"\r\nContent-Type: text/x-c\r\n\r\nx\r\n"), typed)
        XCTAssertFalse(typed.contains("text/x-mine"), "type= wins, as curl's")
        let untyped = try sent(["-F", "c=x;headers=X-A: 1;headers=Content-Type: text/x-mine"]).body
        XCTAssertTrue(untyped.contains("name=\"c\"\r\nContent-Type: text/x-mine\r\nX-A: 1\r\n\r\nx\r\n"), untyped)
        let missing = try sent(["-F", "d=y;headers=@\(directory.path)/missing.txt"])
        XCTAssertTrue(missing.stderr.contains("Warning: Cannot read from \(directory.path)/missing.txt: No such file or directory"), missing.stderr)
        XCTAssertTrue(missing.body.contains("name=\"d\"\r\n\r\ny\r\n"), missing.body)
        let noField = try runAhttp(["-s", "-F", "a=b;headers=no colon here", server.url("/echo")])
        XCTAssertEqual(noField.status, 2, noField.stderr)
        try await server.shutdown()
    }

    /// -F part options as curl's get_param_part reads them: `;type=` after a plain value is the part's type (ahttp
    /// sent `hello;type=text/x-a` as the value), a type runs to the next known option (`text/plain;charset=utf-8`;
    /// ahttp exited 2), `@-` and `<-` read standard input (ahttp exited 26), and a quoted file name loses its quotes.
    func testFormPartOptionsAsCurlReadsThem() async throws {
        let server = try await NIOTestServer()
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("f.txt")
        try Data("file text".utf8).write(to: file)
        let echoed = directory.appendingPathComponent("echoed").path
        func sent(_ arguments: [String], input: String? = nil) throws -> String {
            let result = try runAhttp(["-s", "-o", echoed] + arguments + [server.url("/echo")], input: input)
            XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)")
            return (try? String(contentsOfFile: echoed, encoding: .utf8)) ?? ""
        }
        let typed = try sent(["-F", "a=hello;type=text/x-a"])
        XCTAssertTrue(typed.contains("name=\"a\"\r\nContent-Type: text/x-a\r\n\r\nhello\r\n"), typed)
        let charset = try sent(["-F", "f=@\(file.path);type=text/plain;charset=utf-8;filename=shown.txt"])
        XCTAssertTrue(charset.contains("filename=\"shown.txt\"\r\nContent-Type: text/plain;charset=utf-8\r\n\r\nfile text\r\n"), charset)
        let quoted = try sent(["-F", "f=@\"\(file.path)\""])
        XCTAssertTrue(quoted.contains("filename=\"f.txt\"") && quoted.contains("\r\n\r\nfile text\r\n"), quoted)
        let stdinFile = try sent(["-F", "f=@-"], input: "from stdin")
        XCTAssertTrue(stdinFile.contains("filename=\"-\"") && stdinFile.contains("\r\n\r\nfrom stdin\r\n"), stdinFile)
        let stdinText = try sent(["-F", "g=<-"], input: "text in")
        XCTAssertTrue(stdinText.contains("name=\"g\"\r\n\r\ntext in\r\n"), stdinText)
        try await server.shutdown()
    }

    func testRemoteNameWritesIntoTheCurrentDirectory() throws {
        let nginx = try Peers.nginx()
        let written = FileManager.default.currentDirectoryPath + "/small.txt"
        XCTAssertFalse(FileManager.default.fileExists(atPath: written), "a small.txt is already in the current directory")
        addTeardownBlock { try? FileManager.default.removeItem(atPath: written) }
        let result = try runAhttp(["-s", "-O", "http://127.0.0.1:\(nginx.httpPort)/small.txt?v=1"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: written)).count, 1024)
    }

    func testContinueAtResumesAfterACut() throws {
        let full = String(repeating: "abcdefghij", count: 100)
        let server = try FaultServer(script: FaultScript([
            [.send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: \"e1\"\r\n\r\n" + String(full.prefix(700))), .close],
            [.send("HTTP/1.1 206 Partial Content\r\nContent-Length: 300\r\nContent-Range: bytes 700-999/1000\r\n\r\n"
                   + String(full.dropFirst(700)))],
        ]))
        defer { server.stop() }
        let directory = try temporaryDirectory()
        let destination = directory.appendingPathComponent("file.txt").path
        let url = "http://127.0.0.1:\(server.port)/file.txt"
        let first = try runAhttp(["-s", "-C", "-", "-o", destination, url])
        XCTAssertEqual(first.status, 18, "partial transfer: \(first.stderr)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination))
        let second = try runAhttp(["-s", "-C", "-", "-o", destination, url])
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertEqual(try String(contentsOfFile: destination, encoding: .utf8), full)
        XCTAssertTrue(server.requestHeads.last?.contains("Range: bytes=700-") == true)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["file.txt"])
    }

    /// curl's -C - resumes whatever -o file is there: `Range: bytes=<size>-`, the rest appended; a complete file is
    /// answered 416 and left as it is, exit 0. ahttp resumed only its own `.part` and fetched the whole again.
    func testContinueAtResumesAnExistingOutputFile() throws {
        let full = String(repeating: "abcdefghij", count: 100)
        let server = try FaultServer(script: FaultScript([
            [.send("HTTP/1.1 206 Partial Content\r\nContent-Length: 300\r\nContent-Range: bytes 700-999/1000\r\n\r\n"
                   + String(full.dropFirst(700)))],
            [.send("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\nContent-Range: bytes */1000\r\n\r\n")],
        ]))
        defer { server.stop() }
        let directory = try temporaryDirectory()
        let destination = directory.appendingPathComponent("file.txt").path
        try Data(full.prefix(700).utf8).write(to: URL(fileURLWithPath: destination))
        let url = "http://127.0.0.1:\(server.port)/file.txt"
        let resumed = try runAhttp(["-s", "-C", "-", "-o", destination, "-w", "%{http_code}", url])
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        XCTAssertEqual(resumed.stdout, "206")
        XCTAssertTrue(server.requestHeads.first?.contains("Range: bytes=700-") == true, "\(server.requestHeads)")
        XCTAssertEqual(try String(contentsOfFile: destination, encoding: .utf8), full)
        let complete = try runAhttp(["-s", "-f", "-C", "-", "-o", destination, url])
        XCTAssertEqual(complete.status, 0, complete.stderr)
        XCTAssertTrue(server.requestHeads.last?.contains("Range: bytes=1000-") == true, "\(server.requestHeads)")
        XCTAssertEqual(try String(contentsOfFile: destination, encoding: .utf8), full)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["file.txt"])
    }

    /// curl: with -G the data goes into the query, --data-binary @FILE's too. ahttp streamed the file as a POST.
    func testGetWithDataBinaryFilePutsTheFileInTheQuery() async throws {
        let server = try await NIOTestServer()
        let file = try temporaryDirectory().appendingPathComponent("query.txt")
        try Data("a=1&b=2".utf8).write(to: file)
        let result = try runAhttp(["-s", "-G", "--data-binary", "@\(file.path)", "-d", "c=3", server.url("/headers")])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix("method: GET\ntarget: /headers?a=1&b=2&c=3\n"), result.stdout)
        try await server.shutdown()
    }

    /// curl: -T FILE to a URL with no path (or one ending in '/') puts FILE's name at the end of the URL. ahttp only
    /// did it for a trailing '/'.
    func testUploadToAURLWithoutAPathAppendsTheFileName() async throws {
        let server = try await NIOTestServer()
        let file = try temporaryDirectory().appendingPathComponent("echo")  // the server's echoing route
        try Data("sent".utf8).write(to: file)
        let result = try runAhttp(["-s", "-w", " %{url_effective}", "-T", file.path, server.baseURL])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "sent \(server.baseURL)/echo")
        try await server.shutdown()
    }

    /// -J where ahttp is stricter than curl (docs/cli.md): a leading dot is stripped (curl writes `.bashrc`), the name
    /// never leaves the directory, an error status writes nothing, and -Z names and refuses the same way.
    func testRemoteHeaderNameNeverWritesAHiddenFileOrOutsideTheDirectory() throws {
        let directory = try temporaryDirectory()
        let inner = directory.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        let httpbin = try Peers.httpbin()
        func named(_ disposition: String) -> String {
            httpbin + "/response-headers?Content-Disposition=" + disposition.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        }
        func listing(_ url: URL) throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: url.path).sorted() }

        let hidden = try runAhttp(["-s", "--output-dir", inner.path, "-O", "-J", named(#"attachment; filename=".bashrc""#)])
        XCTAssertEqual(hidden.status, 0, hidden.stderr)
        let escape = try runAhttp(["-s", "--output-dir", inner.path, "-O", "-J", named("attachment; filename=../../escape.txt")])
        XCTAssertEqual(escape.status, 0, escape.stderr)
        XCTAssertEqual(try listing(inner), ["bashrc", "escape.txt"])
        XCTAssertEqual(try listing(directory), ["in"], "nothing outside the directory")

        let error = try runAhttp(["-sS", "--output-dir", inner.path, "-O", "-J", httpbin + "/status/404"])
        XCTAssertEqual(error.status, 22, error.stderr)
        XCTAssertTrue(error.stderr.contains("no file written"), error.stderr)

        let parallel = try runAhttp(["-s", "-Z", "--output-dir", inner.path, "--remote-name-all", "-J", "-w", "%{filename_effective}\n",
                                     named("attachment; filename=p1.txt"), named("attachment; filename=p2.txt")])
        XCTAssertEqual(parallel.status, 0, parallel.stderr)
        XCTAssertEqual(Set(parallel.stdout.split(separator: "\n").map(String.init)), [inner.path + "/p1.txt", inner.path + "/p2.txt"])
        try Data("mine".utf8).write(to: inner.appendingPathComponent("p1.txt"))
        let again = try runAhttp(["-sS", "-Z", "--output-dir", inner.path, "-O", "-J", named("attachment; filename=p1.txt")])
        XCTAssertEqual(again.status, 23, again.stderr)
        XCTAssertTrue(again.stderr.contains("refusing to overwrite"), again.stderr)
        XCTAssertEqual(try String(contentsOf: inner.appendingPathComponent("p1.txt"), encoding: .utf8), "mine")
        XCTAssertEqual(try listing(inner), ["bashrc", "escape.txt", "p1.txt", "p2.txt"], "no temporary file left")
    }
}
