#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension Socket {
    /// Whether ``trySendFile(from:offset:count:)`` exists on this platform (Linux's `sendfile(2)`).
    #if os(Linux)
    static let canSendFile = true
    #else
    static let canSendFile = false
    #endif

    /// One `sendfile` of up to `count` bytes of `file`, starting at `offset`: the kernel copies from the page
    /// cache to the socket, so a file upload never passes through user-space buffers. `.done(0)` with a
    /// nonzero `count` means the file ended early (it is shorter than it was said to be).
    ///
    /// `sendfile` has no `MSG_NOSIGNAL`: a peer that has gone would raise `SIGPIPE`, whose default action ends
    /// the whole process. The call runs with `SIGPIPE` blocked on this thread, and a `SIGPIPE` it raised (the
    /// call then fails with `EPIPE`) is taken back from the thread's pending set before the mask is restored —
    /// what `send` with `MSG_NOSIGNAL` does in one step.
    func trySendFile(from file: LocalFile, offset: Int, count: Int) -> SyscallOutcome {
        #if os(Linux)
        var pipeOnly = sigset_t()
        sigemptyset(&pipeOnly)
        sigaddset(&pipeOnly, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeOnly, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        var position = off_t(offset)
        while true {
            let n = sendfile(fd, file.fd, &position, count)
            if n >= 0 { return .done(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case EPIPE:
                var now = timespec()
                _ = sigtimedwait(&pipeOnly, nil, &now)  // the SIGPIPE this call raised, if it is pending
                return .failed(EPIPE)
            case let code: return .failed(code)
            }
        }
        #else
        return .failed(ENOSYS)
        #endif
    }
}
