// SPDX-License-Identifier: Apache-2.0

import Foundation

@testable import CacheTiers

/// A lower tier in memory whose next read, write or removal can be held, to stage a reader
/// racing a writer or a remover deterministically: a read is held after it has looked its key up
/// (it returns what it found then), a write or removal before it changes anything.
actor GatedTier: CacheTier {
    /// What can be held.
    enum Operation: Hashable, Sendable, CaseIterable {
        case read, set, removal
    }

    private var entries: [String: CacheEntry] = [:]
    private var armed: Set<Operation> = []
    private let held: [Operation: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)]
    private let released: [Operation: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)]

    init() {
        held = Dictionary(uniqueKeysWithValues: Operation.allCases.map { ($0, AsyncStream.makeStream(of: Void.self)) })
        released = Dictionary(
            uniqueKeysWithValues: Operation.allCases.map { ($0, AsyncStream.makeStream(of: Void.self)) }
        )
    }

    /// Holds the next `operation` until ``release(_:)``.
    func gate(_ operation: Operation) { armed.insert(operation) }

    /// Returns once the gated `operation` is held.
    func waitUntilHeld(_ operation: Operation) async {
        for await _ in held[operation]!.stream { return }
    }

    /// Lets the held `operation` go on.
    nonisolated func release(_ operation: Operation) { released[operation]!.continuation.yield() }

    /// Whether the tier holds `key`.
    func contains(_ key: CacheKey) -> Bool { entries[key.string] != nil }

    private func pass(_ operation: Operation) async {
        guard armed.remove(operation) != nil else { return }
        held[operation]!.continuation.yield()
        for await _ in released[operation]!.stream { break }
    }

    func entry(for key: CacheKey) async throws -> CacheEntry? {
        let found = entries[key.string]
        await pass(.read)
        return found
    }

    func set(_ entry: CacheEntry, for key: CacheKey) async throws -> Bool {
        await pass(.set)
        entries[key.string] = entry
        return true
    }

    func remove(_ key: CacheKey) async throws -> Bool {
        await pass(.removal)
        return entries.removeValue(forKey: key.string) != nil
    }

    func removeAll() async throws {
        await pass(.removal)
        entries = [:]
    }

    func removeEntries(storedSince date: Date) async throws -> Int {
        await pass(.removal)
        let doomed = entries.filter { $0.value.storedAt >= date }.keys
        for key in doomed { entries[key] = nil }
        return doomed.count
    }

    var tierUsage: CacheUsage {
        CacheUsage(bytes: entries.values.reduce(0) { $0 + $1.value.count }, entryCount: entries.count)
    }

    private(set) var isClosed = false

    func close() async throws { isClosed = true }

    func reopen(encryption: DiskEncryption?) async throws { isClosed = false }

    func reset() async throws { entries = [:] }
}
