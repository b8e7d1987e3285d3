// SPDX-License-Identifier: Apache-2.0
//
// Hardware CRC-32C (Castagnoli): the SSE 4.2 crc32 instruction on x86-64, the CRC extension's
// crc32c instructions on arm64. The update function is compiled for that instruction set alone
// and called only after the run-time check, so the library runs on CPUs without them (Swift then
// uses its portable slicing-by-8 code).

#include "ccrc32c.h"

#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>

#define CCRC32C_TARGET __attribute__((target("sse4.2")))
#define CCRC32C_WORD(crc, word) ((uint32_t)_mm_crc32_u64((crc), (word)))
#define CCRC32C_BYTE(crc, byte) _mm_crc32_u8((crc), (byte))

int ccrc32c_hardware_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

#elif defined(__aarch64__)
#include <arm_acle.h>
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

#define CCRC32C_TARGET __attribute__((target("crc")))
#define CCRC32C_WORD(crc, word) __crc32cd((crc), (word))
#define CCRC32C_BYTE(crc, byte) __crc32cb((crc), (byte))

int ccrc32c_hardware_available(void) {
#if defined(__APPLE__)
    return 1;  // every arm64 Apple CPU has the CRC extension
#elif defined(__linux__)
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) ? 1 : 0;
#else
    return 0;
#endif
}

#endif

#if defined(CCRC32C_TARGET)

CCRC32C_TARGET
uint32_t ccrc32c_hardware_update(uint32_t state, const void *bytes, size_t count) {
    const unsigned char *p = (const unsigned char *)bytes;
    uint32_t crc = state;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = CCRC32C_WORD(crc, word);
        p += 8;
        count -= 8;
    }
    while (count > 0) {
        crc = CCRC32C_BYTE(crc, *p);
        p += 1;
        count -= 1;
    }
    return crc;
}

#else

int ccrc32c_hardware_available(void) { return 0; }

uint32_t ccrc32c_hardware_update(uint32_t state, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return state;
}

#endif
