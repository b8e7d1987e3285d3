// SPDX-License-Identifier: Apache-2.0
// The one header Swift sees of OpenSSL's libcrypto (Linux only): the EVP cipher interface that
// opens sealed disk records with a context keyed once (see GCMOpener.swift).
#ifndef COPENSSLCRYPTO_SHIM_H
#define COPENSSLCRYPTO_SHIM_H

#include <openssl/evp.h>

/// EVP_CTRL_GCM_SET_IVLEN and EVP_CTRL_GCM_SET_TAG as functions.
static inline int COpenSSLCrypto_setIVLength(EVP_CIPHER_CTX *context, int length) {
    return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, length, NULL);
}

static inline int COpenSSLCrypto_setTag(EVP_CIPHER_CTX *context, const unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, length, (void *)tag);
}

#endif
