#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading and crash-safely replacing small files that may hold secrets (cookie files, credential files).
enum PrivateFile {
    /// The file's bytes, or nil if it does not exist. With `regularFileOnly`, anything but a regular file (a
    /// FIFO planted in its place, a device) counts as absent, and the open does not wait for a FIFO's writer. A
    /// file the user names (a cookie file, which may be a pipe from process substitution) is read as it is.
    static func contents(atPath path: String, what: String, regularFileOnly: Bool = false) throws(HTTPClientError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | (regularFileOnly ? O_NONBLOCK : 0))
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw fileError("could not open \(what) \(path)")
        }
        defer { close(fd) }
        if regularFileOnly {
            var info = stat()
            guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let readCount = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if readCount < 0 {
                if errno == EINTR { continue }
                throw fileError("could not read \(what) \(path)")
            }
            if readCount == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<readCount])
        }
    }

    /// Write-to-temporary (created with mode 0600, so no other user ever sees the contents), fsync, rename,
    /// fsync the directory: the usual recipe for a crash-safe replace (curl writes to a temporary file and
    /// renames it too, `Curl_fopen`). A crash leaves the old file or the new one, never half of one.
    static func writeAtomically(_ bytes: [UInt8], toPath path: String) throws(HTTPClientError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let fileName = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let unique = "\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        let temporaryPath = (directory == "/" ? "" : directory) + "/.\(LocalFiles.shortened(fileName, toBytes: 200)).\(unique).tmp"

        let fd = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw fileError("could not create \(temporaryPath)") }
        var succeeded = false
        defer { if !succeeded { unlink(temporaryPath) } }
        do {
            defer { close(fd) }
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw fileError("could not write \(temporaryPath)")
                }
                offset += written
            }
            guard fsync(fd) == 0 else { throw fileError("could not flush \(temporaryPath) to disk") }
        }
        guard rename(temporaryPath, path) == 0 else { throw fileError("could not rename \(temporaryPath) to \(path)") }
        succeeded = true
        // Make the rename itself durable. Best effort: some file systems refuse fsync on a directory.
        let directoryFD = open(directory, O_RDONLY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    private static func fileError(_ message: String) -> HTTPClientError {
        let code = errno
        return HTTPClientError(.ioFailure, "\(message): \(String(cString: strerror(code)))", errno: code)
    }
}
