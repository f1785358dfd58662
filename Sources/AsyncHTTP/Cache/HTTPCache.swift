import HTTPTypes
import Logging
import Synchronization

/// A private HTTP cache on disk (RFC 9111), with ASIDownloadCache's policies: give it to a client and its
/// GET requests are answered from disk when the rules allow, revalidated with `304`s, and stored as they
/// stream in.
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// configuration.cache = try HTTPCache(directory: "/var/cache/myapp/http")
/// let client = HTTPClient(configuration: configuration)
/// let response = try await client.send(HTTPClientRequest(url: "https://example.com/feed.json"))
/// response.cacheStatus          // .miss the first time, .hit while fresh, .revalidated after a 304
/// ```
///
/// One cache object can serve several clients (give each configuration the same instance), and several
/// cache objects, in this process or others, can share one directory: every entry is a file written
/// beside its final name and renamed into place, so a reader sees a whole entry or none, and a damaged
/// entry fails its checksum and is removed (with a log line) instead of being served.
///
/// Layout of `directory`: `entries/` holds permanent entries, one `HASH.meta` file each (head, and the body
/// when it is small) and a `HASH.RANDOM.body` file for larger bodies; `session-PID-RANDOM/` holds this
/// object's session entries and a locked `lock` file. There is no index file to damage: the index of sizes
/// and last uses is kept in memory and rebuilt from the files.
public final class HTTPCache: Sendable {
    /// The directory given at creation.
    public let directory: String
    /// The most bytes the entries may take on disk; past it the least recently used are removed.
    /// 64 MiB by default (URLSession's shared `URLCache` keeps 10–20 MB on disk; a client's cache is
    /// usually its own, so a little more room).
    public let maxSize: Int
    /// The largest entry stored; bigger responses pass through unstored. By default a twentieth of
    /// ``maxSize``: URLCache does not store a response larger than about 5 % of its disk capacity.
    public let maxEntrySize: Int
    /// The policy of requests that leave ``HTTPClientRequest/cachePolicy`` at ``HTTPCachePolicy/useDefault``
    /// (ASIDownloadCache's `defaultCachePolicy`, ``HTTPCachePolicy/askServerIfModifiedWhenStale`` there too).
    public let defaultPolicy: HTTPCachePolicy
    /// Where responses go unless a request says otherwise (``HTTPClientRequest/cacheStoragePolicy``).
    public let defaultStoragePolicy: HTTPCacheStoragePolicy
    /// Store and reuse responses even when the server says `no-store`, `no-cache` or `must-revalidate`
    /// (ASIDownloadCache's `shouldIgnoreServerDontCacheHeaders`, off by default). `Vary`, `Authorization`
    /// (§3.5) and the request's own `no-store` are still honoured.
    public let ignoresServerDontCacheHeaders: Bool

    /// A body up to this size is kept in its entry's head file: one file to open for a small hit.
    static let inlineBodyLimit = 16 * 1024
    /// A temporary file older than this is a crashed writer's, whatever its process id says.
    static let abandonedTemporaryAge: Double = 86_400
    /// A body file no head refers to is removed once this old (a writer renames its body a moment before
    /// its head).
    static let orphanBodyAge: Double = 600

    let logger: Logger
    /// The wall clock, seconds since 1970 (tests inject theirs).
    let now: @Sendable () -> Double
    private let permanentDirectory: String
    private let sessionDirectory: String
    private let state: Locked<State>
    /// Decoded head files by path, each valid while the file keeps its identity: a hit then costs a `stat`
    /// instead of a read, a checksum and a decode. Bounded: at most ``memoLimit`` entries (inline bodies are
    /// at most 16 KiB each).
    private let memo = Locked<[String: Memo]>([:])
    static let memoLimit = 256
    /// Locks for the writes to one entry (its head file, its body files and its index entry), striped by the
    /// entry's hash: two commits of one URL, or a commit and a `304`'s update, would otherwise interleave and
    /// leave the head naming a body file the other one removed. Never held across another entry's lock.
    /// (`Bool`, unused, rather than `Void`: the thread sanitizer reads a zero-sized value's access as one to the
    /// lock object itself, and reports every two threads taking the lock as a race.)
    private let entryLocks: [Locked<Bool>] = (0..<32).map { _ in Locked(false) }

