// SPDX-License-Identifier: Apache-2.0

import Synchronization

extension TieredCache {
    /// Closes the cache: the memory tier drops everything it holds (so that no decrypted body
    /// stays in memory while an app is in the background), then every lower tier closes (the disk
    /// tier releases its directory after a last index snapshot).
    ///
    /// From the moment it is called, reads find nothing and writes and removals throw
    /// ``CacheError/Code/closed``, until ``reopen(encryption:)``. Closing a closed cache does
    /// nothing. What other instances invalidate while it is closed is kept (up to 10,000
    /// invalidations; past that, everything is dropped on reopen) and applied when it reopens.
    ///
    /// The shared tier, when there is one, stays connected (it holds no plaintext: with
    /// encryption its rows are sealed), but a closed cache neither reads from it nor writes to it;
    /// it stops with ``run()``, when the app shuts down.
    /// - Throws: ``CacheError/Code/invalidArgument`` while another close, reopen or reset is under
    ///   way; the first lower tier's error (every tier is asked to close all the same, and the
    ///   cache is closed).
    public func close() async throws {
        guard try lifecycle.begin(from: .open, allowingIdle: .closed, "close") else { return }
        defer { lifecycle.end(.closed) }
        memory.removeAll()
        var firstError: (any Error)?
        for tier in lowerTiers {
            do { try await tier.close() } catch { firstError = firstError ?? error }
        }
        // A write that checked the cache open just before close began may have landed since.
        memory.removeAll()
        if let firstError { throw firstError }
    }

    /// Opens a closed cache again: every lower tier reopens (the disk tier with `encryption`, the
    /// same keys or new ones), and the memory tier starts empty.
    ///
    /// The shared tier, when there is one, seals with `encryption` from now on (see
    /// ``SharedCacheTier/useEncryption(_:)``; nil gives it back its own setting), unless
    /// ``SharedOptions/sharesInClear`` is set. A cache that a ``reset()`` detached from its
    /// shared tier tries the wipe again and stays detached while it fails.
    /// - Parameter encryption: the disk tier's keys, or nil for a plain directory.
    /// - Throws: ``CacheError/Code/invalidArgument`` when the cache is open (opening twice is an
    ///   error) or another close, reopen or reset is under way, or when the shared tier cannot
    ///   seal with `encryption`; a lower tier's error (for example ``CacheError/Code/wrongKey``):
    ///   the cache then stays closed, its directory as it was.
    public func reopen(encryption: DiskEncryption?) async throws {
        _ = try lifecycle.begin(from: .closed, allowingIdle: nil, "reopen")
        var opened: [any CacheTier] = []
        do {
            memory.removeAll()
            for tier in lowerTiers {
                try await tier.reopen(encryption: encryption)
                opened.append(tier)
            }
            if let shared, !sharedOptions.sharesInClear {
                try shared.useEncryption(encryption)
            }
        } catch {
            for tier in opened { try? await tier.close() }
            lifecycle.end(.closed)
            throw error
        }
        if lifecycle.isSharedDetached {
            // The wipe a reset could not finish, tried again. Its failure is not the reopen's:
            // the cache opens and stays detached (it neither reads nor writes the shared tier,
            // so nothing reset comes back) until a later reset or reopen finishes the wipe.
            try? await wipeShared()
        }
        // What other instances invalidated while the cache was closed, before it opens; an
        // invalidation that arrives meanwhile is either kept and taken here or sees it open.
        var tags: [String] = []
        while let missed = lifecycle.takeMissedOrOpen() {
            for invalidation in missed {
                await applyHere(invalidation)
                if let tag = invalidation.tag { tags.append(tag) }
            }
        }
        // A tag's entries only the layer above knows, and it needs the cache open.
        if let onTag = lifecycle.tagHandler {
            for tag in tags { await onTag(tag) }
        }
    }

    /// Wipes a closed cache: the memory tier, every lower tier's stored data (the disk tier's
    /// directory is removed; ``reopen(encryption:)`` then starts an empty one, with any key) and
    /// the shared tier's rows.
    ///
    /// The shared tier is shared: its wipe empties it for every instance of the app (as
    /// ``removeAll()`` does), so that nothing reset comes back through it. When it cannot be
    /// reached, the cache is detached from it instead: it neither reads nor writes the shared tier
    /// (it still drops what other instances invalidate) until a later ``reopen(encryption:)`` or
    /// reset wipes it.
    /// - Throws: ``CacheError/Code/invalidArgument`` when the cache is open or another close,
    ///   reopen or reset is under way; the first error of a lower tier or of the shared tier's
    ///   wipe (every tier is wiped or detached all the same).
    public func reset() async throws {
        _ = try lifecycle.begin(from: .closed, allowingIdle: nil, "reset")
        defer { lifecycle.end(.closed) }
        memory.removeAll()
        lifecycle.forgetMissed()  // nothing is left to invalidate
        var firstError: (any Error)?
        for tier in lowerTiers {
            do { try await tier.reset() } catch { firstError = firstError ?? error }
        }
        do { try await wipeShared() } catch { firstError = firstError ?? error }
        if let firstError { throw firstError }
    }

