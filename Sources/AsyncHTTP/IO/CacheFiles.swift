#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The file-system calls of the download cache (``HTTPCache``), behind a small typed API. Every file is
/// created with mode 0600 and every directory with 0700: a cache holds what the user downloaded.
enum CacheFiles {
    /// One entry of a directory listing.
    struct Item: Sendable, Equatable {
        var name: String
        var size: Int
        /// Last modification, seconds since 1970.
        var modified: Double
        var isDirectory: Bool
    }

    /// This process's id, which names temporary files so that a later run can tell a dead writer's.
    static var processID: Int32 { getpid() }

    /// Creates `path` and its missing parents, each with mode 0700; an existing directory is fine.
    static func makeDirectory(_ path: String) throws(HTTPClientError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + component
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                throw fileError("could not create the cache directory \(prefix)")
            }
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw HTTPClientError(.ioFailure, "the cache directory \(path) is not a directory")
        }
    }

    /// What tells one version of a file from another: a rename-replace changes the inode, a rewrite in place
    /// the size or the modification time (nanoseconds).
    struct Identity: Sendable, Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int
    }

    private static func identity(_ info: stat) -> Identity {
        Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int(info.st_size),
                 modifiedSeconds: Int(info.st_mtim.tv_sec), modifiedNanoseconds: Int(info.st_mtim.tv_nsec))
    }

    /// The identity of the file at `path` now, or nil if there is none.
    static func identity(_ path: String) -> Identity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return identity(info)
    }

    /// A whole small file, or nil if it does not exist (or vanished: another process evicted it).
    /// Files larger than `limit` are refused with nil too: they are not what the cache wrote.
    static func read(_ path: String, limit: Int) throws(HTTPClientError) -> [UInt8]? {
        try readWithIdentity(path, limit: limit)?.bytes
    }

    /// ``read(_:limit:)`` and the identity of the file that was read (from the open descriptor).
    /// Anything but a regular file (a FIFO, a device) is refused with nil too; the open does not block on one.
    static func readWithIdentity(_ path: String, limit: Int) throws(HTTPClientError) -> (bytes: [UInt8], identity: Identity)? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw fileError("could not open \(path)")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw fileError("could not stat \(path)") }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        let size = Int(info.st_size)
        guard size <= limit else { return nil }
        let identity = identity(info)
        var bytes = [UInt8](repeating: 0, count: size)
        var offset = 0
        while offset < size {
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + offset, size - offset, off_t(offset)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw fileError("could not read \(path)")
            }
            if count == 0 { break }
            offset += count
        }
        return (offset == size ? bytes : Array(bytes[..<offset]), identity)
    }

    /// Writes `bytes` to a temporary file beside `path` and renames it over `path`: readers see the old
    /// file or the new one, never a part. With `sync`, the data is flushed to disk before the rename.
    static func replace(_ path: String, with bytes: [UInt8], sync: Bool) throws(HTTPClientError) {
        let file = try CacheWriteFile(besidePath: path)
        try file.append(bytes[...])
        if sync { try file.sync() }
        try file.commit(to: path)
    }

    /// Removes a file; one already gone is fine.
    static func remove(_ path: String) {
        _ = unlink(path)
    }

    /// The regular files and directories in `directory` (not `.` and `..`); empty if it cannot be read.
    static func list(_ directory: String) -> [Item] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var items: [Item] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            var info = stat()
            guard lstat(directory + "/" + name, &info) == 0 else { continue }
            let kind = info.st_mode & S_IFMT
            guard kind == S_IFREG || kind == S_IFDIR else { continue }
            let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            items.append(Item(name: name, size: Int(info.st_size), modified: modified, isDirectory: kind == S_IFDIR))
        }
        return items
    }

    /// Removes the regular files in `directory`, then the directory (one level: the cache nests no deeper).
    static func removeDirectory(_ directory: String) {
        for item in list(directory) where !item.isDirectory { remove(directory + "/" + item.name) }
        _ = rmdir(directory)
    }

    /// Whether process `pid` still runs (a signal-0 probe: EPERM means it runs as another user).
    static func isProcessAlive(_ pid: Int32) -> Bool {
        pid > 0 && (kill(pid, 0) == 0 || errno == EPERM)
    }

    fileprivate static func fileError(_ message: String) -> HTTPClientError {
        let code = errno
        return HTTPClientError(.ioFailure, "\(message): \(String(cString: strerror(code)))", errno: code)
    }
}

