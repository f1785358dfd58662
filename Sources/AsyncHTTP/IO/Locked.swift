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
///
/// It lives in AsyncHTTP, not AsyncHTTPCore, because Swift 6.3 does not inline or specialise a `package`
/// declaration across modules even when it is `@inlinable` (only `public` ones): from AsyncHTTPCore every
/// `withLock` in the library ran the generic, unspecialised code, and each new lock looked up its storage
/// class's metadata at run time. Inside the module that uses it most, whole-module optimisation specialises it.
/// The other products (metrics, tracing, the CLI) still reach it as a `package` type.
///
/// One allocation: the value and the mutex share a `ManagedBuffer` (value in its header, the mutex as its one
/// element), so a lock made per request costs one `malloc`, not two.
package struct Locked<Value>: @unchecked Sendable {
    // @unchecked: the value in `storage` is only read or written while its mutex is held (see `withLock`).
    @usableFromInline
    final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        @inlinable
        deinit {
            _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
        }
    }

    @usableFromInline let storage: Storage

    // Inlinable so that each caller gets a specialised copy: the generic one initialised the value through its
    // value witnesses and looked up the storage class's metadata at run time (perf: most of what making a
    // request's observation cost).
    @inlinable
    package init(_ value: Value) {
        storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in value }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            let result = pthread_mutex_init(mutex, nil)
            precondition(result == 0, "pthread_mutex_init failed: \(result)")
        }
    }

    /// The value's address, for reading the parts of it that nothing writes after `init`, without the lock
    /// (immutable fields beside the guarded ones, as `RequestObservation` keeps them). Valid while `self` is.
    /// Never use it for a part that `withLock` may write.
    @inlinable
    package var unlockedPointer: UnsafePointer<Value> {
        UnsafePointer(storage.withUnsafeMutablePointerToHeader { $0 })
    }

    @inlinable @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        // The pointers stay valid while `storage` lives, which `self` guarantees for this call.
        let (value, mutex) = storage.withUnsafeMutablePointers { ($0, $1) }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
