// SPDX-License-Identifier: Apache-2.0

#ifndef CCRC32C_H
#define CCRC32C_H

#include <stddef.h>
#include <stdint.h>

/// Whether this CPU has CRC-32C instructions (SSE 4.2 on x86-64, the CRC extension on arm64).
int ccrc32c_hardware_available(void);

/// Continues the CRC-32C register `state` (the inverted CRC, as the algorithm keeps it) over
/// `count` bytes at `bytes` with the CPU's CRC-32C instructions. Call only when
/// ccrc32c_hardware_available() returned nonzero.
uint32_t ccrc32c_hardware_update(uint32_t state, const void *bytes, size_t count);

#endif
