import Foundation

/// An error from test support code (peer missing, tool failed), with a message saying what to do.
struct PeerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// External peers started by `./scripts/test.sh` and announced through environment variables.
///
/// A missing peer is an error, never a skip: a test that silently does not run proves nothing.
enum Peers {
    /// nginx serving `.peers/www` (`small.txt` 1 KiB, `big.bin` 8 MiB, `index.html`) over HTTP and,
    /// with a self-signed certificate for localhost/127.0.0.1 (trust `caFile`), over HTTPS.
    /// `keepalive_timeout 2s`, `keepalive_requests 1000`, gzip on for text types.
    static func nginx() throws -> (httpPort: Int, httpsPort: Int, caFile: String) {
        let notRunning = "nginx peer is not running: run ./scripts/test.sh"
        guard let http = Int(try variable("ASYNCHTTP_NGINX_HTTP_PORT", notRunning)),
            let https = Int(try variable("ASYNCHTTP_NGINX_HTTPS_PORT", notRunning))
        else {
            throw PeerError("\(notRunning) (ASYNCHTTP_NGINX_*_PORT is not a number)")
        }
        return (http, https, try variable("ASYNCHTTP_NGINX_CA", notRunning))
    }

    /// httpbin (the PyPI package, run by gunicorn) on 127.0.0.1, as a base URL without a trailing slash:
    /// `http://127.0.0.1:<port>`. Its routes: https://httpbin.org/ (`/redirect/n`, `/cookies/set`, `/gzip`, …).
    static func httpbin() throws -> String {
        try variable("ASYNCHTTP_HTTPBIN_URL", "httpbin peer is not running: run ./scripts/test.sh")
    }

    /// The `.peers` directory `./scripts/test.sh` prepared; nginx's document root is `<dir>/www`,
    /// so tests can compare downloads with the files on disk.
    static func directory() throws -> String {
        try variable("ASYNCHTTP_PEERS_DIR", "peers directory is unknown: run ./scripts/test.sh")
    }

    private static func variable(_ name: String, _ message: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw PeerError("\(message) (\(name) is not set)")
        }
        return value
    }
}
