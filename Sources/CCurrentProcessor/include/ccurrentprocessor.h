// SPDX-License-Identifier: Apache-2.0

#ifndef CCURRENTPROCESSOR_H
#define CCURRENTPROCESSOR_H

/// The number of the processor the calling thread runs on now, 0 where the platform cannot say.
/// The thread may move at any time: the answer is a hint for spreading work, never for
/// correctness. Linux: sched_getcpu, which glibc answers from the thread's rseq area without a
/// system call. Apple platforms: pthread_cpu_number_np.
int ccurrentprocessor(void);

#endif
