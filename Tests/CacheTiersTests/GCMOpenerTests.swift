// SPDX-License-Identifier: Apache-2.0

#if OpenSSL && canImport(CCryptoAEAD)
import CacheTestSupport
import Crypto
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CacheTiers

/// The keyed-once opener of encrypted records (Linux) against swift-crypto, which seals them.
@Suite struct GCMOpenerTests {
    struct Sealed {
        var nonce: [UInt8]
        var authenticated: [UInt8]
        var ciphertext: [UInt8]
        var tag: [UInt8]
    }

    static func seal(_ plaintext: [UInt8], key: SymmetricKey, authenticated: [UInt8]) throws -> Sealed {
        let nonce = AES.GCM.Nonce()
        let box = try AES.GCM.seal(plaintext, using: key, nonce: nonce, authenticating: authenticated)
        return Sealed(
            nonce: Array(nonce),
            authenticated: authenticated,
            ciphertext: Array(box.ciphertext),
            tag: Array(box.tag)
        )
    }

    static func open(_ sealed: Sealed, with opener: GCMOpener) -> (Bool?, [UInt8]) {
        var output = [UInt8](repeating: 0, count: sealed.ciphertext.count)
        let authentic = sealed.nonce.withUnsafeBytes { nonce in
            sealed.authenticated.withUnsafeBytes { authenticated in
                sealed.ciphertext.withUnsafeBytes { ciphertext in
                    sealed.tag.withUnsafeBytes { tag in
                        output.withUnsafeMutableBytes { output in
                            opener.open(
                                nonce: nonce,
                                authenticated: authenticated,
                                ciphertext: ciphertext,
                                tag: tag,
                                into: output
                            )
                        }
                    }
                }
            }
        }
        return (authentic, output)
    }

    /// What swift-crypto seals, the opener opens to the same bytes, at lengths around the block
    /// size and with or without associated data; one changed bit anywhere is refused.
    @Test(arguments: [0, 1, 15, 16, 17, 1000, 70_000])
    func opensWhatSwiftCryptoSealsAndRefusesAnyChange(count: Int) throws {
        let key = SymmetricKey(size: .bits256)
        let opener = try #require(key.withUnsafeBytes { GCMOpener(key: Array($0)) })
        let plaintext = SampleData.random(count: count, seed: UInt64(count))
        for authenticated in [[], Array(SampleData.random(count: 48, seed: 9))] {
            let sealed = try Self.seal(plaintext, key: key, authenticated: authenticated)
            let (authentic, output) = Self.open(sealed, with: opener)
            #expect(authentic == true && output == plaintext)
            var refusals = 0
            var changes = 0
            for field in 0..<4 {
                var damaged = sealed
                let length = [damaged.nonce, damaged.authenticated, damaged.ciphertext, damaged.tag][field].count
                guard length > 0 else { continue }
                let position = length / 2
                switch field {
                case 0: damaged.nonce[position] ^= 0x01
                case 1: damaged.authenticated[position] ^= 0x01
                case 2: damaged.ciphertext[position] ^= 0x01
                default: damaged.tag[position] ^= 0x01
                }
                changes += 1
                if Self.open(damaged, with: opener).0 == false { refusals += 1 }
            }
            #expect(refusals == changes)
        }
        // Another key refuses it too.
        let other = try #require(SymmetricKey(size: .bits256).withUnsafeBytes { GCMOpener(key: Array($0)) })
        let sealed = try Self.seal(plaintext, key: key, authenticated: [1, 2, 3])
        #expect(Self.open(sealed, with: other).0 == false)
    }

    /// Many threads open at once through one opener's shared context, each getting its own bytes
    /// back (run under `--sanitize=thread` before changing how the context is shared).
    @Test func concurrentOpensEachGetTheirOwnBytes() throws {
        let key = SymmetricKey(size: .bits256)
        let opener = try #require(key.withUnsafeBytes { GCMOpener(key: Array($0)) })
        let plaintexts = (0..<8).map { SampleData.json(approximateBytes: 1500, seed: UInt64($0)) }
        let sealed = try plaintexts.map { try Self.seal($0, key: key, authenticated: [7]) }
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for round in 0..<300 {
                let index = (thread + round) % sealed.count
                let (authentic, output) = Self.open(sealed[index], with: opener)
                if authentic != true || output != plaintexts[index] { failures.add(1, ordering: .relaxed) }
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
    }

    /// Opening in place (the output is the ciphertext's own bytes) gives the plaintext; an output
    /// that overlaps the ciphertext anywhere else is not tried (nil), as BoringSSL forbids it.
    @Test func opensInPlaceAndRefusesToTryAPartialOverlap() throws {
        let key = SymmetricKey(size: .bits256)
        let opener = try #require(key.withUnsafeBytes { GCMOpener(key: Array($0)) })
        let plaintext = SampleData.json(approximateBytes: 1200, seed: 3)
        let sealed = try Self.seal(plaintext, key: key, authenticated: [1, 2])
        var buffer = sealed.ciphertext + [UInt8](repeating: 0, count: 8)
        let count = sealed.ciphertext.count
        let results = sealed.nonce.withUnsafeBytes { nonce in
            sealed.authenticated.withUnsafeBytes { authenticated in
                sealed.tag.withUnsafeBytes { tag in
                    buffer.withUnsafeMutableBytes { bytes in
                        let ciphertext = UnsafeRawBufferPointer(rebasing: bytes[..<count])
                        let shifted = opener.open(
                            nonce: nonce,
                            authenticated: authenticated,
                            ciphertext: ciphertext,
                            tag: tag,
                            into: UnsafeMutableRawBufferPointer(rebasing: bytes[4...])
                        )
                        let inPlace = opener.open(
                            nonce: nonce,
                            authenticated: authenticated,
                            ciphertext: ciphertext,
                            tag: tag,
                            into: UnsafeMutableRawBufferPointer(rebasing: bytes[..<count])
                        )
                        return (shifted, inPlace)
                    }
                }
            }
        }
        #expect(results.0 == nil)
        #expect(results.1 == true)
        #expect(Array(buffer[..<count]) == plaintext)
    }

    /// A key of the wrong length makes no opener: the cipher then opens with swift-crypto.
    @Test func aKeyOfTheWrongLengthMakesNoOpener() {
        #expect(GCMOpener(key: [UInt8](repeating: 1, count: 16)) == nil)
    }
}
#endif