    /// Detaches the cache from its shared tier, empties the tier and attaches it again; stays
    /// detached when the tier could not be emptied.
    private func wipeShared() async throws {
        guard shared != nil else { return }
        lifecycle.detachShared(true)
        try await removeShared(storedSince: nil)
        lifecycle.detachShared(false)
    }

    /// Whether a tiered cache is open, and the one transition under way at a time.
    final class Lifecycle: Sendable {
        enum Phase: UInt8 {
            case open, closed, changing
        }

        private let phase = Atomic<UInt8>(Phase.open.rawValue)
        private let sharedDetached = Atomic<Bool>(false)
        /// Invalidations from other instances that arrived while the cache was not open.
        private let missed = VisibleLock<[SharedInvalidation]>([])
        private let tagHandlerBox = VisibleLock<(@Sendable (String) async -> Void)?>(nil)
        /// The most invalidations kept while closed; past it they become one `.all`.
        static let missedLimit = 10_000

        /// The handler of other instances' tag invalidations that ``TieredCache/run(onTagInvalidation:)``
        /// was given.
        var tagHandler: (@Sendable (String) async -> Void)? { tagHandlerBox.withLock { $0 } }

        func setTagHandler(_ handler: (@Sendable (String) async -> Void)?) {
            tagHandlerBox.withLock { $0 = handler }
        }

        /// Keeps `invalidation` for the reopen when the cache is not open.
        /// - Returns: false when the cache is open (apply it now).
        func keepIfNotOpen(_ invalidation: SharedInvalidation) -> Bool {
            missed.withLock { missed in
                guard !isOpen else { return false }
                if missed.first?.isAll == true { return true }
                if invalidation.isAll || missed.count >= Self.missedLimit {
                    missed = [.all]
                } else {
                    missed.append(invalidation)
                }
                return true
            }
        }

        /// The invalidations kept while the cache was not open, or, when there are none, nil
        /// after opening the cache (under the same lock as ``keepIfNotOpen(_:)``).
        func takeMissedOrOpen() -> [SharedInvalidation]? {
            missed.withLock { missed in
                guard !missed.isEmpty else {
                    end(.open)
                    return nil
                }
                defer { missed = [] }
                return missed
            }
        }

        /// Drops the invalidations kept (a reset leaves nothing to invalidate).
        func forgetMissed() {
            missed.withLock { $0 = [] }
        }

        /// Whether a ``TieredCache/reset()`` that could not wipe the shared tier detached the cache
        /// from it.
        var isSharedDetached: Bool { sharedDetached.load(ordering: .acquiring) }

        func detachShared(_ detached: Bool) {
            sharedDetached.store(detached, ordering: .releasing)
        }

        /// Whether the cache is open (one atomic load: the hot path pays nothing more).
        var isOpen: Bool { phase.load(ordering: .acquiring) == Phase.open.rawValue }

        /// Throws ``CacheError/Code/closed`` unless the cache is open.
        func checkOpen() throws(CacheError) {
            guard isOpen else {
                throw CacheError(code: .closed, message: "the cache is closed")
            }
        }

        /// Starts a transition from `from`.
        /// - Returns: false when the cache is already in `idle`, where the transition has nothing
        ///   to do.
        /// - Throws: ``CacheError/Code/invalidArgument`` when the cache is in another phase.
        func begin(from: Phase, allowingIdle idle: Phase?, _ what: String) throws(CacheError) -> Bool {
            let (exchanged, found) = phase.compareExchange(
                expected: from.rawValue,
                desired: Phase.changing.rawValue,
                ordering: .acquiringAndReleasing
            )
            if exchanged { return true }
            if let idle, found == idle.rawValue { return false }
            let state =
                switch Phase(rawValue: found) {
                case .open: "open"
                case .closed: "closed"
                default: "changing (another close, reopen or reset is under way)"
                }
            throw CacheError(code: .invalidArgument, message: "cannot \(what) a cache that is \(state)")
        }

        /// Ends the transition in `phase`.
        func end(_ phase: Phase) {
            self.phase.store(phase.rawValue, ordering: .releasing)
        }
    }
}
