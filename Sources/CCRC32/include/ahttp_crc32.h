// CRC-32 as gzip defines it (RFC 1952 §8, the polynomial 0xEDB88320 reflected), with zlib's calling convention.
#ifndef ASYNCHTTP_CRC32_H
#define ASYNCHTTP_CRC32_H

#include <stddef.h>
#include <stdint.h>

/// Continues `crc` (0 to start, or a previous return value) over `length` bytes at `bytes`, exactly as zlib's
/// `crc32_z` does. On x86-64 processors with PCLMULQDQ and SSE4.1 the bulk is folded with carry-less
/// multiplication (16 bytes a step, four lanes), about ten times zlib 1.2's table code; elsewhere, and for the
/// last few bytes, it is zlib's `crc32_z`.
uint32_t ahttp_crc32(uint32_t crc, const unsigned char *bytes, size_t length);

/// Whether ``ahttp_crc32`` folds with carry-less multiplication on this processor (for tests and benchmarks).
int ahttp_crc32_is_accelerated(void);

#endif
