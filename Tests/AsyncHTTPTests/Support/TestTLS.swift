import Foundation

/// Certificates for TLS tests, made once per test process with the `openssl` command line tool.
///
/// Generated at test time rather than checked in so that nothing expires under the repository and no
/// private key lives in git. EC P-256 keys: generating them takes milliseconds, RSA-2048 takes ~100 ms each.
///
/// Files (PEM) in a private temporary directory that is removed when the process exits:
/// - a CA (`caFile`) that tests trust;
/// - a server certificate for `localhost`, `127.0.0.1` and `::1`, signed by the CA;
/// - a client certificate (CN=`asynchttp-test-client`, extendedKeyUsage clientAuth), signed by the CA;
/// - a self-signed server certificate for the same names that no one trusts;
/// - a server certificate signed by the CA that expired on 2020-01-02;
/// - a server certificate signed by the CA for `other.example` only (host name mismatch).
///
/// ```swift
/// let server = try await NIOTestServer(tls: .trusted)
/// // trust TestTLS.shared.caFile in the client, then GET server.baseURL + "/hello"
/// ```
final class TestTLS: Sendable {
    /// Generated on first use; generation failing (no `openssl` binary) ends the test process with the reason,
    /// because every TLS test would fail the same way. `./scripts/test.sh` installs `openssl`.
    static let shared: TestTLS = {
        do {
            return try TestTLS(directory: TestTLS.directory)
        } catch {
            fatalError("TestTLS: could not generate test certificates: \(error)")
        }
    }()

    /// One directory per process (pid in the name) so concurrent test runs do not share keys.
    static let directory: String = {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return "\(base)/asynchttp-tls-\(getpid())"
    }()

    /// The directory holding every file below.
    let directory: String
    let caFile: String
    let caKeyFile: String
    let serverCertFile: String
    let serverKeyFile: String
    let clientCertFile: String
    let clientKeyFile: String
    let selfSignedCertFile: String
    let selfSignedKeyFile: String
    let expiredCertFile: String
    let expiredKeyFile: String
    let wrongHostCertFile: String
    let wrongHostKeyFile: String

    /// The client certificate's subject common name, as `NIOTestServer` reports it in `X-Client-Cert-Subject`.
    static let clientCommonName = "asynchttp-test-client"

    /// Names every "good" server certificate covers: what a client connects to in tests.
    static let serverSubjectAltName = "DNS:localhost,IP:127.0.0.1,IP:::1"

