// SPDX-License-Identifier: Apache-2.0
// The one header Swift sees of liblz4. Macros that Swift cannot import become CLZ4_-prefixed
// static inline functions here.
#ifndef CLZ4_SHIM_H
#define CLZ4_SHIM_H

#include <lz4.h>

/// LZ4_COMPRESSBOUND as a function; returns 0 when `size` exceeds LZ4_MAX_INPUT_SIZE.
static inline int CLZ4_compressBound(int size) {
    return LZ4_COMPRESSBOUND(size);
}

/// LZ4_MAX_INPUT_SIZE as a function.
static inline int CLZ4_maxInputSize(void) {
    return LZ4_MAX_INPUT_SIZE;
}

#endif
