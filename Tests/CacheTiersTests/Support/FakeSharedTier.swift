// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Synchronization

@testable import CacheTiers

/// The tags a handler received.
final class TagLog: Sendable {
    private let state = Mutex<[String]>([])
    var tags: [String] { state.withLock { $0 } }
    func append(_ tag: String) { state.withLock { $0.append(tag) } }
}

/// A shared tier in memory: what it stores, a log of the operations, and invalidations to publish.
final class FakeSharedTier: SharedCacheTier {
    private struct State {
        var stored: [CacheKey: CacheEntry] = [:]
        var log: [String] = []
        var reads = 0
        var broadcasts: [SharedInvalidation] = []
        var failsRemovals = false
        var failsBroadcasts = false
    }

    private let state = Mutex(State())
    private let (invalidations, continuation) = AsyncStream.makeStream(of: SharedInvalidation.self)
    private let writeGate = Mutex<(held: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Holds every write until ``releaseWrites()``.
    func holdWrites() { writeGate.withLock { $0.held = true } }
    /// Lets the held writes, and later ones, go on.
    func releaseWrites() {
        let waiters = writeGate.withLock { gate in
            gate.held = false
            defer { gate.waiters = [] }
            return gate.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
    /// How many writes are held.
    var heldWrites: Int { writeGate.withLock { $0.waiters.count } }

    var stored: [CacheKey: CacheEntry] { state.withLock { $0.stored } }
    var log: [String] { state.withLock { $0.log } }
    var reads: Int { state.withLock { $0.reads } }
    var broadcasts: [SharedInvalidation] { state.withLock { $0.broadcasts } }

    func publish(_ invalidation: SharedInvalidation) { continuation.yield(invalidation) }

    /// Makes removals throw (the tier is down for them) or succeed again.
    func failRemovals(_ fails: Bool) { state.withLock { $0.failsRemovals = fails } }
    /// Makes every broadcast throw, as an unreachable database does.
    func failBroadcasts(_ fails: Bool) { state.withLock { $0.failsBroadcasts = fails } }

    func entry(for key: CacheKey) async -> CacheEntry? {
        state.withLock {
            $0.reads += 1
            return $0.stored[key]
        }
    }

    func set(_ entry: CacheEntry, for key: CacheKey) async throws {
        await withCheckedContinuation { continuation in
            let held = writeGate.withLock { gate in
                if gate.held { gate.waiters.append(continuation) }
                return gate.held
            }
            if !held { continuation.resume() }
        }
        state.withLock {
            $0.stored[key] = entry
            $0.log.append("set \(key)")
        }
    }

    func remove(_ key: CacheKey, broadcast: Bool) async throws {
        try state.withLock {
            if $0.failsRemovals { throw CacheError(code: .io, message: "the shared tier is down") }
            $0.stored[key] = nil
            $0.log.append("remove \(key)\(broadcast ? " broadcast" : "")")
        }
    }

    func removeAll() async throws { state.withLock { $0.stored = [:] } }

    func broadcast(_ invalidation: SharedInvalidation) async throws {
        try state.withLock {
            if $0.failsBroadcasts { throw CacheError(code: .io, message: "the shared tier is down") }
            $0.broadcasts.append(invalidation)
            for key in invalidation.removedKeys { $0.stored[key] = nil }
        }
    }

    func keys(withPrefix prefix: String) async throws -> [CacheKey] {
        state.withLock { state in state.stored.keys.filter { $0.string.hasPrefix(prefix) } }
    }

    func removeEntries(storedSince date: Date) async throws {
        state.withLock { $0.stored = $0.stored.filter { $0.value.storedAt < date } }
    }

    var sharedUsage: CacheUsage? {
        get async { state.withLock { CacheUsage(bytes: 0, entryCount: $0.stored.count) } }
    }

    func run(onInvalidation: @escaping @Sendable (SharedInvalidation) async -> Void) async throws {
        for await invalidation in invalidations { await onInvalidation(invalidation) }
    }

    func close() async throws { continuation.finish() }
}