    private init(directory: String) throws {
        let fm = FileManager.default
        try? fm.removeItem(atPath: directory)
        try fm.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Remove the keys when the test process exits; atexit takes a C function, so it reads the static path.
        atexit { try? FileManager.default.removeItem(atPath: TestTLS.directory) }

        self.directory = directory
        func path(_ name: String) -> String { "\(directory)/\(name)" }
        caFile = path("ca.pem")
        caKeyFile = path("ca.key")
        serverCertFile = path("server.pem")
        serverKeyFile = path("server.key")
        clientCertFile = path("client.pem")
        clientKeyFile = path("client.key")
        selfSignedCertFile = path("self-signed.pem")
        selfSignedKeyFile = path("self-signed.key")
        expiredCertFile = path("expired.pem")
        expiredKeyFile = path("expired.key")
        wrongHostCertFile = path("wrong-host.pem")
        wrongHostKeyFile = path("wrong-host.key")

        let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let days = ["-days", "3650"]
        let leaf = ["-addext", "basicConstraints=critical,CA:FALSE"]

        try Self.openssl(["req", "-x509"] + newKey + days + [
            "-keyout", caKeyFile, "-out", caFile, "-subj", "/CN=AsyncHTTP Test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ], in: directory)
        // `req -x509 -CA` (OpenSSL 3.0+) issues a CA-signed certificate in one step.
        try Self.openssl(["req", "-x509"] + newKey + days + leaf + [
            "-keyout", serverKeyFile, "-out", serverCertFile, "-subj", "/CN=localhost",
            "-CA", caFile, "-CAkey", caKeyFile,
            "-addext", "subjectAltName=\(Self.serverSubjectAltName)",
            "-addext", "extendedKeyUsage=serverAuth",
        ], in: directory)
        try Self.openssl(["req", "-x509"] + newKey + days + leaf + [
            "-keyout", clientKeyFile, "-out", clientCertFile, "-subj", "/CN=\(Self.clientCommonName)",
            "-CA", caFile, "-CAkey", caKeyFile,
            "-addext", "extendedKeyUsage=clientAuth",
        ], in: directory)
        try Self.openssl(["req", "-x509"] + newKey + days + [
            "-keyout", selfSignedKeyFile, "-out", selfSignedCertFile, "-subj", "/CN=localhost",
            "-addext", "subjectAltName=\(Self.serverSubjectAltName)",
        ], in: directory)
        try Self.openssl(["req", "-x509"] + newKey + days + leaf + [
            "-keyout", wrongHostKeyFile, "-out", wrongHostCertFile, "-subj", "/CN=other.example",
            "-CA", caFile, "-CAkey", caKeyFile,
            "-addext", "subjectAltName=DNS:other.example",
            "-addext", "extendedKeyUsage=serverAuth",
        ], in: directory)
        try Self.makeExpiredCertificate(
            certFile: expiredCertFile, keyFile: expiredKeyFile, caFile: caFile, caKeyFile: caKeyFile,
            directory: directory, newKey: newKey
        )
    }

    /// OpenSSL 3.0's `req`/`x509` cannot back-date a certificate (`-not_after` arrived in 3.4),
    /// so the expired one goes through `openssl ca`, which takes explicit start and end dates.
    private static func makeExpiredCertificate(
        certFile: String, keyFile: String, caFile: String, caKeyFile: String, directory: String, newKey: [String]
    ) throws {
        let db = "\(directory)/ca-db"
        try FileManager.default.createDirectory(atPath: db, withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: "\(db)/index.txt"))
        try Data("01\n".utf8).write(to: URL(fileURLWithPath: "\(db)/serial"))
        let config = """
            [ ca ]
            default_ca = test_ca
            [ test_ca ]
            database = \(db)/index.txt
            new_certs_dir = \(db)
            serial = \(db)/serial
            default_md = sha256
            policy = policy_any
            unique_subject = no
            x509_extensions = leaf_ext
            [ policy_any ]
            commonName = supplied
            [ leaf_ext ]
            basicConstraints = critical,CA:FALSE
            subjectAltName = \(serverSubjectAltName)
            extendedKeyUsage = serverAuth

            """
        let configFile = "\(db)/ca.cnf"
        try Data(config.utf8).write(to: URL(fileURLWithPath: configFile))
        let csr = "\(db)/expired.csr"
        try openssl(["req"] + newKey + ["-keyout", keyFile, "-out", csr, "-subj", "/CN=localhost"], in: directory)
        try openssl([
            "ca", "-batch", "-config", configFile, "-cert", caFile, "-keyfile", caKeyFile,
            "-in", csr, "-out", certFile, "-notext",
            "-startdate", "20200101000000Z", "-enddate", "20200102000000Z",
        ], in: directory)
    }

    /// Runs `openssl` with `arguments`; throws with its stderr if it exits non-zero.
    @discardableResult
    static func openssl(_ arguments: [String], in directory: String? = nil) throws -> (status: Int32, output: String) {
        let result = try run("openssl", arguments, in: directory)
        guard result.status == 0 else {
            throw PeerError("openssl \(arguments.joined(separator: " ")) exited with \(result.status): \(result.output)")
        }
        return result
    }

    /// Runs a program found on `PATH` and returns its exit status and combined stdout+stderr.
    static func run(_ program: String, _ arguments: [String], in directory: String? = nil) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [program] + arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read to EOF before waiting: a child that fills the pipe would otherwise never exit.
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

extension TestTLS {
    /// Which certificate an HTTPS `NIOTestServer` presents, and whether it asks for a client certificate.
    struct ServerConfig: Sendable, Hashable {
        var certificateFile: String
        var keyFile: String
        /// When true the server requires a client certificate signed by ``TestTLS/caFile`` and
        /// reports its common name in `X-Client-Cert-Subject` on `/hello`.
        var requireClientCertificate: Bool = false

        /// Server certificate for localhost/127.0.0.1/::1 signed by the test CA.
        static var trusted: ServerConfig { .trusted(requireClientCertificate: false) }

        static func trusted(requireClientCertificate: Bool) -> ServerConfig {
            ServerConfig(
                certificateFile: TestTLS.shared.serverCertFile,
                keyFile: TestTLS.shared.serverKeyFile,
                requireClientCertificate: requireClientCertificate
            )
        }

        /// Self-signed certificate for the right names, not signed by the test CA.
        static var selfSigned: ServerConfig {
            ServerConfig(certificateFile: TestTLS.shared.selfSignedCertFile, keyFile: TestTLS.shared.selfSignedKeyFile)
        }

        /// CA-signed certificate for the right names that expired on 2020-01-02.
        static var expired: ServerConfig {
            ServerConfig(certificateFile: TestTLS.shared.expiredCertFile, keyFile: TestTLS.shared.expiredKeyFile)
        }

        /// CA-signed, valid certificate for `other.example` only.
        static var wrongHost: ServerConfig {
            ServerConfig(certificateFile: TestTLS.shared.wrongHostCertFile, keyFile: TestTLS.shared.wrongHostKeyFile)
        }
    }
}
