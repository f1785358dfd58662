#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux)
import CEpoll
#endif

/// An open file descriptor for a request body read from disk or a response body written to it: the small typed
/// door to `open`, `fstat`, `pread`, `write`, `ftruncate`, `fsync`, `flock` and `close`, and (in ``LocalFiles``)
/// `stat`, `rename` and `unlink`. Everything above `IO/` reaches the file system through these two.
///
/// One owner: a `LocalFile` is used by one task at a time (the body source that reads it, or the download that
/// writes it). The descriptor is closed exactly once, by ``close()`` or, if nobody called it, by `deinit`, so an
/// error or a cancelled task never leaks one.
final class LocalFile: @unchecked Sendable {
    // @unchecked: `fd` is only read after init; `closed` is touched by the single owner (see above), and
    // `deinit` runs when no one else holds the object.
    let path: String
    let fd: Int32  // read by `Socket.trySendFile` (IO/SendFile.swift)
    private var closed = false
    /// The descriptor waited on the event loop (a FIFO read as it becomes readable): deregistered before closing.
    private var waitedOnLoop = false

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close() }

    /// Opens `path` for reading; `what` names the file in errors ("request body file"). A directory, a missing
    /// or unreadable file is an `HTTPClientError.Code.invalidRequest` that names the path and the reason.
    ///
    /// The open never blocks (`O_NONBLOCK`): a FIFO's `open` would otherwise wait for a writer, in a call no deadline
    /// or cancellation reaches. A FIFO stays non-blocking and is read through ``readAvailable(upTo:)`` as it becomes
    /// readable (``isFIFO``); anything else goes back to blocking reads.
    static func openForReading(_ path: String, what: String) throws(HTTPClientError) -> LocalFile {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw fileError(.invalidRequest, "cannot open \(what) \(path)") }
        let file = LocalFile(fd: fd, path: path)
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw fileError(.invalidRequest, "cannot stat \(what) \(path)") }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            throw HTTPClientError(.invalidRequest, "\(what) \(path) is a directory")
        }
        file.isFIFO = (info.st_mode & S_IFMT) == S_IFIFO
        if !file.isFIFO { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
        return file
    }

    /// A FIFO, opened non-blocking: read it with ``readAvailable(upTo:)``.
    private(set) var isFIFO = false

    /// What one non-blocking read of a FIFO found.
    enum Available {
        case bytes([UInt8])
        case end
        case wouldBlock
    }

    /// One `read` of a FIFO opened by ``openForReading(_:what:)``: bytes, its end, or nothing yet. Call it only once
    /// the event loop said the FIFO is readable (``waitUntilReadable()``): before any writer has opened it, `read`
    /// returns 0 as if it had ended, while the event loop waits for a writer (Linux reports no hang-up until one
    /// came and went).
    func readAvailable(upTo count: Int) throws(HTTPClientError) -> Available {
        let bytes = try readSequential(upTo: count, wouldBlockIsEmpty: true)
        guard let bytes else { return .wouldBlock }
        return bytes.isEmpty ? .end : .bytes(bytes)
    }

    /// Waits on the event loop until the FIFO is readable (data, or its last writer gone); cancellation ends the
    /// wait with `HTTPClientError.Code.cancelled`. The request's total deadline bounds the wait from the body's
    /// writer (``RequestBodyReadAhead``), which cancels the task reading the file.
    func waitUntilReadable() async throws(HTTPClientError) {
        waitedOnLoop = true
        switch await IOBackend.notifier.wait(fd: fd, for: .readable, deadline: nil) {
        case .ready, .timedOut: return
        case .cancelled: throw .cancelled
        }
    }

    /// How a file is opened for writing.
    enum WriteMode {
        /// Create a new file; fail if one exists (`O_EXCL`): a unique temporary file.
        case createNew
        /// Open or create, keeping what is there; writes go to the end (`O_APPEND`): a resumable partial file.
        /// A symbolic link is refused (`O_NOFOLLOW`): whoever can write the directory could otherwise point the
        /// partial file at another of the user's files, which a resume then truncates and renames into place.
        /// The open does not block (`O_NONBLOCK`, cleared once open): a FIFO at the path would otherwise hold the
        /// task until some process opened it for reading. Such a FIFO fails to open (`ENXIO`) or is open, and the
        /// caller then refuses it as no regular file.
        case append
    }

    /// Opens `path` for writing with mode 0600 (a new file is private until it is renamed into place).
    static func openForWriting(_ path: String, mode: WriteMode) throws(HTTPClientError) -> LocalFile {
        let flags: Int32 = switch mode {
        case .createNew: O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC
        case .append: O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
        }
        let fd = open(path, flags, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP {
                throw HTTPClientError(.invalidRequest, "refused to write through \(path): it is a symbolic link")
            }
            if errno == ENXIO {
                throw HTTPClientError(.invalidRequest, "\(path) is a FIFO or socket, not a regular file")
            }
            throw fileError(.ioFailure, "cannot create \(path)")
        }
        if flags & O_NONBLOCK != 0 {
            let current = fcntl(fd, F_GETFL)
            if current >= 0 { _ = fcntl(fd, F_SETFL, current & ~O_NONBLOCK) }
        }
        return LocalFile(fd: fd, path: path)
    }

    /// The file's size now (`fstat`), and whether it is a regular file (a FIFO or a character device has no
    /// meaningful size: its body is read until it ends).
    func status() throws(HTTPClientError) -> (size: Int, isRegular: Bool) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Self.fileError(.ioFailure, "cannot stat \(path)") }
        return (Int(info.st_size), (info.st_mode & S_IFMT) == S_IFREG)
    }

    /// Up to `count` bytes from `offset` (`pread`, so the file position is never shared); fewer at the end of
    /// the file, empty past it.
    func read(upTo count: Int, at offset: Int) throws(HTTPClientError) -> [UInt8] {
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { storage, initialized in
            initialized = 0
            while initialized < count {
                let n = pread(fd, storage.baseAddress! + initialized, count - initialized, off_t(offset + initialized))
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                if n == 0 { return }
                initialized += n
            }
        }
        if failure != 0 {
            errno = failure
            throw Self.fileError(.ioFailure, "cannot read \(path)")
        }
        return bytes
    }

    /// Up to `count` bytes from the current position (`read`): for a pipe or a device, which has no offsets.
    func readSequential(upTo count: Int) throws(HTTPClientError) -> [UInt8] {
        try readSequential(upTo: count, wouldBlockIsEmpty: false) ?? []
    }

    /// A `read`; nil for `EAGAIN` when `wouldBlockIsEmpty`.
    private func readSequential(upTo count: Int, wouldBlockIsEmpty: Bool) throws(HTTPClientError) -> [UInt8]? {
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { storage, initialized in
            initialized = 0
            while true {
                let n = Glibc.read(fd, storage.baseAddress!, count)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                initialized = n
                return
            }
        }
        if wouldBlockIsEmpty, failure == EAGAIN || failure == EWOULDBLOCK { return nil }
        if failure != 0 {
            errno = failure
            throw Self.fileError(.ioFailure, "cannot read \(path)")
        }
        return bytes
    }

    /// Writes all of `bytes`.
    func write(_ bytes: ArraySlice<UInt8>) throws(HTTPClientError) {
        var failure: Int32 = 0
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += n
            }
        }
        if failure != 0 {
            errno = failure
            throw Self.fileError(.ioFailure, "cannot write \(path)")
        }
    }

    /// Cuts the file to `length` bytes.
    func truncate(to length: Int) throws(HTTPClientError) {
        guard ftruncate(fd, off_t(length)) == 0 else { throw Self.fileError(.ioFailure, "cannot truncate \(path)") }
    }

    /// Flushes the file's bytes to disk, so that a rename after it never exposes a file whose contents a crash lost.
    func sync() throws(HTTPClientError) {
        guard fsync(fd) == 0 else { throw Self.fileError(.ioFailure, "cannot flush \(path) to disk") }
    }

    /// Takes an exclusive advisory lock (`flock`) without waiting; false if another process or descriptor holds it.
    func tryLock() -> Bool {
        flock(fd, LOCK_EX | LOCK_NB) == 0
    }

    /// Whether the file at `path` is still this open file (same device and inode): false once it was renamed
    /// away or removed, and another file may have taken its name.
    func isStill(at path: String) -> Bool {
        var open = stat(), named = stat()
        guard fstat(fd, &open) == 0, stat(path, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    /// Gives the file, about to replace `destination`, the mode that file has (its permission bits), or for a new
    /// destination the mode a new file of the user's gets (``LocalFiles/newFileMode()``), as curl's output files
    /// (it writes over the existing file in place, keeping its mode): a download's temporary file is 0600 while it
    /// is written, and keeps that mode through the rename unless changed. A 0600 key file downloaded again stays
    /// 0600. Only the permission bits: set-user-ID, set-group-ID and sticky are never carried over to new bytes
    /// (the kernel clears the first two when an unprivileged process writes the file in place, too).
    func giveMode(replacing destination: String) {
        var info = stat()
        let mode = stat(destination, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
            ? info.st_mode & 0o777 : LocalFiles.newFileMode()
        _ = fchmod(fd, mode)
    }

    /// Closes the descriptor (the lock goes with it). Later calls do nothing.
    func close() {
        guard !closed else { return }
        closed = true
        if waitedOnLoop { IOBackend.notifier.deregister(fd: fd) }
        Glibc.close(fd)
    }

    static func fileError(_ code: HTTPClientError.Code, _ message: String) -> HTTPClientError {
        let number = errno
        return HTTPClientError(code, "\(message): \(String(cString: strerror(number)))", errno: number)
    }
}

/// Whole-path operations for downloads: size, rename into place, remove, and the directory a path is in.
package enum LocalFiles {
    /// The size of the file at `path`, or nil if there is none.
    static func size(atPath path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_size)
    }

    /// Whether something (a file, a directory) exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Whether something other than a regular file is at `path` (a device such as `/dev/null`, a FIFO, a
    /// socket, a directory); false when nothing is there.
    static func isSpecialFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFREG
    }

    /// Whether `path` is a directory.
    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// The mode a file created now gets from `open(…, 0666)`: 0666 less the process's umask. Read from
    /// `/proc/self/status` (Linux 4.7 and later): `umask(2)` can only read the mask by setting it, which would race
    /// another thread creating a file. 0600 when it cannot be read (the most private umask's).
    static func newFileMode() -> mode_t {
        var mask: mode_t = 0o077
        if let status = try? PrivateFile.contents(atPath: "/proc/self/status", what: "process status", regularFileOnly: false),
           let line = String(decoding: status, as: UTF8.self).split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
           let value = mode_t(String(line.dropFirst("Umask:".count).filter { $0 != " " && $0 != "\t" }), radix: 8) {
            mask = value
        }
        return 0o666 & ~mask
    }

    /// Moves `source` over `destination` in one step (`rename`, atomic within a file system), then makes the
    /// rename durable by syncing the directory (best effort: some file systems refuse `fsync` on one). A
    /// `destination` that is a symbolic link is written through, as curl writes its output file in place: the
    /// rename lands on the link's target (``resolvingSymbolicLinks(_:)``) and the link stays. A move that must not
    /// replace anything does not follow one: a link there is something there.
    static func moveIntoPlace(_ source: String, _ destination: String, replacingExisting: Bool = true) throws(HTTPClientError) {
        let destination = replacingExisting ? resolvingSymbolicLinks(destination) : destination
        if replacingExisting {
            guard rename(source, destination) == 0 else {
                throw LocalFile.fileError(.ioFailure, "cannot move \(source) to \(destination)")
            }
        } else {
            try moveWithoutReplacing(source, destination)
        }
        let directoryFD = open(directory(of: destination), O_RDONLY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            Glibc.close(directoryFD)
        }
    }

    /// `rename` that fails when `destination` exists: `renameat2(RENAME_NOREPLACE)`, or, on a file system without
    /// it, a hard link and the source's removal (the link fails on an existing name just the same).
    private static func moveWithoutReplacing(_ source: String, _ destination: String) throws(HTTPClientError) {
        if ahttp_rename_noreplace(source, destination) == 0 { return }
        var failure = errno
        if failure == EINVAL || failure == ENOSYS {
            if link(source, destination) == 0 {
                unlink(source)
                return
            }
            failure = errno
        }
        if failure == EEXIST {
            throw HTTPClientError(.ioFailure, "\(destination) already exists, and a download named by the server never replaces a file")
        }
        errno = failure
        throw LocalFile.fileError(.ioFailure, "cannot move \(source) to \(destination)")
    }

    /// Removes the file at `path`; a missing file is not an error.
    static func remove(_ path: String) {
        _ = unlink(path)
    }

    /// The directory part of `path` ("." for a bare name).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `path` with the symbolic links at its end followed: the file a write to `path` would reach (the target of a
    /// link, of a link to a link, …; a relative target is read from the link's directory). A target that does not
    /// exist yet is returned too, as `open(…, O_CREAT)` would create it. `path` itself when it is no link, and for
    /// a loop (more than 40 links, Linux's limit), which nothing can be written through. Only the last component
    /// is followed: the kernel follows a link among the directories on its own.
    package static func resolvingSymbolicLinks(_ path: String) -> String {
        var current = path
        for _ in 0..<40 {
            var info = stat()
            guard lstat(current, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK else { return current }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlink(current, &buffer, buffer.count - 1)
            guard count > 0 else { return current }
            let target = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if target.hasPrefix("/") {
                current = target
            } else {
                let directory = directory(of: current)
                current = (directory == "/" ? "" : directory) + "/" + target
            }
        }
        return path
    }

    /// A name for a temporary file beside `path`, unique to this process and call:
    /// `dir/.name.<pid>.<random>.download`. Beside the file a symbolic link at `path` points to
    /// (``resolvingSymbolicLinks(_:)``), so that the rename into place is within one directory and lands on it.
    static func temporaryPath(beside path: String) -> String {
        let path = resolvingSymbolicLinks(path)
        let directory = directory(of: path)
        let name = path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
        let unique = "\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        return (directory == "/" ? "" : directory) + "/.\(shortened(name, toBytes: 200)).\(unique).download"
    }

    /// The longest file name most Linux file systems take (`NAME_MAX`).
    static let maxNameBytes = 255

    /// `name` cut to at most `limit` bytes of UTF-8, at a character boundary: a temporary name built from a long
    /// (legal) file name would pass `NAME_MAX` and fail to be created. Its unique part keeps it unique.
    static func shortened(_ name: String, toBytes limit: Int) -> String {
        guard name.utf8.count > limit else { return name }
        var kept = ""
        var count = 0
        for character in name {
            let size = character.utf8.count
            guard count + size <= limit else { break }
            kept.append(character)
            count += size
        }
        return kept
    }

    /// `path` with `suffix` added to its file name (`x.iso` → `x.iso.part`), the same every time; a name that would
    /// pass `NAME_MAX` is cut and given a hash of the whole name instead (`<cut>-<16 hex digits><suffix>`), so that
    /// long but legal names can be downloaded and resumed.
    static func sibling(of path: String, suffix: String) -> String {
        let slash = path.lastIndex(of: "/")
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard name.utf8.count + suffix.utf8.count > maxNameBytes else { return path + suffix }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a, 64 bits: stable across runs and processes
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        let tag = "-" + String(repeating: "0", count: 16 - digits.count) + digits
        let cut = shortened(name, toBytes: maxNameBytes - suffix.utf8.count - tag.utf8.count)
        return (slash.map { String(path[...$0]) } ?? "") + cut + tag + suffix
    }
}
