#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a `pthread_mutex_t`.
///
/// Why not `Synchronization.Mutex`: on Linux it synchronizes through the standard library's own atomics
/// and raw futex calls, which the thread sanitizer cannot see, so every access under it is reported as a
/// race. A pthread mutex is intercepted by the sanitizer, costs the same uncontended, and keeps CI's
/// sanitizer pass meaningful (SwiftNIO's `NIOLock` is a pthread mutex for the same reason).
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only read or written while `mutex` is held (see `withLock`).
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inlinable @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
