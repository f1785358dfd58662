#if canImport(FoundationEssentials)
import FoundationEssentials
#elseif canImport(Foundation)
import Foundation
#endif

/// A user name and password, with the NTLM domain and workstation when they matter.
///
/// `description`, `debugDescription` and the mirror never show the password, so credentials can be logged,
/// interpolated or `dump`ed safely.
public struct HTTPCredentials: Sendable, Hashable, Codable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The user name. A name written `DOMAIN\\user` or `user@domain` gives NTLM its domain too.
    public var username: String
    /// The password; never shown by ``description``.
    public var password: String
    /// The NTLM domain (ASIHTTPRequest's `domain`). A user name written `DOMAIN\user` or `user@domain`
    /// supplies it too.
    public var domain: String?
    /// The NTLM workstation name sent in the handshake; none by default, as curl.
    public var workstation: String?

    /// Creates credentials.
    ///
    /// ```swift
    /// request.credentials = HTTPCredentials(username: "alice", password: secret)
    /// ```
    public init(username: String, password: String, domain: String? = nil, workstation: String? = nil) {
        self.username = username
        self.password = password
        self.domain = domain
        self.workstation = workstation
    }

    /// The user name (with its domain), and `<redacted>` in place of the password.
    public var description: String {
        "HTTPCredentials(\(domain.map { $0 + "\\" } ?? "")\(username), password: <redacted>)"
    }

    /// Same as ``description``: the password is redacted.
    public var debugDescription: String { description }

    /// A mirror with the password redacted, so that `dump(credentials)` (and a dump of anything holding them)
    /// and debuggers' views do not show it either.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "username": username, "password": "<redacted>", "domain": domain as Any,
                "workstation": workstation as Any,
            ],
            displayStyle: .struct)
    }
}

/// An HTTP authentication scheme AsyncHTTP can answer.
public enum HTTPAuthenticationScheme: String, Sendable, Hashable, Codable, CaseIterable {
    /// RFC 7617: the user name and password, base64-encoded, with every request.
    case basic = "Basic"
    /// RFC 7616: a hash of the password and the server's nonce; MD5, SHA-256 and SHA-512/256.
    case digest = "Digest"
    /// NTLMv2 (MS-NLMP): a three-message handshake that authenticates the connection.
    case ntlm = "NTLM"
    /// RFC 6750: a token, sent as it is (``HTTPClientRequest/bearerToken``).
    case bearer = "Bearer"

    /// The order a scheme is picked in when a server offers several: curl's (`pickoneauth`), strongest first.
    static let preference: [HTTPAuthenticationScheme] = [.bearer, .digest, .ntlm, .basic]
}

/// Where a set of credentials applies: RFC 9110 §11.5's protection space, plus the scheme, as ASIHTTPRequest's
/// session store and URLSession's `URLProtectionSpace` key it.
public struct ProtectionSpace: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `http` or `https` for a server; for a proxy, the proxy URL's scheme.
    public var scheme: String
    /// The server's (or proxy's) host, lowercased.
    public var host: String
    /// The server's (or proxy's) port.
    public var port: Int
    /// The realm from the challenge; nil for NTLM, which has none.
    public var realm: String?
    /// The scheme the challenge asked for.
    public var authenticationScheme: HTTPAuthenticationScheme
    /// Whether this is a proxy's space (`407`, `Proxy-Authenticate`) rather than the origin's.
    public var isProxy: Bool

    /// Creates a protection space.
    public init(scheme: String, host: String, port: Int, realm: String?, authenticationScheme: HTTPAuthenticationScheme, isProxy: Bool = false) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.realm = realm
        self.authenticationScheme = authenticationScheme
        self.isProxy = isProxy
    }

    /// The space as `https://host:443 Basic realm="…"`, with `proxy ` in front for a proxy's.
    public var description: String {
        let hostText = host.contains(":") ? "[\(host)]" : host
        return "\(isProxy ? "proxy " : "")\(scheme)://\(hostText):\(port) \(authenticationScheme.rawValue) realm=\(realm.map { "\"\($0)\"" } ?? "none")"
    }
}

