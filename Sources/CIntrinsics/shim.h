#ifndef AHTTP_INTRINSICS_SHIM_H
#define AHTTP_INTRINSICS_SHIM_H

// Compiler intrinsics Swift has no spelling for, as static inline functions (no code of their own to link).

/// Hints the CPU to start loading the cache line holding `address` for reading, to keep in all cache levels.
/// Never faults, whatever the address.
static inline void ahttp_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

#endif
