#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The archive's only door to the file system: make a directory, and replace a file atomically (a temporary
/// file beside it, written, `fsync`ed, renamed over it), so that a reader never sees half an archive file and a
/// failure leaves the old file as it was.
enum WebArchiveFiles {
    /// Creates `path` and its missing parents (mode 0755); an existing directory is fine.
    static func makeDirectory(_ path: String) throws(WebArchiveError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw failure("cannot create directory \(prefix)")
            }
            prefix += "/"
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw WebArchiveError(.outputFailed, "\(path) exists and is not a directory")
        }
    }

    /// Writes `bytes` to `path` through `path.<pid>.<random>.tmp` and a rename (mode 0644, a page's files are
    /// meant to be read). The temporary file is removed when anything fails.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(WebArchiveError) {
        let temporary = "\(path).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("cannot create \(temporary)") }
        var written = 0
        var ok = true
        bytes.withUnsafeBytes { buffer in
            // Bounded: each pass writes at least one byte or stops (EINTR is retried, as write(2) allows).
            while written < buffer.count {
                let n = write(fd, buffer.baseAddress! + written, buffer.count - written)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    ok = false
                    return
                }
                written += n
            }
        }
        let savedErrno = errno
        if ok && fsync(fd) != 0 { ok = false }
        let fsyncErrno = errno
        close(fd)
        guard ok else {
            unlink(temporary)
            errno = written < bytes.count ? savedErrno : fsyncErrno
            throw failure("cannot write \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            let error = failure("cannot rename \(temporary) to \(path)")
            unlink(temporary)
            throw error
        }
    }

    private static func failure(_ what: String) -> WebArchiveError {
        let code = errno
        let reason = strerror(code).map { String(cString: $0) } ?? "errno \(code)"
        return WebArchiveError(.outputFailed, "\(what): \(reason)")
    }
}
