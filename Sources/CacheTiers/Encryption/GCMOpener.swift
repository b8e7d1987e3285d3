// SPDX-License-Identifier: Apache-2.0

#if OpenSSL && canImport(COpenSSLCrypto)
import COpenSSLCrypto
import Synchronization

/// Opens AES-256-GCM ciphertext with OpenSSL's libcrypto, through contexts that are keyed once
/// and then reused, on Linux with the `OpenSSL` trait.
///
/// swift-crypto makes, keys and frees a cipher context on every `AES.GCM.open`, through generic
/// code that Swift cannot specialize across the module boundary: for a 4 KB disk hit (about 1 KB
/// of ciphertext once compressed) that was three quarters of the cost of opening, and made an
/// encrypted hit 1.8 times a plain one (1.4 times with this opener). Here a hit takes a keyed context from a small pool, sets
/// the nonce, decrypts straight into the caller's buffer and checks the tag. The bytes are the
/// same AES-256-GCM that swift-crypto seals and opens (its records are opened here, and tests
/// check both ways agree); sealing stays with swift-crypto, as writes are not where the time goes.
///
/// Contexts are not thread-safe; each open holds one context alone, taken from and returned to
/// a pool under a lock held for a pop or a push only, so concurrent readers do not wait on each
/// other's decryption.
final class GCMOpener: Sendable {
    /// A keyed context, owned by whoever took it from the pool.
    private struct Context: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private let key: [UInt8]
    private let idle = Mutex<[Context]>([])
    /// The most idle contexts kept (more readers than this at once make and free their own).
    private static let maximumIdle = 16
    /// The largest sealed record opened here. libcrypto 3.0's AES-GCM runs at about a third of
    /// the speed of swift-crypto's (BoringSSL's VAES code) on the machine of docs/benchmarks.md,
    /// so past about 16 KB the context swift-crypto makes costs less than the slower bytes.
    static let preferredRecordLimit = 16 * 1024
    static let nonceCount = 12
    static let tagCount = 16

    /// An opener for the 32-byte key `key`, or nil when libcrypto cannot make a context for it.
    init?(key: [UInt8]) {
        guard key.count == 32 else { return nil }
        self.key = key
        guard let context = makeContext() else { return nil }
        idle.withLock { $0.append(context) }
    }

    deinit {
        for context in idle.withLock({ $0 }) { EVP_CIPHER_CTX_free(context.pointer) }
    }

    private func makeContext() -> Context? {
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        let keyed = key.withUnsafeBufferPointer { key in
            EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1
                && COpenSSLCrypto_setIVLength(context, Int32(Self.nonceCount)) == 1
                && EVP_DecryptInit_ex(context, nil, nil, key.baseAddress, nil) == 1
        }
        guard keyed else {
            EVP_CIPHER_CTX_free(context)
            return nil
        }
        return Context(pointer: context)
    }

    /// Decrypts `ciphertext` into `output` and checks `tag` over `authenticated` and the
    /// ciphertext.
    /// - Parameters:
    ///   - nonce: 12 bytes.
    ///   - output: at least as many bytes as `ciphertext`, either the very bytes of `ciphertext`
    ///     (opened in place) or bytes that do not overlap them; on any answer but true, what it
    ///     holds must not be used.
    /// - Returns: true when the tag verifies; false when it does not, or when a libcrypto call
    ///   failed once `output` may have been written; nil, with nothing written, when libcrypto
    ///   could not be used (no context could be made, or a length beyond its range): the caller
    ///   then opens the bytes another way.
    func open(
        nonce: UnsafeRawBufferPointer,
        authenticated: UnsafeRawBufferPointer,
        ciphertext: UnsafeRawBufferPointer,
        tag: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) -> Bool? {
        guard nonce.count == Self.nonceCount, tag.count == Self.tagCount, output.count >= ciphertext.count,
            ciphertext.count < Int(Int32.max), authenticated.count < Int(Int32.max)
        else { return nil }
        guard let context = idle.withLock({ $0.popLast() }) ?? makeContext() else { return nil }
        let pointer = context.pointer
        var written: Int32 = 0
        var steps =
            EVP_DecryptInit_ex(pointer, nil, nil, nil, nonce.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 1
        if steps, !authenticated.isEmpty {
            steps =
                EVP_DecryptUpdate(
                    pointer,
                    nil,
                    &written,
                    authenticated.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    Int32(authenticated.count)
                ) == 1
        }
        var plainCount: Int32 = 0
        if steps, !ciphertext.isEmpty {
            steps =
                EVP_DecryptUpdate(
                    pointer,
                    output.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    &plainCount,
                    ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    Int32(ciphertext.count)
                ) == 1
        }
        steps =
            steps
            && COpenSSLCrypto_setTag(
                pointer,
                tag.baseAddress?.assumingMemoryBound(to: UInt8.self),
                Int32(Self.tagCount)
            ) == 1
        guard steps, Int(plainCount) == ciphertext.count else {
            // A context in an unknown state is not reused; `output` may have been written, so
            // the answer is a refusal (the caller forgets the record), not a retry elsewhere.
            EVP_CIPHER_CTX_free(pointer)
            return false
        }
        // GCM writes nothing more at the end; the last argument only needs to be a valid place.
        var finalCount: Int32 = 0
        let end = output.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) + Int(plainCount) }
        let authentic = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { spare in
            EVP_DecryptFinal_ex(pointer, end ?? spare.baseAddress, &finalCount) == 1
        }
        let kept = idle.withLock { idle in
            guard idle.count < Self.maximumIdle else { return false }
            idle.append(context)
            return true
        }
        if !kept { EVP_CIPHER_CTX_free(pointer) }
        return authentic && finalCount == 0
    }
}
#endif
