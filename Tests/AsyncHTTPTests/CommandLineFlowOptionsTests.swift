import AsyncHTTP
import Foundation
import XCTest

@testable import ahttp

/// `ahttp`'s --limit-rate, progress meter and -#, -Z with --parallel-max and --fail-early, and --retry, run as a
/// user would: against nginx (throttling, the meter) and the in-process NIO server (connections, failures, retries).
final class CommandLineFlowOptionsTests: XCTestCase {
    func ahttp(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runAhttp(arguments)
    }

    func nginxURL(_ path: String) throws -> String { "http://127.0.0.1:\(try Peers.nginx().httpPort)\(path)" }

    func temporaryFile() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ahttp-flow-\(UUID().uuidString)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testLimitRateSlowsTheDownloadToTheRate() throws {
        let result = try ahttp(["-s", "--limit-rate", "4M", "-o", "/dev/null", "-w", "%{size_download} %{time_total}",
                                try nginxURL("/big.bin")])
        XCTAssertEqual(result.status, 0, result.stderr)
        let fields = result.stdout.split(separator: " ")
        XCTAssertEqual(fields.first, "8388608")
        let seconds = try XCTUnwrap(Double(String(fields.last ?? "")))
        XCTAssertGreaterThan(seconds, 1.6, "8 MiB at 4 MiB/s: about 2 s")
        XCTAssertLessThan(seconds, 3.5)
    }

    func testAnInvalidRateIsAUsageError() throws {
        let result = try ahttp(["--limit-rate", "fast", "http://127.0.0.1:1/"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("invalid --limit-rate 'fast'"), result.stderr)
    }

    func testTheMeterGoesToStderrAsPlainLinesWhenWritingAFile() throws {
        let file = temporaryFile()
        let result = try ahttp(["--limit-rate", "8M", "-o", file, try nginxURL("/big.bin")])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int, 8 << 20)
        let lines = result.stderr.split(separator: "\n")
        XCTAssertTrue(lines.first?.contains("% Total    % Received % Xferd  Average Speed") == true, result.stderr)
        XCTAssertTrue(lines.last?.hasPrefix("100 8192k  100 8192k    0     0  ") == true, result.stderr)
        XCTAssertFalse(result.stderr.contains("\r"), "not a terminal: no redrawing")
        let silent = try ahttp(["-s", "-o", file, try nginxURL("/small.txt")])
        XCTAssertEqual(silent.stderr, "", "-s: no meter")
        let toStdout = try ahttp([try nginxURL("/small.txt")])
        XCTAssertEqual(toStdout.stderr, "", "as curl: no meter when the body goes to standard output")
    }

