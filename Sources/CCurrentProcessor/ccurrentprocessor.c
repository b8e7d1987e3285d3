// SPDX-License-Identifier: Apache-2.0

// sched_getcpu is a GNU extension.
#define _GNU_SOURCE

#include "ccurrentprocessor.h"

#if defined(__APPLE__)
#include <pthread.h>

int ccurrentprocessor(void) {
    size_t processor = 0;
    return pthread_cpu_number_np(&processor) == 0 ? (int)processor : 0;
}
#elif defined(__linux__)
#include <sched.h>

int ccurrentprocessor(void) {
    int processor = sched_getcpu();
    return processor < 0 ? 0 : processor;
}
#else
int ccurrentprocessor(void) { return 0; }
#endif