    private func withEntryLock<Result, Failure: Error>(
        _ hash: String, _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let stripe = hash.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xFFFF } % entryLocks.count
        return try entryLocks[stripe].withLock { (_: inout Bool) throws(Failure) -> Result in try body() }
    }

    private struct Memo {
        var identity: CacheFiles.Identity
        var record: CacheEntryRecord
        var facts: CacheRules.StoredFacts
    }

    private struct IndexEntry {
        var storage: HTTPCacheStoragePolicy
        /// The files of this entry (head and body), by name, with their sizes.
        var files: [String: Int]
        var lastUse: Double
        var size: Int { files.values.reduce(0, +) }
    }

    private struct State {
        /// By `storage/hash`.
        var index: [String: IndexEntry] = [:]
        var totalSize = 0
        var sessionLock: CacheDirectoryLock?
        var attachedClients = 0
    }

    /// Opens (creating if needed, mode 0700) a cache in `directory`, removes what crashed writers and dead
    /// processes' sessions left there, and builds the index from the files.
    ///
    /// - Throws: `HTTPClientError.Code.invalidConfiguration` for a size that is not positive,
    ///   `HTTPClientError.Code.ioFailure` if the directory cannot be created.
    public convenience init(
        directory: String, maxSize: Int = 64 << 20, maxEntrySize: Int? = nil,
        defaultPolicy: HTTPCachePolicy = .askServerIfModifiedWhenStale,
        defaultStoragePolicy: HTTPCacheStoragePolicy = .permanent, ignoresServerDontCacheHeaders: Bool = false,
        logger: Logger = Logger(label: "AsyncHTTP.cache")
    ) throws(HTTPClientError) {
        try self.init(directory: directory, maxSize: maxSize, maxEntrySize: maxEntrySize, defaultPolicy: defaultPolicy,
                      defaultStoragePolicy: defaultStoragePolicy,
                      ignoresServerDontCacheHeaders: ignoresServerDontCacheHeaders, logger: logger,
                      now: { SystemClock.secondsSince1970() })
    }

    init(
        directory: String, maxSize: Int, maxEntrySize: Int?, defaultPolicy: HTTPCachePolicy,
        defaultStoragePolicy: HTTPCacheStoragePolicy, ignoresServerDontCacheHeaders: Bool, logger: Logger,
        now: @escaping @Sendable () -> Double
    ) throws(HTTPClientError) {
        guard maxSize > 0 else { throw HTTPClientError(.invalidConfiguration, "the cache's maxSize is \(maxSize); it must be positive") }
        if let maxEntrySize, maxEntrySize <= 0 {
            throw HTTPClientError(.invalidConfiguration, "the cache's maxEntrySize is \(maxEntrySize); it must be positive")
        }
        guard !directory.isEmpty else { throw HTTPClientError(.invalidConfiguration, "the cache directory is empty") }
        self.directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.maxSize = maxSize
        self.maxEntrySize = maxEntrySize ?? Swift.max(1, maxSize / 20)
        self.defaultPolicy = defaultPolicy == .useDefault ? .askServerIfModifiedWhenStale : defaultPolicy
        self.defaultStoragePolicy = defaultStoragePolicy
        self.ignoresServerDontCacheHeaders = ignoresServerDontCacheHeaders
        self.logger = logger
        self.now = now
        permanentDirectory = self.directory + "/entries"
        sessionDirectory = self.directory + "/session-\(CacheFiles.processID)-\(hexString(secureRandomBytes(6)))"
        state = Locked(State())
        try CacheFiles.makeDirectory(permanentDirectory)
        removeDeadSessions()
        let entries = scan(.permanent, removingDebris: true)
        state.withLock { state in
            state.index = entries
            state.totalSize = entries.values.reduce(0) { $0 + $1.size }
        }
    }

    deinit {
        // Session entries live no longer than the cache object.
        if state.withLock({ $0.sessionLock != nil }) { CacheFiles.removeDirectory(sessionDirectory) }
    }

    // MARK: Public operations

    /// The bytes the entries take on disk, as far as this object knows (entries another process wrote
    /// are counted from the last scan; a scan runs at creation and whenever the cache is over its size).
    public var sizeOnDisk: Int { state.withLock { $0.totalSize } }

    /// Removes every stored response of one storage (ASIDownloadCache's `clearCachedResponsesForStoragePolicy:`).
    /// `.session` removes this object's session entries; `.permanent` the directory's permanent ones,
    /// which other processes sharing it see gone too.
    public func clearCachedResponses(for storage: HTTPCacheStoragePolicy) {
        switch storage {
        case .session:
            memo.withLock { $0.removeAll() }
            CacheFiles.removeDirectory(sessionDirectory)
            state.withLock { state in
                state.sessionLock = nil
                dropIndex(of: .session, &state)
            }
        case .permanent:
            memo.withLock { $0.removeAll() }
            for item in CacheFiles.list(permanentDirectory) where !item.isDirectory {
                CacheFiles.remove(permanentDirectory + "/" + item.name)
            }
            state.withLock { dropIndex(of: .permanent, &$0) }
        }
    }

    /// Removes the stored response for `url`, if any (ASIDownloadCache's `removeCachedDataForURL:`).
    public func removeCachedResponse(for url: String) throws(HTTPClientError) {
        remove(key: CacheRules.cacheKey(try HTTPURL(url)))
    }

    // MARK: Clients

    /// A client using this cache was created.
    func clientStarted() {
        state.withLock { $0.attachedClients += 1 }
    }

    /// A client using this cache shut down; the last one takes the session entries with it.
    func clientShutDown() {
        let last = state.withLock { state in
            state.attachedClients = Swift.max(0, state.attachedClients - 1)
            return state.attachedClients == 0
        }
        if last { clearCachedResponses(for: .session) }
    }

    // MARK: Lookup

    /// A stored response ready to serve: its head, and its body held open.
    struct Stored: Sendable {
        var record: CacheEntryRecord
        var storage: HTTPCacheStoragePolicy
        /// The open body file, for a body not stored inline.
        var bodyFile: CacheReadFile?
        /// The head's fields as the rules read them, parsed once.
        var facts: CacheRules.StoredFacts
        /// The head file's identity when it was read.
        var identity: CacheFiles.Identity
        var head: CachedResponseHead { record.head }
    }

    /// The stored response for `key` whose Vary matches `requestHeaders` (§4.1), session entries first.
    func lookup(key: String, requestHeaders: HTTPFields) -> Stored? {
        let hash = Self.hash(key)
        for storage in [HTTPCacheStoragePolicy.session, .permanent] {
            if storage == .session, !state.withLock({ $0.sessionLock != nil }) { continue }
            let directory = directory(for: storage)
            let metaPath = directory + "/" + hash + ".meta"
            let record: CacheEntryRecord, facts: CacheRules.StoredFacts, identity: CacheFiles.Identity
            if let known = memo.withLock({ $0[metaPath] }), CacheFiles.identity(metaPath) == known.identity {
                (record, facts, identity) = (known.record, known.facts, known.identity)
            } else {
                let read: (bytes: [UInt8], identity: CacheFiles.Identity)?
                do { read = try CacheFiles.readWithIdentity(metaPath, limit: CacheEntryRecord.maxEncodedSize) } catch {
                    logger.warning("cache: cannot read an entry", metadata: ["file": "\(hash).meta", "error": "\(error)"])
                    continue
                }
                guard let read else { continue }
                guard let decoded = CacheEntryRecord.decode(read.bytes), decoded.head.key == key else {
                    discardCorrupt(storage: storage, hash: hash, why: "its head fails its checksum or names another URL")
                    continue
                }
                (record, facts, identity) = (decoded, CacheRules.StoredFacts(decoded.head), read.identity)
                remember(metaPath, Memo(identity: identity, record: record, facts: facts))
            }
            guard CacheRules.varyMatches(record.head, requestHeaders: requestHeaders) else { continue }
            var bodyFile: CacheReadFile?
            if case .file(let name, let length, _) = record.body {
                let file: CacheReadFile?
                do { file = try CacheReadFile(path: directory + "/" + name) } catch { continue }
                // Gone: another process replaced or evicted it between our two reads. Not corrupt.
                guard let file else { continue }
                guard file.size == length else {
                    discardCorrupt(storage: storage, hash: hash, why: "its body file has \(file.size) bytes, not \(length)")
                    continue
                }
                bodyFile = file
            }
            touch(storage: storage, hash: hash)
            return Stored(record: record, storage: storage, bodyFile: bodyFile, facts: facts, identity: identity)
        }
        return nil
    }

    /// Logs and removes an entry that cannot be trusted. The URL is not logged (its query may hold a token).
    func discardCorrupt(storage: HTTPCacheStoragePolicy, hash: String, why: String) {
        logger.warning("cache: discarding a damaged entry", metadata: ["file": "\(hash).meta", "reason": "\(why)"])
        removeFiles(storage: storage, hash: hash)
    }

    // MARK: Storing

    /// Stores a complete response: the body inline, or the finished temporary body file, which is flushed
    /// to disk and renamed into place before the head that refers to it is written.
    func commit(head: CachedResponseHead, body: PendingBody, storage: HTTPCacheStoragePolicy) throws(HTTPClientError) {
        let directory = try prepare(storage)
        let hash = Self.hash(head.key)
        var files: [String: Int] = [:]
        let recordBody: CacheEntryRecord.Body
        switch body {
        case .inline(let bytes):
            recordBody = .inline(bytes)
        case .file(let file, let length, let crc):
            let name = "\(hash).\(hexString(secureRandomBytes(CacheEntryRecord.bodyNameRandomBytes))).body"
            // Flushed before the head names it: after a crash the head refers to a whole body or to nothing.
            try file.sync()
            try file.commit(to: directory + "/" + name)
            recordBody = .file(name: name, length: length, crc: crc)
            files[name] = length
        }
        let bytes = CacheEntryRecord(head: head, body: recordBody).encode()
        files[hash + ".meta"] = bytes.count
        try withEntryLock(hash) { () throws(HTTPClientError) in
            // Not flushed: a head torn by a crash fails its checksum and is discarded, which a cache may do.
            try CacheFiles.replace(directory + "/" + hash + ".meta", with: bytes, sync: false)
            let other: HTTPCacheStoragePolicy = storage == .session ? .permanent : .session
            removeFilesHoldingEntryLock(storage: other, hash: hash)
            let replaced = state.withLock { state -> [String] in
                let id = Self.indexID(storage, hash)
                let old = state.index[id]
                state.totalSize -= old?.size ?? 0
                state.index[id] = IndexEntry(storage: storage, files: files, lastUse: now())
                state.totalSize += files.values.reduce(0, +)
                return old.map { $0.files.keys.filter { files[$0] == nil } } ?? []
            }
            for name in replaced { CacheFiles.remove(directory + "/" + name) }
        }
        evictIfNeeded()
    }

    /// Updates a stored response's head after a `304` (§4.3.4), keeping its body. With `persist` the head
    /// file is rewritten; without, only this object's view of it changes (see the middleware for when).
    func update(_ stored: Stored, head: CachedResponseHead, persist: Bool) {
        let record = CacheEntryRecord(head: head, body: stored.record.body)
        let hash = Self.hash(head.key)
        let metaPath = directory(for: stored.storage) + "/" + hash + ".meta"
        guard persist else {
            remember(metaPath, Memo(identity: stored.identity, record: record, facts: CacheRules.StoredFacts(head)))
            return
        }
        withEntryLock(hash) {
            // Another response for this URL was stored since `stored` was read (by this object or another
            // process): it is newer than what the 304 freshened, and the head written here would name a body
            // that may be gone. It stays; this response is served from memory only.
            guard CacheFiles.identity(metaPath) == stored.identity else {
                logger.debug("cache: not updating an entry replaced since it was read", metadata: ["file": "\(hash).meta"])
                return
            }
            memo.withLock { $0[metaPath] = nil }
            do {
                try CacheFiles.replace(metaPath, with: record.encode(), sync: false)
            } catch {
                logger.warning("cache: cannot update an entry", metadata: ["file": "\(hash).meta", "error": "\(error)"])
            }
        }
    }

    private func remember(_ path: String, _ entry: Memo) {
        memo.withLock { memo in
            if memo.count >= Self.memoLimit, memo[path] == nil { memo.removeAll(keepingCapacity: true) }
            memo[path] = entry
        }
    }

    /// A body on its way into the cache.
    enum PendingBody {
        case inline([UInt8])
        case file(CacheWriteFile, length: Int, crc: UInt32)
    }

    /// A temporary file for a body too big to keep inline, in the directory it will be committed to.
    func temporaryBodyFile(key: String, storage: HTTPCacheStoragePolicy) throws(HTTPClientError) -> CacheWriteFile {
        try CacheWriteFile(besidePath: try prepare(storage) + "/" + Self.hash(key) + ".body")
    }

    /// Removes the entries for `key` from both storages (§4.4 invalidation, or on request).
    func remove(key: String) {
        let hash = Self.hash(key)
        removeFiles(storage: .permanent, hash: hash)
        if state.withLock({ $0.sessionLock != nil }) { removeFiles(storage: .session, hash: hash) }
    }

    // MARK: Files and index

    private func directory(for storage: HTTPCacheStoragePolicy) -> String {
        storage == .session ? sessionDirectory : permanentDirectory
    }

    /// The directory for `storage`, creating (and locking) the session directory on first use.
    private func prepare(_ storage: HTTPCacheStoragePolicy) throws(HTTPClientError) -> String {
        guard storage == .session else { return permanentDirectory }
        try state.withLock { state throws(HTTPClientError) in
            guard state.sessionLock == nil else { return }
            try CacheFiles.makeDirectory(sessionDirectory)
            state.sessionLock = try CacheDirectoryLock(path: sessionDirectory + "/lock")
        }
        return sessionDirectory
    }

    private static func indexID(_ storage: HTTPCacheStoragePolicy, _ hash: String) -> String {
        (storage == .session ? "s/" : "p/") + hash
    }

    /// 32 hex digits of SHA-256 of the key: a file name that reveals nothing of the URL.
    static func hash(_ key: String) -> String {
        let digest = (try? HashFunction.sha256.hash(Array(key.utf8))) ?? Array(key.utf8.prefix(16))
        return hexString(digest.prefix(16))
    }

    private func touch(storage: HTTPCacheStoragePolicy, hash: String) {
        let time = now()
        state.withLock { $0.index[Self.indexID(storage, hash)]?.lastUse = time }
    }

    /// Removes an entry's head and body files, known or not to the index.
    private func removeFiles(storage: HTTPCacheStoragePolicy, hash: String) {
        withEntryLock(hash) { removeFilesHoldingEntryLock(storage: storage, hash: hash) }
    }

    private func removeFilesHoldingEntryLock(storage: HTTPCacheStoragePolicy, hash: String) {
        let directory = directory(for: storage)
        let metaPath = directory + "/" + hash + ".meta"
        memo.withLock { $0[metaPath] = nil }
        var names: Set<String> = [hash + ".meta"]
        if let bytes = try? CacheFiles.read(metaPath, limit: CacheEntryRecord.maxEncodedSize),
           let record = CacheEntryRecord.decode(bytes), case .file(let name, _, _) = record.body {
            names.insert(name)
        }
        let known = state.withLock { state -> IndexEntry? in
            let entry = state.index.removeValue(forKey: Self.indexID(storage, hash))
            state.totalSize -= entry?.size ?? 0
            return entry
        }
        if let known { names.formUnion(known.files.keys) }
        // The head first: once it is gone nobody opens the body by its name.
        CacheFiles.remove(metaPath)
        for name in names where name != hash + ".meta" { CacheFiles.remove(directory + "/" + name) }
    }

    private func dropIndex(of storage: HTTPCacheStoragePolicy, _ state: inout State) {
        for (id, entry) in state.index where entry.storage == storage {
            state.index[id] = nil
            state.totalSize -= entry.size
        }
    }

    /// The entries of a storage directory, from its files. With `removingDebris`, also removes temporary
    /// files of writers that are gone and body files no head refers to.
    private func scan(_ storage: HTTPCacheStoragePolicy, removingDebris: Bool) -> [String: IndexEntry] {
        let directory = directory(for: storage)
        let time = now()
        var groups: [String: (files: [String: Int], modified: Double)] = [:]
        for item in CacheFiles.list(directory) where !item.isDirectory {
            if item.name.hasSuffix(".tmp") {
                if removingDebris, Self.isAbandonedTemporary(item, now: time) {
                    CacheFiles.remove(directory + "/" + item.name)
                }
                continue
            }
            guard item.name.hasSuffix(".meta") || item.name.hasSuffix(".body"),
                  let dot = item.name.firstIndex(of: ".") else { continue }
            let hash = String(item.name[..<dot])
            groups[hash, default: ([:], 0)].files[item.name] = item.size
            groups[hash]!.modified = Swift.max(groups[hash]!.modified, item.modified)
        }
        var entries: [String: IndexEntry] = [:]
        for (hash, group) in groups {
            var files = group.files
            let bodies = files.keys.filter { $0.hasSuffix(".body") }
            if removingDebris, !bodies.isEmpty {
                var referenced: String?
                if files[hash + ".meta"] != nil,
                   let bytes = try? CacheFiles.read(directory + "/" + hash + ".meta", limit: CacheEntryRecord.maxEncodedSize),
                   let record = CacheEntryRecord.decode(bytes), case .file(let name, _, _) = record.body {
                    referenced = name
                }
                for body in bodies where body != referenced && time - group.modified > Self.orphanBodyAge {
                    CacheFiles.remove(directory + "/" + body)
                    files[body] = nil
                }
            }
            guard files[hash + ".meta"] != nil else { continue }
            entries[Self.indexID(storage, hash)] = IndexEntry(storage: storage, files: files, lastUse: group.modified)
        }
        return entries
    }

    /// `.NAME.PID.RANDOM.tmp` of a process that no longer runs, or older than a day.
    static func isAbandonedTemporary(_ item: CacheFiles.Item, now: Double) -> Bool {
        if now - item.modified > abandonedTemporaryAge { return true }
        let parts = item.name.split(separator: ".")
        guard parts.count >= 4, let pid = Int32(parts[parts.count - 3]) else { return true }
        if pid == CacheFiles.processID { return false }
        return !CacheFiles.isProcessAlive(pid)
    }

    /// Removes the session directories of cache objects that are gone (their lock is free).
    private func removeDeadSessions() {
        for item in CacheFiles.list(directory) where item.isDirectory && item.name.hasPrefix("session-") {
            let path = directory + "/" + item.name
            if path != sessionDirectory, !CacheDirectoryLock.isHeld(path + "/lock") {
                CacheFiles.removeDirectory(path)
            }
        }
    }

    /// Over ``maxSize``: rescan the directory (other processes write to it too), then remove the least
    /// recently used entries until the rest fit.
    private func evictIfNeeded() {
        guard state.withLock({ $0.totalSize > maxSize }) else { return }
        let permanent = scan(.permanent, removingDebris: false)
        let hasSession = state.withLock { $0.sessionLock != nil }
        let session = hasSession ? scan(.session, removingDebris: false) : [:]
        let victims = state.withLock { state -> [(HTTPCacheStoragePolicy, String)] in
            var fresh = permanent.merging(session) { a, _ in a }
            // This object's record of a use beats a file's modification time; other processes' entries have
            // only the latter.
            for id in fresh.keys {
                if let known = state.index[id] { fresh[id]!.lastUse = known.lastUse }
            }
            state.index = fresh
            state.totalSize = fresh.values.reduce(0) { $0 + $1.size }
            var victims: [(HTTPCacheStoragePolicy, String)] = []
            var total = state.totalSize
            for (id, entry) in fresh.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
                guard total > maxSize else { break }
                total -= entry.size
                victims.append((entry.storage, String(id.dropFirst(2))))
            }
            return victims
        }
        for (storage, hash) in victims {
            logger.debug("cache: evicting the least recently used entry", metadata: ["file": "\(hash).meta"])
            removeFiles(storage: storage, hash: hash)
        }
    }
}
