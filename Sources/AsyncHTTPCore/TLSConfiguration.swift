/// How AsyncHTTP speaks TLS. The defaults are the safe ones: the system trust store, host name
/// verification, TLS 1.2 or later.
///
/// ```swift
/// var tls = TLSConfiguration()
/// tls.trustRoots = .file("/etc/myapp/ca.pem")                 // curl's --cacert
/// tls.clientCertificate = .init(certificateFile: "me.pem", privateKeyFile: "me.key")
/// let client = HTTPClient(configuration: .init(tls: tls))
/// ```
public struct TLSConfiguration: Sendable, Hashable {
    /// Which certificates the client trusts.
    public enum TrustRoots: Sendable, Hashable {
        /// The operating system's store (`/etc/ssl/certs` on Debian through OpenSSL's default paths).
        case system
        /// Only the PEM certificates in this file (curl's `--cacert`).
        case file(String)
        /// The system store plus the PEM certificates in this file.
        case systemAndFile(String)
    }

    /// A PEM certificate chain and its private key, presented when a server asks for one.
    public struct ClientCertificate: Sendable, Hashable {
        /// The PEM file with the certificate (and any intermediates).
        public var certificateFile: String
        /// The PEM file with the private key.
        public var privateKeyFile: String
        /// Names the two PEM files; they are read when the first TLS connection is made.
        public init(certificateFile: String, privateKeyFile: String) {
            self.certificateFile = certificateFile
            self.privateKeyFile = privateKeyFile
        }
    }

    /// The oldest protocol version accepted.
    public enum Version: Sendable, Hashable, Comparable {
        /// TLS 1.0, 1.1, 1.2 and 1.3.
        case tls1_0, tls1_1, tls1_2, tls1_3
    }

    /// The certificates that anchor verification: the system store by default (curl's `--cacert` is `.file`).
    public var trustRoots: TrustRoots = .system
    /// A directory of CA certificates to trust as well as ``trustRoots``: PEM files named by their subject's hash
    /// (`openssl rehash DIR` makes the names), looked up when a chain needs one (curl's `--capath`,
    /// OpenSSL's `CApath`). nil by default.
    public var additionalTrustDirectory: String?
    /// The certificate presented when a server asks for one (curl's `--cert` and `--key`); none by default.
    public var clientCertificate: ClientCertificate?
    /// TLS 1.2 by default, as RFC 8996 deprecates 1.0 and 1.1.
    public var minimumVersion: Version = .tls1_2
    /// Verify the server's certificate chain and host name. Turning this off is for testing only
    /// (ASIHTTPRequest's `validatesSecureCertificate = NO`, curl's `-k`).
    public var certificateVerification = true
    /// Resume TLS sessions per host so reconnects skip a full handshake.
    public var sessionResumption = true

    /// The safe defaults: the system trust store, verification on, TLS 1.2 or later, session resumption.
    public init() {}

    /// No certificate checks at all. For tests against self-signed servers only.
    public static var insecure: TLSConfiguration {
        var configuration = TLSConfiguration()
        configuration.certificateVerification = false
        return configuration
    }
}