/// Somewhere credentials are kept between requests, looked up by protection space.
///
/// ``InMemoryCredentialStore`` is the session store (ASIHTTPRequest's `useSessionPersistence`);
/// ``CredentialFile`` keeps credentials across runs (the role ASIHTTPRequest gave the keychain). Implement
/// this protocol to put them somewhere else, such as the system keyring.
public protocol CredentialStore: Sendable {
    /// The credentials kept for `space`, or nil.
    func credentials(for space: ProtectionSpace) async throws -> HTTPCredentials?
    /// Keeps `credentials` for `space`, replacing any kept before. Called when they were accepted.
    func store(_ credentials: HTTPCredentials, for space: ProtectionSpace) async throws
    /// Forgets the credentials for `space`. Called when they were refused.
    func removeCredentials(for space: ProtectionSpace) async throws
}

/// Credentials kept in memory for as long as the store lives. Each client has one by default.
///
/// Removing credentials is logging out: a client using this store forgets everything it derived from the
/// removed credentials (the servers where they succeeded and are sent before a challenge, Digest nonces,
/// callback answers), before its next request.
public actor InMemoryCredentialStore: CredentialStore {
    private var entries: [ProtectionSpace: HTTPCredentials] = [:]
    /// What was removed, for the clients using this store (see ``Authenticator``).
    nonisolated let removals = CredentialRemovals()

    /// Creates an empty store.
    public init() {}

    /// The credentials kept for `space`, if any.
    public func credentials(for space: ProtectionSpace) -> HTTPCredentials? { entries[space] }
    /// Keeps `credentials` for `space`, replacing any kept before.
    public func store(_ credentials: HTTPCredentials, for space: ProtectionSpace) { entries[space] = credentials }
    /// Forgets the credentials for `space`; clients using this store stop sending credentials to its server
    /// before a challenge.
    public func removeCredentials(for space: ProtectionSpace) { removeCredentials(for: space, recording: true) }
    /// Forgets everything (ASIHTTPRequest's `clearSession`): clients using this store forget every success,
    /// Digest nonce and callback answer too, and are challenged afresh.
    public func removeAll() {
        entries.removeAll()
        removals.record(nil)
    }
    /// How many spaces have credentials.
    public var count: Int { entries.count }

    /// Forgets the credentials for `space`; `recording` lists the removal for the clients that use this store.
    func removeCredentials(for space: ProtectionSpace, recording: Bool) {
        entries[space] = nil
        if recording { removals.record(space) }
    }

    /// The client's removal of credentials a server refused: only while they are still the ones kept for
    /// `space` (another request may have stored newer ones since), and not recorded as a removal.
    func removeRefused(_ refused: HTTPCredentials, for space: ProtectionSpace) {
        guard entries[space] == refused else { return }
        entries[space] = nil
    }

    /// The client's removal of `spaces`' credentials (nil: all of them) after they were removed from its
    /// ``CredentialFile``; not recorded as a removal (the client already forgot what it derived from them).
    func removeUnrecorded(_ spaces: [ProtectionSpace]?) {
        guard let spaces else { return entries.removeAll() }
        for space in spaces { entries[space] = nil }
    }

    /// The client's store of credentials that succeeded: only while the store has seen `count` removals, the
    /// number the client checked against, so that a logout that got here first is not undone. Returns whether
    /// they were stored.
    func store(_ credentials: HTTPCredentials, for space: ProtectionSpace, ifRemovalsAre count: Int) -> Bool {
        guard removals.count == count else { return false }
        entries[space] = credentials
        return true
    }
}

/// The removals made in a credential store, counted, so that every client using the store can catch up
/// with them synchronously before its next request: a store cleared with `await store.removeAll()` is
/// clear for the very next request, with no notification in flight.
final class CredentialRemovals: Sendable {
    private struct State {
        var count = 0
        /// The latest removals, oldest first: the count after each, and the space (nil: everything).
        var recent: [(count: Int, space: ProtectionSpace?)] = []
    }

    /// How many removals are listed; a client further behind forgets everything.
    static let listed = 64
    private let state = Locked(State())

    /// How many removals there have been.
    var count: Int { state.withLock { $0.count } }

    /// Notes the removal of the credentials for `space`, or of all of them (nil).
    func record(_ space: ProtectionSpace?) {
        state.withLock { state in
            state.count += 1
            state.recent.append((state.count, space))
            if state.recent.count > Self.listed { state.recent.removeFirst(state.recent.count - Self.listed) }
        }
    }

