// CRC-32 (gzip's) by folding with carry-less multiplication: Gopal et al., "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ Instruction" (Intel, 2009), in its bit-reflected form. The constants are the
// paper's for the polynomial 0x104C11DB7, reflected: x^(4*128+32) mod P and x^(4*128-32) mod P fold four
// 128-bit lanes 512 bits ahead, x^(128+32) and x^(128-32) mod P fold one lane 128 bits ahead, x^64 mod P
// takes 96 bits to 64, and P with mu = floor(x^64 / P) finish with a Barrett reduction.
//
// Why it is here: with zlib's own check, CRC-32 was 14 % of the client's CPU when inflating gzip bodies
// (docs/performance.md); the compression middleware switches zlib's check off for gzip members and checks the
// trailer itself with this function. It is tested against zlib's crc32 on every length and alignment that
// matters (Tests/AsyncHTTPTests/CRC32Tests.swift).
#include "ahttp_crc32.h"

#include <stdatomic.h>
#include <zlib.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

// One fold: `x` carried 128 bits (or 512, with k1k2) further by the constants in `k`, added to `next`.
__attribute__((target("pclmul,sse4.1")))
static inline __m128i fold(__m128i x, __m128i k, __m128i next) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

// Returns the raw (not inverted) CRC register after `length` bytes; `length` >= 64 and a multiple of 16.
__attribute__((target("pclmul,sse4.1")))
static uint32_t fold_pclmul(const unsigned char *bytes, size_t length, uint32_t crc) {
    const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
    const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
    const __m128i k5k0 = _mm_set_epi64x(0, 0x0163cd6124);
    const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);

    __m128i x1 = _mm_loadu_si128((const __m128i *)(bytes + 0x00));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(bytes + 0x10));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(bytes + 0x20));
    __m128i x4 = _mm_loadu_si128((const __m128i *)(bytes + 0x30));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
    bytes += 64;
    length -= 64;

    // Four lanes, 64 bytes a step.
    while (length >= 64) {
        x1 = fold(x1, k1k2, _mm_loadu_si128((const __m128i *)(bytes + 0x00)));
        x2 = fold(x2, k1k2, _mm_loadu_si128((const __m128i *)(bytes + 0x10)));
        x3 = fold(x3, k1k2, _mm_loadu_si128((const __m128i *)(bytes + 0x20)));
        x4 = fold(x4, k1k2, _mm_loadu_si128((const __m128i *)(bytes + 0x30)));
        bytes += 64;
        length -= 64;
    }

    // The four lanes into one.
    x1 = fold(x1, k3k4, x2);
    x1 = fold(x1, k3k4, x3);
    x1 = fold(x1, k3k4, x4);

    // One lane, 16 bytes a step.
    while (length >= 16) {
        x1 = fold(x1, k3k4, _mm_loadu_si128((const __m128i *)bytes));
        bytes += 16;
        length -= 16;
    }

    // 128 bits to 64.
    const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
    x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
    x2 = _mm_srli_si128(x1, 4);
    x1 = _mm_and_si128(x1, low32);
    x1 = _mm_clmulepi64_si128(x1, k5k0, 0x00);
    x1 = _mm_xor_si128(x1, x2);

    // Barrett reduction to 32 bits.
    x2 = _mm_and_si128(x1, low32);
    x2 = _mm_clmulepi64_si128(x2, poly, 0x10);
    x2 = _mm_and_si128(x2, low32);
    x2 = _mm_clmulepi64_si128(x2, poly, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}

// 0: not asked yet; 1: no; 2: yes. Relaxed atomics: every thread computes the same answer.
static _Atomic int accelerated = 0;

static int detect(void) {
    int known = atomic_load_explicit(&accelerated, memory_order_relaxed);
    if (known != 0) return known == 2;
    unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
    int yes = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_PCLMUL) && (ecx & bit_SSE4_1);
    atomic_store_explicit(&accelerated, yes ? 2 : 1, memory_order_relaxed);
    return yes;
}

int ahttp_crc32_is_accelerated(void) { return detect(); }

uint32_t ahttp_crc32(uint32_t crc, const unsigned char *bytes, size_t length) {
    if (length >= 64 && detect()) {
        size_t bulk = length & ~(size_t)15;
        crc = ~fold_pclmul(bytes, bulk, ~crc);
        bytes += bulk;
        length -= bulk;
    }
    return length == 0 ? crc : (uint32_t)crc32_z(crc, bytes, length);
}

#else

int ahttp_crc32_is_accelerated(void) { return 0; }

uint32_t ahttp_crc32(uint32_t crc, const unsigned char *bytes, size_t length) {
    return (uint32_t)crc32_z(crc, bytes, length);
}

#endif
