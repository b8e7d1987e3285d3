// SPDX-License-Identifier: Apache-2.0
// BoringSSL's AEAD interface (aead.h), as swift-crypto builds and links it into every binary that
// uses Crypto on Linux: its CCryptoBoringSSL target, whose symbols carry the `CCryptoBoringSSL_`
// prefix. swift-crypto does not export that target as a product, so the few functions the disk
// tier needs are declared here, under the names they link by. See GCMOpener.swift.
#ifndef CCRYPTOAEAD_H
#define CCRYPTOAEAD_H

#include <stddef.h>
#include <stdint.h>

/// BoringSSL's `EVP_AEAD` and `EVP_AEAD_CTX`, opaque here.
typedef struct evp_aead_st CCryptoAEAD_Algorithm;
typedef struct evp_aead_ctx_st CCryptoAEAD_Context;

const CCryptoAEAD_Algorithm *CCryptoBoringSSL_EVP_aead_aes_256_gcm(void);

CCryptoAEAD_Context *CCryptoBoringSSL_EVP_AEAD_CTX_new(
    const CCryptoAEAD_Algorithm *aead, const uint8_t *key, size_t key_len, size_t tag_len);

void CCryptoBoringSSL_EVP_AEAD_CTX_free(CCryptoAEAD_Context *ctx);

/// Decrypts and authenticates; may run concurrently on one context; `out` == `in` or no overlap;
/// on failure `out` is zeroed.
int CCryptoBoringSSL_EVP_AEAD_CTX_open_gather(
    const CCryptoAEAD_Context *ctx, uint8_t *out, const uint8_t *nonce, size_t nonce_len,
    const uint8_t *in, size_t in_len, const uint8_t *in_tag, size_t in_tag_len,
    const uint8_t *ad, size_t ad_len);

#endif
