// SPDX-License-Identifier: Apache-2.0

package import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An AES-256-GCM key for small messages sealed in AES-GCM's combined form (nonce, ciphertext,
/// tag), opened through one context keyed once where the platform allows (``GCMOpener``: Linux
/// with the `OpenSSL` trait) and through swift-crypto elsewhere; sealed by swift-crypto.
///
/// For the shared tier's rows: swift-crypto keys a new context on every open, which on a shared
/// hit of 1 KiB was most of what sealing added to a plain row's decoding.
///
/// `@unchecked Sendable` without a lock: its fields are set once in `init`; swift-crypto's
/// `SymmetricKey` is not marked Sendable but never changes after it is made, and the opener is
/// safe to use from many threads at once.
package final class GCMKey: @unchecked Sendable {
    /// The key, for swift-crypto.
    package let key: SymmetricKey
    #if OpenSSL && canImport(CCryptoAEAD)
    private let opener: GCMOpener?
    #endif

    package init(_ key: SymmetricKey) {
        self.key = key
        #if OpenSSL && canImport(CCryptoAEAD)
        opener = key.withUnsafeBytes { GCMOpener(key: Array($0)) }
        #endif
    }

    /// `payload` sealed with a random 12-byte nonce, authenticating `header`, in the combined form.
    package func seal(_ payload: [UInt8], authenticating header: [UInt8]) throws -> [UInt8] {
        let box = try AES.GCM.seal(payload, using: key, nonce: AES.GCM.Nonce(), authenticating: header)
        // A 12-byte nonce always gives the combined form.
        return Array(box.combined!)
    }

    /// The payload of `sealed` (the combined form), or nil when it is too short or does not
    /// authenticate with `header` under this key.
    package func open(_ sealed: [UInt8], authenticating header: [UInt8]) -> [UInt8]? {
        let nonceCount = 12
        let tagCount = 16
        guard sealed.count >= nonceCount + tagCount else { return nil }
        #if OpenSSL && canImport(CCryptoAEAD)
        if let opener {
            let count = sealed.count - nonceCount - tagCount
            var authentic: Bool?
            let opened = [UInt8](unsafeUninitializedCapacity: count) { output, initialized in
                sealed.withUnsafeBytes { bytes in
                    header.withUnsafeBytes { header in
                        authentic = opener.open(
                            nonce: UnsafeRawBufferPointer(rebasing: bytes[..<nonceCount]),
                            authenticated: header,
                            ciphertext: UnsafeRawBufferPointer(rebasing: bytes[nonceCount..<(nonceCount + count)]),
                            tag: UnsafeRawBufferPointer(rebasing: bytes[(nonceCount + count)...]),
                            into: UnsafeMutableRawBufferPointer(output)
                        )
                    }
                }
                // Nothing may be read from bytes that did not authenticate.
                initialized = authentic == true ? count : 0
            }
            if let authentic { return authentic ? opened : nil }
            // nil: nothing was tried; swift-crypto opens it below.
        }
        #endif
        // Why a seal does not open (bad length, a tag that does not verify) is not the caller's
        // concern: a row or message that does not authenticate is treated as damaged.
        guard let box = try? AES.GCM.SealedBox(combined: sealed),
            let opened = try? AES.GCM.open(box, using: key, authenticating: header)
        else { return nil }
        return Array(opened)
    }
}