/// A cache file open for reading, closed when the last reference goes. Reads are positional (`pread`),
/// so one handle serves any number of readers; the file stays readable after another process replaces
/// or removes its name.
final class CacheReadFile: Sendable {
    private let fd: Int32
    /// The size when opened.
    let size: Int
    let path: String

    /// Opens `path`; nil if it does not exist or is no regular file (the cache writes only regular files, and
    /// the open does not block on a FIFO put in their place).
    init?(path: String) throws(HTTPClientError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw CacheFiles.fileError("could not open \(path)")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = CacheFiles.fileError("could not stat \(path)")
            close(fd)
            throw error
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return nil
        }
        self.fd = fd
        self.size = Int(info.st_size)
        self.path = path
    }

    /// Up to `count` bytes at `offset`; fewer only at the end of the file.
    func read(at offset: Int, count: Int) throws(HTTPClientError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CacheFiles.fileError("could not read \(path)")
            }
            if n == 0 { break }
            done += n
        }
        if done < count { bytes.removeLast(count - done) }
        return bytes
    }

    deinit { close(fd) }
}

/// A new private file (mode 0600) written beside its final name and renamed into place by ``commit(to:)``;
/// discarded (unlinked) if it is dropped uncommitted, so a cancelled or failed write leaves nothing behind.
/// Its name, `.NAME.PID.RANDOM.tmp`, lets a later run remove what a crashed writer left.
///
/// Used by one writer at a time (`@unchecked Sendable`: the cache's recorder owns it and serialises every
/// call behind its own lock).
final class CacheWriteFile: @unchecked Sendable {
    private var fd: Int32
    let temporaryPath: String
    private var committed = false

    init(besidePath path: String) throws(HTTPClientError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        temporaryPath = directory + "/.\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        fd = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CacheFiles.fileError("could not create \(temporaryPath)") }
    }

    func append(_ bytes: ArraySlice<UInt8>) throws(HTTPClientError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CacheFiles.fileError("could not write \(temporaryPath)")
            }
            offset += n
        }
    }

    /// Flushes the data to disk (`fsync`).
    func sync() throws(HTTPClientError) {
        guard fsync(fd) == 0 else { throw CacheFiles.fileError("could not flush \(temporaryPath) to disk") }
    }

    /// Renames the file to `path`, replacing what was there.
    func commit(to path: String) throws(HTTPClientError) {
        close(fd)
        fd = -1
        guard rename(temporaryPath, path) == 0 else {
            let error = CacheFiles.fileError("could not rename \(temporaryPath) to \(path)")
            unlink(temporaryPath)
            committed = true
            throw error
        }
        committed = true
    }

    /// Closes and removes the temporary file.
    func discard() {
        if fd >= 0 { close(fd) }
        fd = -1
        if !committed { unlink(temporaryPath) }
        committed = true
    }

    deinit { discard() }
}

/// An exclusive `flock` on a file, held for the life of this object: marks a session directory as in use,
/// so that another process (or a later run) removes only the session directories of caches that are gone.
final class CacheDirectoryLock: Sendable {
    private let fd: Int32

    /// Creates (0600) and locks `path`; throws if it cannot be created or is locked by someone else.
    init(path: String) throws(HTTPClientError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CacheFiles.fileError("could not create \(path)") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let error = CacheFiles.fileError("could not lock \(path)")
            close(fd)
            throw error
        }
        self.fd = fd
    }

    /// Whether a live lock holder has `path` locked. A missing file is not held.
    static func isHeld(_ path: String) -> Bool {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 {
            _ = flock(fd, LOCK_UN)
            return false
        }
        return true
    }

    deinit { close(fd) }
}
