// SPDX-License-Identifier: Apache-2.0

// Declarations only: LLVMFuzzerRunDriver is in the toolchain's libFuzzer runtime.
#include "CFuzzDriver.h"
