// Thin shims over zlib for what Swift cannot call directly: the init macros.
#ifndef ASYNCHTTP_CZLIB_SHIM_H
#define ASYNCHTTP_CZLIB_SHIM_H

#include <zlib.h>

static inline int ahttp_inflateInit2(z_streamp stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}
static inline int ahttp_deflateInit2(z_streamp stream, int level, int windowBits, int memLevel, int strategy) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, memLevel, strategy);
}

#endif