    /// The spaces removed after the `count`-th removal, or nil when everything was (or too much to list).
    func removed(since count: Int) -> [ProtectionSpace]? {
        state.withLock { state in
            guard count < state.count else { return [] }
            guard let oldest = state.recent.first, oldest.count <= count + 1 else { return nil }
            var spaces: [ProtectionSpace] = []
            for entry in state.recent where entry.count > count {
                guard let space = entry.space else { return nil }
                spaces.append(space)
            }
            return spaces
        }
    }
}

/// Credentials kept in a JSON file, readable by its owner only.
///
/// Every change rewrites the file whole: a temporary file in the same directory, created with mode 0600,
/// then `rename(2)` over the old one, so a crash leaves either the old file or the new one and another user
/// never sees the secrets. The file holds passwords in the clear, like curl's `.netrc`: keep it in a
/// directory only you can read.
public actor CredentialFile: CredentialStore {
    /// The JSON file's path.
    public let path: String
    private var entries: [ProtectionSpace: HTTPCredentials]
    /// What was removed, for the clients using this file (see ``Authenticator``).
    nonisolated let removals = CredentialRemovals()

    private struct Entry: Codable {
        var space: ProtectionSpace
        var credentials: HTTPCredentials
    }

    /// Opens the file at `path`, or starts empty when it does not exist yet (it is created on the first store).
    public init(path: String) throws(HTTPClientError) {
        self.path = path
        self.entries = try Self.load(path)
    }

    /// The credentials kept for `space`, if any.
    public func credentials(for space: ProtectionSpace) -> HTTPCredentials? { entries[space] }

    /// Keeps `credentials` for `space` and rewrites the file atomically.
    ///
    /// - Throws: `HTTPClientError.Code.ioFailure` when the file cannot be written.
    public func store(_ credentials: HTTPCredentials, for space: ProtectionSpace) throws(HTTPClientError) {
        guard entries[space] != credentials else { return }
        entries[space] = credentials
        try save()
    }

    /// Forgets the credentials for `space` and rewrites the file; clients using this file as their
    /// persistent store forget what they derived from those credentials too.
    public func removeCredentials(for space: ProtectionSpace) throws(HTTPClientError) {
        try removeCredentials(for: space, recording: true)
    }

    /// Forgets the credentials for `space`; `recording` lists the removal for the clients that use this store.
    func removeCredentials(for space: ProtectionSpace, recording: Bool) throws(HTTPClientError) {
        if recording { removals.record(space) }
        guard entries.removeValue(forKey: space) != nil else { return }
        try save()
    }

    /// The client's removal of credentials a server refused: only while they are still the ones kept for
    /// `space` (another request may have stored newer ones since), and not recorded as a removal.
    func removeRefused(_ refused: HTTPCredentials, for space: ProtectionSpace) throws(HTTPClientError) {
        guard entries[space] == refused else { return }
        entries[space] = nil
        try save()
    }

    /// The client's store of credentials that succeeded: only while the file has seen `count` removals, the
    /// number the client checked against, so that a removal that got here first is not undone.
    func store(_ credentials: HTTPCredentials, for space: ProtectionSpace, ifRemovalsAre count: Int) throws(HTTPClientError) {
        guard removals.count == count else { return }
        try store(credentials, for: space)
    }

    private static func load(_ path: String) throws(HTTPClientError) -> [ProtectionSpace: HTTPCredentials] {
        guard let bytes = try PrivateFile.contents(atPath: path, what: "credential file"), !bytes.isEmpty else { return [:] }
        do {
            let list = try JSONDecoder().decode([Entry].self, from: Data(bytes))
            return Dictionary(list.map { ($0.space, $0.credentials) }, uniquingKeysWith: { _, last in last })
        } catch {
            // Never echo the file's contents: they are secrets.
            throw HTTPClientError(.invalidRequest, "the credential file \(path) is not valid JSON of credentials")
        }
    }

    private func save() throws(HTTPClientError) {
        let list = entries.map { Entry(space: $0.key, credentials: $0.value) }
            .sorted { $0.space.description < $1.space.description }
        let data: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            data = try encoder.encode(list)
        } catch {
            throw HTTPClientError(.invalidRequest, "cannot encode credentials: \(type(of: error))")
        }
        try PrivateFile.writeAtomically(Array(data) + [UInt8(ascii: "\n")], toPath: path)
    }
}