    func testTheProgressBarIsRedrawnInPlaceOnATerminal() throws {
        // `script` (util-linux) gives ahttp a pseudo-terminal; its output is what the terminal would show.
        let file = temporaryFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qec", "\(ahttpPath()) -# --limit-rate 16M -o \(file) \(try nginxURL("/big.bin"))", "/dev/null"]
        process.environment = ["COLUMNS": "60", "PATH": "/usr/bin:/bin"]
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let screen = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, screen)
        XCTAssertTrue(screen.contains("\r"), "redrawn in place: \(screen.debugDescription)")
        XCTAssertTrue(screen.contains(String(repeating: "#", count: 52) + " 100.0%"), screen.debugDescription)
        XCTAssertFalse(screen.contains("% Total"), "-# replaces the meter")
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int, 8 << 20)
    }

    func testParallelMaxBoundsTheConnectionsTheServerSees() async throws {
        let server = try await NIOTestServer()
        let urls = (0..<6).map { _ in server.url("/slow-head?ms=150") }
        let result = try ahttp(["-s", "-Z", "--parallel-max", "2"] + urls)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, String(repeating: "slow", count: 6))
        XCTAssertEqual(server.connectionsAccepted, 2, "two at a time on two connections")
        let serial = try ahttp(["-s", server.url("/hello"), server.url("/hello")])
        XCTAssertEqual(serial.stdout, "hellohello")
        XCTAssertEqual(server.connectionsAccepted, 3, "without -Z: one after the other on one connection")
        try await server.shutdown()
    }

    func testWithParallelEachURLKeepsItsOwnOutputAndWriteOut() async throws {
        let server = try await NIOTestServer()
        let (first, second) = (temporaryFile(), temporaryFile())
        try Array("old".utf8).withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: second)) }
        let result = try ahttp(["-sS", "-Z", "-o", first, "-o", second, "-w", "%{http_code} %{size_download} %{filename_effective}\n",
                                server.url("/hello"), server.url("/bytes?n=3000"), server.url("/hello")])
        XCTAssertEqual(result.status, 0, result.stderr)
        // The third URL has no -o: its body goes to standard output, beside the -w lines of all three.
        // Each -w line comes when its transfer ends, after its body (as curl writes them).
        for line in ["200 5 \(first)\n", "200 3000 \(second)\n", "hello200 5 \n"] {
            XCTAssertTrue(result.stdout.contains(line), "\(line.debugDescription) in \(result.stdout.debugDescription)")
        }
        XCTAssertEqual(result.stdout.components(separatedBy: "hello").count - 1, 1, "only the third body on stdout: \(result.stdout)")
        XCTAssertEqual(try String(contentsOfFile: first, encoding: .utf8), "hello")
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: second)[.size] as? Int, 3000, "replaced whole")
        // As curl: an output file is 0666 less the umask, with -Z or without, not the 0600 of its temporary file.
        let mask = umask(0)
        umask(mask)
        let single = temporaryFile()
        XCTAssertEqual(try ahttp(["-s", "-o", single, server.url("/hello")]).status, 0)
        for path in [first, second, single] {
            let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
            XCTAssertEqual(mode, Int(0o666 & ~mask), path)
        }
        let siblings = try FileManager.default.contentsOfDirectory(atPath: (second as NSString).deletingLastPathComponent)
        XCTAssertFalse(siblings.contains { $0.contains(".ahttp-body-") || $0.hasSuffix(".download") }, "no temporary file left")
        let refused = try ahttp(["-sS", "-f", "-Z", "-o", first, server.url("/missing")])
        XCTAssertEqual(refused.status, 22, "curl -f's code")
        XCTAssertEqual(try String(contentsOfFile: first, encoding: .utf8), "hello", "-f leaves the file as it was")
        // Without -f too, as without -Z: an error page does not replace the user's file (it used to, exit 0).
        let missing = try ahttp(["-s", "-Z", "-o", first, server.url("/status/404")])
        XCTAssertEqual(missing.status, 22)
        XCTAssertEqual(try String(contentsOfFile: first, encoding: .utf8), "hello", "a 404 replaced the file")
        try await server.shutdown()
    }

    /// -Z used to hold each body in memory until its transfer ended, then write it: four 48 MiB downloads (two
    /// files, /dev/null and standard output) took about 220 MiB. Each now goes to its file or device as it arrives, and a body for
    /// standard output past 1 MiB waits in an unlinked temporary file.
    func testWithParallelBodiesGoWhereTheyBelongAsTheyArrive() async throws {
        let server = try await NIOTestServer()
        let (first, second) = (temporaryFile(), temporaryFile())
        let size = 48 << 20
        let url = server.url("/bytes?n=\(size)")
        let small = server.url("/hello")
        let baseline = runMeasuringPeakMemory(ahttpExecutable().path,
                                              ["-sS", "-Z", "-o", first, "-o", second, "-o", "/dev/null", small, small, small, small])
        let run = runMeasuringPeakMemory(ahttpExecutable().path,
                                         ["-sS", "-Z", "-o", first, "-o", second, "-o", "/dev/null", url, url, url, url])
        XCTAssertEqual(baseline.status, 0)
        XCTAssertEqual(run.status, 0)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: first)[.size] as? Int, size)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: second)[.size] as? Int, size)
        XCTAssertGreaterThan(baseline.peakKiB, 0, "VmHWM was read")
        // Less than one body more than the same command's for four 5-byte bodies (the old code: about 190 MiB more).
        XCTAssertLessThan(run.peakKiB - baseline.peakKiB, 48 * 1024,
                          "peak resident memory \(run.peakKiB) KiB for 4 x 48 MiB, \(baseline.peakKiB) KiB for 4 x 5 bytes")
        // Standard output still gets each body whole, one after the other, the large one through its spool file.
        let large = 3 << 20
        let captured = temporaryFile()
        let mixed = runMeasuringPeakMemory(ahttpExecutable().path, ["-sS", "-Z", server.url("/bytes?n=\(large)"), server.url("/hello"),
                                                                   server.url("/bytes?n=\(large)")], output: captured)
        XCTAssertEqual(mixed.status, 0)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: captured))
        XCTAssertEqual(bytes.count, 2 * large + 5)
        let hello = try XCTUnwrap(bytes.range(of: Data("hello".utf8)), "the small body is there")
        XCTAssertTrue([0, large, 2 * large].contains(hello.lowerBound), "between two whole bodies: at \(hello.lowerBound)")
        var bodies = bytes
        bodies.removeSubrange(hello)
        bodies.withUnsafeBytes { raw in
            XCTAssertNil(TestPattern.firstMismatch(in: UnsafeRawBufferPointer(rebasing: raw[..<large])), "first body whole")
            XCTAssertNil(TestPattern.firstMismatch(in: UnsafeRawBufferPointer(rebasing: raw[large...])), "second body whole")
        }
        try await server.shutdown()
    }

    /// Runs `path` with its standard output to `output` (its errors thrown away) and returns its exit status and its
    /// peak resident memory: the last `VmHWM` (a high-water mark) read from `/proc/PID/status` every 2 ms while it
    /// runs. Not `wait4`'s `ru_maxrss`: `posix_spawn` starts the child on this process's memory, and the kernel
    /// counts that memory's high-water mark into the child's at its `exec`. Gives up after 120 s.
    private func runMeasuringPeakMemory(
        _ path: String, _ arguments: [String], output: String = "/dev/null"
    ) -> (status: Int32, peakKiB: Int) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        // Returns once the child has called `exec` (glibc's posix_spawn waits for it), so every read below is of
        // the child's own memory.
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else {
            XCTFail("posix_spawn \(path) failed: \(spawned)")
            return (-1, 0)
        }
        var status: Int32 = 0
        var peak = 0
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            if let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
               let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
               let kib = Int(line.split(separator: " ").dropFirst().first ?? "") {
                peak = max(peak, kib)
            }
            if waitpid(pid, &status, WNOHANG) != 0 { break }
            if ContinuousClock.now > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                XCTFail("\(path) did not end within 120 s")
                break
            }
            usleep(2_000)
        }
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : -1, peak)
    }

    func testWithParallelAFailureStopsTheOthersOnlyWithFailEarly() async throws {
        let server = try await NIOTestServer()
        let dead = "http://127.0.0.1:\(try unusedPort())/"
        let carryOn = try ahttp(["-Z", "--parallel-max", "1", dead, server.url("/hello"), server.url("/hello")])
        XCTAssertEqual(carryOn.status, 7, "curl's code for the failed one")
        XCTAssertEqual(carryOn.stdout, "hellohello", "the others ran")
        let start = ContinuousClock.now
        let early = try ahttp(["-Z", "--fail-early", server.url("/slow-head?ms=5000"), server.url("/slow-head?ms=5000"), dead])
        XCTAssertLessThan(durationSeconds(start.duration(to: .now)), 3, "the slow ones were cancelled")
        XCTAssertEqual(early.status, 7)
        XCTAssertEqual(early.stdout, "")
        XCTAssertEqual(early.stderr.split(separator: "\n").count, 1, "one failure reported: \(early.stderr)")
        try await server.shutdown()
    }

    /// A server's `Retry-After: 1e30` (or `inf`, `nan`) used to trap `ahttp --retry` as it turned the wait into
    /// milliseconds; only delay-seconds are read now, at most a day, and anything else waits as --retry-delay says.
    /// A flag's `inf` seconds trapped the same way.
    func testRetryAfterAndTimeFlagsThatAreNoNumberOfSecondsDoNotCrash() throws {
        for value in ["1e30", "inf", "nan", "99999999999999999999"] {
            let server = try FaultServer(script: FaultScript([[.response("", status: "503 Busy", headers: ["Retry-After: \(value)"])]]))
            defer { server.stop() }
            let result = try ahttp(["-s", "--retry", "1", "--retry-delay", "0", "-w", "%{http_code}", "-o", "/dev/null",
                                    "http://127.0.0.1:\(server.port)/"])
            XCTAssertEqual(result.status, 0, "Retry-After: \(value): \(result.stderr)")
            XCTAssertEqual(result.stdout, "503", "Retry-After: \(value)")
        }
        for flag in ["-m", "--connect-timeout", "--expect100-timeout", "--retry-delay", "--retry-max-time"] {
            for value in ["inf", "nan", "1e400", "1e17"] {
                let result = try ahttp(["-s", flag, value, "http://127.0.0.1:1/"])
                XCTAssertEqual(result.status, 2, "\(flag) \(value): \(result.stderr)")
            }
        }
    }

    func testRetryRetriesTransientStatusesAndStopsAtTheMaxTime() async throws {
        let server = try await NIOTestServer()
        let retried = try ahttp(["--retry", "2", "--retry-delay", "0", "-o", "/dev/null", "-w", "%{http_code}", server.url("/status/503")])
        XCTAssertEqual(retried.status, 0)
        XCTAssertEqual(retried.stdout, "503")
        XCTAssertEqual(server.requestsServed, 3, "the first try and two retries")
        XCTAssertEqual(retried.stderr.components(separatedBy: "Will retry in 0 seconds").count - 1, 2, retried.stderr)
        XCTAssertTrue(retried.stderr.contains("1 retry left"), retried.stderr)

        let notTransient = try ahttp(["-s", "--retry", "3", "-o", "/dev/null", server.url("/status/404")])
        XCTAssertEqual(notTransient.status, 0)
        XCTAssertEqual(server.requestsServed, 4, "a 404 is not retried")

        // Retries start at 0 s and 0.4 s; at 0.8 s the 0.6 s budget is spent.
        _ = try ahttp(["-s", "--retry", "10", "--retry-delay", "0.4", "--retry-max-time", "0.6", "-o", "/dev/null",
                       server.url("/status/500")])
        XCTAssertEqual(server.requestsServed, 7)
        try await server.shutdown()
    }

    /// --retry used to do nothing with -o FILE (only standard output and devices went through it): the download
    /// is retried too, and the error page never replaces the file.
    func testRetryRetriesADownloadToAFile() async throws {
        let server = try await NIOTestServer()
        let file = temporaryFile()
        try Data("old".utf8).write(to: URL(fileURLWithPath: file))
        let result = try ahttp(["--retry", "2", "--retry-delay", "0", "-o", file, "-w", "%{http_code}", server.url("/status/503")])
        XCTAssertEqual(server.requestsServed, 3, "the first try and two retries")
        XCTAssertEqual(result.stderr.components(separatedBy: "Will retry in 0 seconds").count - 1, 2, result.stderr)
        XCTAssertEqual(result.stdout, "503")
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), "old", "an error page does not replace the file")
        // With -Z too: each transfer is retried on its own.
        let parallel = try ahttp(["--retry", "1", "--retry-delay", "0", "-Z", "-o", file, "-o", "/dev/null", "-w", "%{http_code}\n",
                                  server.url("/status/503"), server.url("/hello")])
        XCTAssertEqual(server.requestsServed, 3 + 3, "the 503 twice, the 200 once")
        XCTAssertEqual(parallel.stderr.components(separatedBy: "Will retry in 0 seconds").count - 1, 1, parallel.stderr)
        XCTAssertEqual(Set(parallel.stdout.split(separator: "\n")), ["503", "200"])
        try await server.shutdown()
    }

    func testRetryRetriesATimeout() async throws {
        let server = try await NIOTestServer()
        let result = try ahttp(["--retry", "1", "--retry-delay", "0", "-m", "0.2", server.url("/slow-head?ms=400")])
        XCTAssertEqual(result.status, 28)
        XCTAssertTrue(result.stderr.contains("Warning: Problem : timeout. Will retry in 0 seconds. 1 retry left."), result.stderr)
        // With -Z too: the batch fails a member that times out before its handler runs, so the retry is the chain's.
        // (The server counts a request when it answers, so the timed-out ones are not in its count.)
        let before = server.requestsServed
        let start = ContinuousClock.now
        let parallel = try ahttp(["--retry", "1", "--retry-delay", "0", "-m", "0.2", "-Z", "-o", "/dev/null", "-o", "/dev/null",
                                  server.url("/slow-head?ms=400"), server.url("/hello")])
        XCTAssertEqual(parallel.status, 28)
        // Each try has its own -m, as curl's: the retry waited 0.2 s too (under the send's one deadline it failed at once).
        XCTAssertGreaterThanOrEqual(start.duration(to: .now), .milliseconds(400))
        XCTAssertEqual(parallel.stderr.components(separatedBy: "Warning: Problem : timeout. Will retry in 0 seconds. 1 retry left.").count - 1,
                       1, parallel.stderr)
        XCTAssertGreaterThanOrEqual(server.requestsServed - before, 1, "the other transfer")
        try await server.shutdown()
    }

    func ahttpPath() -> String {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let tool = directory.appendingPathComponent("ahttp")
        if FileManager.default.fileExists(atPath: tool.path) { return tool.path }
        return directory.deletingLastPathComponent().appendingPathComponent("ahttp").path
    }

    // MARK: curl's zeros, --fail-early with -f, the new options

    /// curl: -m 0 is no limit and --connect-timeout 0 its default (both were usage errors); --limit-rate 0 no limit.
    func testZeroTimeoutsAndRateMeanNoLimit() async throws {
        let server = try await NIOTestServer()
        let result = try ahttp(["-s", "-m", "0", "--connect-timeout", "0", "--limit-rate", "0", server.url("/hello")])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "hello")
        try await server.shutdown()
    }

    /// curl's -f makes a 4xx a failed transfer (22), and --fail-early stops the other transfers on it. ahttp went on.
    func testFailEarlyStopsOnAStatusThatFailRefuses() async throws {
        let server = try await NIOTestServer()
        let result = try ahttp(["-s", "-Z", "--parallel-max", "1", "--fail-early", "-f",
                                server.url("/status/404"), server.url("/hello"), server.url("/hello")])
        XCTAssertEqual(result.status, 22, result.stderr)
        XCTAssertFalse(result.stdout.contains("hello"), "the transfers after the 404 did not run: \(result.stdout)")
        try await server.shutdown()
    }

    /// --retry-connrefused: a refused connection is retried (without it, it is not).
    func testRetryConnrefusedRetriesARefusedConnection() throws {
        let url = "http://127.0.0.1:\(try unusedPort())/"
        let retried = try ahttp(["--retry", "1", "--retry-delay", "0", "--retry-connrefused", url])
        XCTAssertEqual(retried.status, 7, retried.stderr)
        XCTAssertTrue(retried.stderr.contains("Will retry in 0 seconds. 1 retry left."), retried.stderr)
        let notRetried = try ahttp(["--retry", "1", "--retry-delay", "0", url])
        XCTAssertEqual(notRetried.status, 7)
        XCTAssertFalse(notRetried.stderr.contains("Will retry"), notRetried.stderr)
    }

    /// --proto limits the URLs' schemes (exit 1, nothing sent), --proto-redir the redirects' (exit 1).
    func testProtoAndProtoRedirRefuseSchemes() async throws {
        let server = try await NIOTestServer()
        let refused = try ahttp(["--proto", "=https", server.url("/hello")])
        XCTAssertEqual(refused.status, 1, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("disabled by --proto"), refused.stderr)
        XCTAssertEqual(server.requestsServed, 0)
        let redirector = try FaultServer(script: FaultScript([[.response("", status: "302 Found", headers: ["Location: \(server.url("/hello"))"])]]))
        defer { redirector.stop() }
        let redirect = try ahttp(["-L", "--proto-redir", "=https", "http://127.0.0.1:\(redirector.port)/"])
        XCTAssertEqual(redirect.status, 1, redirect.stderr)
        XCTAssertTrue(redirect.stderr.contains("--proto-redir"), redirect.stderr)
        XCTAssertEqual(server.requestsServed, 0)
        let allowed = try ahttp(["-s", "-L", "--proto", "-all,http", "--proto-redir", "http", "http://127.0.0.1:\(redirector.port)/"])
        XCTAssertEqual(allowed.stdout, "hello", allowed.stderr)
        // A hop needs --proto's leave too, as in libcurl (it went on to https, and failed to connect: exit 7).
        let toTLS = try FaultServer(script: FaultScript([[.response("", status: "302 Found", headers: ["Location: https://127.0.0.1:1/"])]]))
        defer { toTLS.stop() }
        let narrowed = try ahttp(["-L", "--proto", "=http", "http://127.0.0.1:\(toTLS.port)/"])
        XCTAssertEqual(narrowed.status, 1, narrowed.stderr)
        XCTAssertTrue(narrowed.stderr.contains("disabled by --proto"), narrowed.stderr)
        try await server.shutdown()
    }

    /// -#: a transfer that fails half-way leaves the bar at its real percentage, as curl's; it drew 100 %.
    func testProgressBarOfAFailedTransferStaysAtItsPercentage() throws {
        let server = try FaultServer(script: .closeMidBody)  // promises 100 bytes, sends 40
        defer { server.stop() }
        let result = try ahttp(["-#", "-o", temporaryFile(), "http://127.0.0.1:\(server.port)/"])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertFalse(result.stderr.contains("100.0%"), result.stderr)
        XCTAssertTrue(result.stderr.contains("40.0%"), result.stderr)
    }

    /// %{urlnum} numbers the URLs from 0; `-w @-` reads the format from standard input.
    func testWriteOutURLNumberAndFormatFromStandardInput() async throws {
        let server = try await NIOTestServer()
        let result = try runAhttp(["-s", "-o", "/dev/null", "-o", "/dev/null", "-w", "@-", server.url("/hello"), server.url("/hello")],
                                         input: "%{urlnum}:%{http_code}\\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "0:200\n1:200\n")
        try await server.shutdown()
    }

    // MARK: -Y/--speed-limit, -y/--speed-time

    /// curl's low-speed abort: 50 bytes a second under -Y 1000 -y 1 ends with exit 28 and curl's message, on
    /// standard error and in %{errormsg}, with -Z too. ahttp exited 2 on -Y (an unknown option).
    func testSpeedLimitAbortsATrickleWithCurlsExitAndMessage() throws {
        let server = try FaultServer(script: .dripBody(everyMs: 20))
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/"
        let message = "Operation too slow. Less than 1000 bytes/sec transferred the last 1 seconds"
        let start = Date()
        let result = try ahttp(["-sS", "-Y", "1000", "-y", "1", "-o", "/dev/null", "-w", "%{errormsg}", url])
        XCTAssertEqual(result.status, 28, result.stderr)
        XCTAssertEqual(result.stderr, "ahttp: \(url): \(message)\n")
        XCTAssertEqual(result.stdout, message)
        // Well short of the trickle's end; not tighter: under the thread sanitizer the process's start alone took
        // most of a second, and the run 2.9 s, on a slow day.
        XCTAssertLessThan(Date().timeIntervalSince(start), 10, "at the end of the 1 s window, not the 20 s trickle")
        let parallel = try ahttp(["-sS", "-Z", "--speed-limit", "1000", "--speed-time", "1", "-o", "/dev/null", url])
        XCTAssertEqual(parallel.status, 28, parallel.stderr)
        XCTAssertTrue(parallel.stderr.contains(message), parallel.stderr)
    }

    /// -y alone checks at curl's 1 byte a second: a server that never answers is given up after -y seconds; a
    /// quick answer under the same options passes.
    func testSpeedTimeAloneGivesUpOnASilentServer() throws {
        let silent = try FaultServer(script: .neverResponds)
        defer { silent.stop() }
        let result = try ahttp(["-sS", "-y", "1", "http://127.0.0.1:\(silent.port)/"])
        XCTAssertEqual(result.status, 28, result.stderr)
        XCTAssertTrue(result.stderr.contains("Operation too slow. Less than 1 bytes/sec transferred the last 1 seconds"), result.stderr)
        let quick = try FaultServer(script: FaultScript { _, _ in [.response("hello")] })
        defer { quick.stop() }
        let fine = try ahttp(["-sS", "-Y", "1000", "-y", "1", "http://127.0.0.1:\(quick.port)/"])
        XCTAssertEqual(fine.status, 0, fine.stderr)
        XCTAssertEqual(fine.stdout, "hello")
    }

    /// curl's defaults (tool_getparam.c): -Y alone over 30 s, -y alone at 1 byte a second, 0 for either no check;
    /// the client gets the limit.
    func testSpeedOptionsTakeCurlsDefaults() throws {
        func limit(_ arguments: [String]) throws -> LowSpeedLimit? {
            var configuration = HTTPClient.Configuration()
            applyCurlTransferDefaults(try AhttpCommand.parse(arguments + ["http://u/"]).options(), to: &configuration)
            return configuration.lowSpeedLimit
        }
        XCTAssertNil(try limit([]))
        XCTAssertEqual(try limit(["-Y", "500"]), try LowSpeedLimit(bytesPerSecond: 500, duration: .seconds(30)))
        XCTAssertEqual(try limit(["-y", "7"]), try LowSpeedLimit(bytesPerSecond: 1, duration: .seconds(7)))
        XCTAssertEqual(try limit(["--speed-time", "3", "--speed-limit", "2000"]), try LowSpeedLimit(bytesPerSecond: 2000, duration: .seconds(3)))
        XCTAssertEqual(try limit(["-Y2000", "-y3"]), try LowSpeedLimit(bytesPerSecond: 2000, duration: .seconds(3)))
        XCTAssertNil(try limit(["-Y", "0"]))
        XCTAssertNil(try limit(["-y", "0"]))
        XCTAssertNil(try limit(["-Y", "100", "-y", "0"]))
    }

    func testBadSpeedValuesAreUsageErrors() throws {
        for (flag, value) in [("-Y", "-1"), ("-Y", "1.5"), ("-Y", "fast"), ("-Y", ""), ("-Y", "1k"), ("-Y", "99999999999999999999"),
                              ("-y", "+3"), ("-y", "2e3"), ("-y", "1000000001")] {
            let result = try ahttp([flag, value, "http://127.0.0.1:1/"])
            XCTAssertEqual(result.status, 2, "\(flag) '\(value)': \(result.stderr)")
            let name = flag == "-Y" ? "--speed-limit" : "--speed-time"
            XCTAssertTrue(result.stderr.hasPrefix("ahttp: invalid \(name) '\(value)' (a whole number of"), result.stderr)
        }
    }

    // MARK: The meters of failed transfers

    /// -# of a transfer of unknown length that fails ended full at 100.0% (only a body read to its end should);
    /// -Z's bar with a download cut at 40 of 100 bytes read 100.0% once another transfer moved: the batch's
    /// snapshots count a member that ended as complete whatever its length said.
    func testTheBarOfAFailedTransferDoesNotReadComplete() throws {
        let chunked = try FaultServer(script: .truncatedChunkedBody)
        defer { chunked.stop() }
        let single = try ahttp(["-#", "-o", "/dev/null", "http://127.0.0.1:\(chunked.port)/"])
        XCTAssertEqual(single.status, 18, single.stderr)
        XCTAssertFalse(single.stderr.contains("100.0%"), single.stderr)
        XCTAssertTrue(single.stderr.contains("#=#=#"), single.stderr)
        let cut = try FaultServer(script: .closeMidBody)
        defer { cut.stop() }
        let later = try FaultServer(script: FaultScript([[.sleep(ms: 300), .response(String(repeating: "z", count: 100))]]))
        defer { later.stop() }
        let parallel = try ahttp(["-Z", "-#", "-o", "/dev/null", "-o", "/dev/null",
                                  "http://127.0.0.1:\(cut.port)/", "http://127.0.0.1:\(later.port)/"])
        XCTAssertEqual(parallel.status, 18, parallel.stderr)
        XCTAssertFalse(parallel.stderr.contains("100.0%"), parallel.stderr)
        XCTAssertTrue(parallel.stderr.hasSuffix(" 70.0%\n"), "140 of 200 bytes: \(parallel.stderr)")
    }

    /// Batch snapshots may reach -Z's meter out of order: it keeps the newest (by sequence number), and counts what
    /// each failed transfer of known length missed once, however often its final value comes.
    func testTheParallelMeterKeepsTheNewestSnapshotAndEachDownloadsOwnCounts() {
        let meter = ParallelMeter(bar: true, count: 2)
        var newer = HTTPBatchProgress()
        newer.sequenceNumber = 5
        newer.requestsEnded = 1
        var older = newer
        older.sequenceNumber = 4
        older.requestsEnded = 0
        meter.event(.progress(id: 0, HTTPTransferProgress(bytesReceived: 50, bytesExpectedToReceive: 100), batch: newer))
        meter.event(.progress(id: 1, HTTPTransferProgress(bytesReceived: 10), batch: older))
        XCTAssertEqual(meter.shown.progress, newer, "an older snapshot that came late is not shown")
        XCTAssertEqual(meter.shown.received, 60)
        XCTAssertEqual(meter.shown.expected, 110, "a length not known yet counts as what came")
        // A failed download keeps its length; one sent again holds at its highest count.
        meter.event(.progress(id: 0, HTTPTransferProgress(bytesReceived: 40, bytesExpectedToReceive: 100, isFinal: true, didFail: true),
                              batch: newer))
        XCTAssertEqual(meter.shown.received, 60)
        XCTAssertEqual(meter.shown.expected, 110)
        meter.event(.progress(id: 1, HTTPTransferProgress(bytesReceived: 30, bytesExpectedToReceive: 30, isFinal: true), batch: newer))
        XCTAssertEqual(meter.shown.received, 80)
        XCTAssertEqual(meter.shown.expected, 130)
    }
}
