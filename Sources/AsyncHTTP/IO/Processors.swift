#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if os(Linux)
import CEpoll
#endif

/// The processors this process may run on.
enum Processors {
    /// The processors in the process's affinity mask (`sched_getaffinity`; `taskset` and cpusets narrow it), or
    /// those online if the mask cannot be read; at least 1. Read once. A CPU quota (a container's `cpu.max`) is
    /// not a mask and is not seen.
    static let available: Int = {
        #if os(Linux)
        let count = Int(ahttp_affinity_processor_count())
        if count > 0 { return count }
        #endif
        return max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }()
}
