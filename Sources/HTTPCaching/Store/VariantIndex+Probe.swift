// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension VariantIndex {
    /// What a memory lookup needs to tell whether a request selects one variant, worked out once
    /// when the index's record is made (``StoredRecord/Box``): the variant's names as field
    /// names, its key split at the digest (``ResponseCache/variantKey(primaryKey:names:values:)``)
    /// and its tier key with the key's digest computed.
    struct Probe: Sendable {
        /// The lowercased, sorted, distinct field names of the variant's `Vary`.
        let names: [String]
        /// ``names`` as field names.
        let fieldNames: [HTTPField.Name]
        /// Whether a name is a credential, whose value is compared by its keyed digest.
        let hasCredentials: Bool
        /// How many UTF-8 bytes of ``key`` are the URL's key (before the names and the digest).
        let primaryKeyCount: Int
        /// The digest of the varying values that ``key`` ends with.
        let digest: UInt64
        /// The tier key of the variant's response.
        let key: CacheKey

        /// Whether the key starts with `primaryKey`'s bytes; nil when it cannot tell without
        /// comparing strings.
        func startsWith(primaryKey: UnsafeRawBufferPointer) -> Bool? {
            guard primaryKey.count == primaryKeyCount else { return false }
            return key.string.utf8.withContiguousStorageIfAvailable { utf8 in
                primaryKey.isEmpty || memcmp(utf8.baseAddress!, primaryKey.baseAddress!, primaryKey.count) == 0
            }
        }
    }

    /// The probes of the variants a request can select, newest first. A variant has none when no
    /// request selects it: a name that is not a field name (its response matches nothing), a key
    /// not in the form the cache makes, or the key of a newer variant (the newer one is tried).
    func probes() -> [Probe] {
        var probes: [Probe] = []
        var seen: Set<String> = []
        for variant in variants {
            guard seen.insert(variant.key).inserted else { continue }
            let fieldNames = variant.fieldNames.compactMap { HTTPField.Name($0) }
            guard fieldNames.count == variant.fieldNames.count,
                let (primaryKeyCount, digest) = Self.split(variant.key, names: variant.fieldNames)
            else { continue }
            probes.append(
                Probe(
                    names: variant.fieldNames,
                    fieldNames: fieldNames,
                    hasCredentials: VaryRule.containsCredential(variant.fieldNames),
                    primaryKeyCount: primaryKeyCount,
                    digest: digest,
                    key: CacheKey(variant.key)
                )
            )
        }
        return probes
    }

    /// A variant key's URL part length (in UTF-8 bytes) and digest, when it ends with the names'
    /// separators and 16 lowercase hexadecimal digits as
    /// ``ResponseCache/variantKey(primaryKey:names:values:)`` writes them.
    static func split(_ key: String, names: [String]) -> (primaryKeyCount: Int, digest: UInt64)? {
        let tail = ResponseCache.variantKeyStem(primaryKey: "", names: names).utf8
        let utf8 = key.utf8
        guard utf8.count >= tail.count + 16 else { return nil }
        let digits = utf8.suffix(16)
        var digest: UInt64 = 0
        for byte in digits {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digest = digest << 4 | UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digest = digest << 4 | UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        let rest = utf8.dropLast(16)
        guard rest.suffix(tail.count).elementsEqual(tail) else { return nil }
        return (rest.count - tail.count, digest)
    }
}
