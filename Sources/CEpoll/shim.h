// Linux readiness APIs that Glibc's Swift module does not export.
#ifndef ASYNCHTTP_CEPOLL_SHIM_H
#define ASYNCHTTP_CEPOLL_SHIM_H
#ifdef __linux__
#include <stdint.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

// The processors in this process's affinity mask, or 0 if it cannot be read. glibc declares sched_getaffinity
// only under _GNU_SOURCE, which would change the system headers this module shares with Glibc's, so the
// declaration is local (pid_t is int; the mask is 1,024 bits, cpu_set_t's size).
static inline int ahttp_affinity_processor_count(void) {
    extern int sched_getaffinity(int pid, size_t size, void *mask);
    uint64_t mask[16] = {0};
    if (sched_getaffinity(0, sizeof(mask), mask) != 0) { return 0; }
    int count = 0;
    for (int i = 0; i < 16; i++) { count += __builtin_popcountll(mask[i]); }
    return count;
}

// Names the calling thread (at most 15 bytes are kept) for `top -H`, `perf` and debuggers: prctl(PR_SET_NAME).
// glibc's pthread_setname_np is declared only under _GNU_SOURCE and prctl is variadic, which Swift cannot call.
static inline int ahttp_set_thread_name(const char *name) {
    extern int prctl(int option, ...);
    return prctl(15 /* PR_SET_NAME */, name, 0, 0, 0);
}

// 1 if the calling thread last asked with another generation (or never), and records `generation`; 0 if it
// last asked with this one. The event loop's once-per-thread scheduling check, redone when the setting changes.
static inline int ahttp_thread_generation_changed(int generation) {
    static _Thread_local int seen;
    if (seen == generation) { return 0; }
    seen = generation;
    return 1;
}

// The calling thread's kernel id, for sched_setscheduler on it from another thread. glibc declares gettid only
// under _GNU_SOURCE (see above); pid_t is int.
static inline int ahttp_thread_id(void) {
    extern int gettid(void);
    return gettid();
}

// rename(2) that fails with EEXIST instead of replacing `to`: renameat2(RENAME_NOREPLACE), relative to the working
// directory. Declared locally for the reason above (glibc declares it only under _GNU_SOURCE).
static inline int ahttp_rename_noreplace(const char *from, const char *to) {
    extern int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);
    return renameat2(-100 /* AT_FDCWD */, from, -100, to, 1 /* RENAME_NOREPLACE */);
}
#endif
#endif
