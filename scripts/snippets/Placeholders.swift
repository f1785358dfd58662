// Declarations the documentation's code examples may use without declaring them, so that an example can stay
// a few lines long. scripts/check-snippets.sh type-checks every example against the built AsyncHTTP module
// with this file beside it. Besides these, each example runs inside
// `func …() async throws { <the locals in check-snippets.sh's prelude>; do { <example> } }`, so it may use
// `client`, `request`, `response`, `configuration`, `jar`, `secret`, `token`, `password`, `userSupplied`,
// `urls`, `fileChunks`, `chunks`, `size`, `now`, `bytes`, `body`, `requests`, `logger`, `path`, `credentialsPath`,
// `cachesDirectory` and `file` as they are declared there, and may declare its own of the same names.
import AsyncHTTP

/// Hands a chunk of a body to the program.
func consume(_ chunk: ArraySlice<UInt8>) {}

/// Asks a person for credentials.
func askUser(_ space: ProtectionSpace) async -> HTTPCredentials? { nil }

/// Asks a person for a password.
func promptForPassword(realm: String?, host: String) async -> HTTPCredentials? { nil }

/// An observer standing for the program's own.
struct MyMetrics: HTTPClientObserver {
    func observe(_ event: HTTPClientEvent) {}
}

/// A file standing for wherever the program writes a body.
struct PlaceholderFile {
    func write(contentsOf bytes: some Collection<UInt8>) throws {}
}
