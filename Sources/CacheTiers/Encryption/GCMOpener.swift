// SPDX-License-Identifier: Apache-2.0

#if OpenSSL && canImport(CCryptoAEAD)
import CCryptoAEAD

/// Opens AES-256-GCM ciphertext through one context keyed once, with BoringSSL's AEAD as
/// swift-crypto links it, on Linux with the `OpenSSL` trait.
///
/// swift-crypto makes, keys and frees a cipher context on every `AES.GCM.open`, through generic
/// code that Swift cannot specialize across the module boundary: for a 4 KB disk hit (about 1 KB
/// of ciphertext once compressed) that was three quarters of the cost of opening, and made an
/// encrypted hit 1.8 times a plain one. OpenSSL's libcrypto 3.0 with a pooled context (the
/// opener before this one) still spent about 0.65 µs a hit: parameter lookups on every call and
/// an AES-GCM a third of the speed of BoringSSL's VAES code on the machine of docs/benchmarks.md.
/// Here the key is expanded once into BoringSSL's `EVP_AEAD_CTX`, which its documentation allows
/// to open from any number of threads at once: no pool, no lock. The bytes are the same
/// AES-256-GCM that swift-crypto seals (its records are opened here, and tests check both ways
/// agree); sealing stays with swift-crypto, as writes are not where the time goes.
///
/// `@unchecked Sendable`, without a lock: the context is written once, in `init`, and BoringSSL
/// documents `EVP_AEAD_CTX_open_gather` as safe to call concurrently on one context.
final class GCMOpener: @unchecked Sendable {
    private let context: OpaquePointer
    static let nonceCount = 12
    static let tagCount = 16

    /// An opener for the 32-byte key `key`, or nil when BoringSSL cannot make a context for it.
    init?(key: [UInt8]) {
        guard key.count == 32,
            let context = key.withUnsafeBufferPointer({ key in
                CCryptoBoringSSL_EVP_AEAD_CTX_new(
                    CCryptoBoringSSL_EVP_aead_aes_256_gcm(),
                    key.baseAddress,
                    key.count,
                    Self.tagCount
                )
            })
        else { return nil }
        self.context = context
    }

    deinit {
        CCryptoBoringSSL_EVP_AEAD_CTX_free(context)
    }

    /// Decrypts `ciphertext` into `output` and checks `tag` over `authenticated` and the
    /// ciphertext.
    /// - Parameters:
    ///   - nonce: 12 bytes.
    ///   - output: at least as many bytes as `ciphertext`, either the very bytes of `ciphertext`
    ///     (opened in place) or bytes that do not overlap them; on any answer but true, what it
    ///     holds must not be used.
    /// - Returns: true when the tag verifies; false when it does not; nil, with nothing written,
    ///   when the lengths are not AES-GCM's (the caller then opens the bytes another way).
    func open(
        nonce: UnsafeRawBufferPointer,
        authenticated: UnsafeRawBufferPointer,
        ciphertext: UnsafeRawBufferPointer,
        tag: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) -> Bool? {
        guard nonce.count == Self.nonceCount, tag.count == Self.tagCount, output.count >= ciphertext.count,
            Self.inPlaceOrApart(output, ciphertext)
        else { return nil }
        return CCryptoBoringSSL_EVP_AEAD_CTX_open_gather(
            context,
            output.baseAddress?.assumingMemoryBound(to: UInt8.self),
            nonce.baseAddress?.assumingMemoryBound(to: UInt8.self),
            nonce.count,
            ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self),
            ciphertext.count,
            tag.baseAddress?.assumingMemoryBound(to: UInt8.self),
            tag.count,
            authenticated.baseAddress?.assumingMemoryBound(to: UInt8.self),
            authenticated.count
        ) == 1
    }

    /// Whether `output` starts where `input` does, or shares none of its bytes: the two ways
    /// BoringSSL allows.
    private static func inPlaceOrApart(
        _ output: UnsafeMutableRawBufferPointer,
        _ input: UnsafeRawBufferPointer
    ) -> Bool {
        guard let out = output.baseAddress, let into = input.baseAddress, !output.isEmpty, !input.isEmpty else {
            return true
        }
        let outStart = UInt(bitPattern: out)
        let inStart = UInt(bitPattern: into)
        return outStart == inStart || outStart + UInt(output.count) <= inStart
            || inStart + UInt(input.count) <= outStart
    }
}
#endif
