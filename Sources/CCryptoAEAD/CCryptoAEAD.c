// SPDX-License-Identifier: Apache-2.0
// Nothing is defined here: the functions CCryptoAEAD.h declares are swift-crypto's BoringSSL,
// linked into every binary that uses Crypto on Linux. A C target needs one source file.
#include "CCryptoAEAD.h"
