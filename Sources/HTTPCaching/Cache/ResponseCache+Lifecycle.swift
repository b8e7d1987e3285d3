// SPDX-License-Identifier: Apache-2.0

public import CacheTiers

extension ResponseCache {
    /// Whether the cache is open. A closed cache finds nothing (a lookup says
    /// ``ResponseLookup/isCacheClosed``) and refuses to store (``HTTPCachingError/Code/closed``).
    public var isOpen: Bool { tiers.isOpen }

    /// Closes the cache, as an app does when it goes to the background: the memory tier drops
    /// everything (no decrypted body stays in memory), the disk tier writes its index and releases
    /// its directory.
    ///
    /// Requests made while the cache is closed get the closed behaviour (see
    /// ``ResponseLookup/isCacheClosed``): never a crash, never wrong bytes. Closing a closed cache
    /// does nothing.
    /// - Throws: ``HTTPCachingError/Code/invalidArgument`` while another close, reopen or reset is
    ///   under way; ``HTTPCachingError/Code/storage`` with the disk tier's error (the cache is
    ///   closed all the same).
    public func close() async throws(HTTPCachingError) {
        try await Self.lifecycle("closing the cache") { try await tiers.close() }
        tagRegistry.forgetAll()
    }

    /// Opens a closed cache again with `encryption`: the disk tier's keys (the same key, or a new
    /// one after ``reset()``), or nil for a plain directory. The shared tier, when there is one,
    /// seals with the same keys from now on (see `TieredCache.reopen(encryption:)`).
    /// - Throws: ``HTTPCachingError/Code/invalidArgument`` when the cache is open (opening twice is
    ///   an error) or another close, reopen or reset is under way;
    ///   ``HTTPCachingError/Code/wrongKey`` when no given key opens the directory,
    ///   ``HTTPCachingError/Code/encryptionMismatch`` for an encrypted directory without a key or a
    ///   plain one with a key; ``HTTPCachingError/Code/storage`` with the disk tier's other errors.
    ///   The cache then stays closed and the directory as it was.
    public func reopen(encryption: DiskEncryption?) async throws(HTTPCachingError) {
        try await Self.lifecycle("reopening the cache") { try await tiers.reopen(encryption: encryption) }
    }

    /// Opens a closed cache again with the keys it was configured with
    /// (``Configuration/disk``'s encryption).
    /// - Throws: as ``reopen(encryption:)``.
    public func reopen() async throws(HTTPCachingError) {
        try await reopen(encryption: tiers.disk?.configuration.encryption ?? configuration.disk?.encryption)
    }

    /// Wipes a closed cache: memory, the disk tier's directory and the shared tier's rows (for
    /// every instance sharing them; a cache that cannot reach the shared tier is detached from it
    /// instead, see `TieredCache.reset()`). ``reopen(encryption:)`` then starts empty, with any
    /// key: the way to start again after a lost key or a sign-out.
    /// - Throws: ``HTTPCachingError/Code/invalidArgument`` when the cache is open (close it first)
    ///   or another close, reopen or reset is under way; ``HTTPCachingError/Code/storage`` with the
    ///   disk tier's error or the shared tier's (every tier is wiped or detached all the same).
    public func reset() async throws(HTTPCachingError) {
        try await Self.lifecycle("resetting the cache") { try await tiers.reset() }
        tagRegistry.forgetAll()
    }

    /// Runs a lifecycle step of the tiers, turning their errors into this layer's.
    private static func lifecycle(
        _ what: String,
        _ body: () async throws -> Void
    ) async throws(HTTPCachingError) {
        do {
            try await body()
        } catch let error as CacheError where error.code == .invalidArgument {
            throw HTTPCachingError(code: .invalidArgument, message: "\(what): \(error.message)", underlying: error)
        } catch let error as CacheError where HTTPCachingError.keyCode(of: error) != nil {
            throw HTTPCachingError(
                code: HTTPCachingError.keyCode(of: error)!,
                message: "\(what): \(error.message)",
                underlying: error
            )
        } catch {
            throw HTTPCachingError(code: .storage, message: what, underlying: error)
        }
    }
}
