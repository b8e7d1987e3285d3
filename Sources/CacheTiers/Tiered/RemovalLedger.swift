// SPDX-License-Identifier: Apache-2.0

import Synchronization

/// The removals a ``TieredCache`` has begun and finished, by slot of keys, so that a completed
/// removal is final: a read that found an entry below memory promotes it only when no removal
/// of its key (or of everything) was under way or began since the read looked.
///
/// A memory hit never touches the ledger. A read that missed memory takes a ``Ticket`` before it
/// asks the lower tiers (four atomic loads) and checks it before it promotes (two more). A
/// removal counts itself in its slot's `started` before it removes anything and in `finished`
/// when it is done; a ticket is issued only while the two are equal, and stays good while
/// `started` does not move. The memory tier's own write generation then keeps a promotion that
/// passed its check from landing after the removal's memory removal.
///
/// A promotion that writes the lower tiers (a shared-tier hit) is not one atomic step, so it is
/// registered for its whole length: a removal waits for the promotions in flight on its slot
/// before it removes, and so removes what they wrote; a promotion cannot register once a removal
/// began.
final class RemovalLedger: Sendable {
    /// What a read saw before it asked the lower tiers.
    struct Ticket: Sendable {
        fileprivate let slot: Int
        fileprivate let keyStarted: UInt64
        fileprivate let allStarted: UInt64
    }

    /// One slot: removals begun and finished, and the promotions writing below memory.
    private final class Slot: Sendable {
        struct Promotions {
            var count = 0
            var waiting: [CheckedContinuation<Void, Never>] = []
        }

        let started = Atomic<UInt64>(0)
        let finished = Atomic<UInt64>(0)
        let promotions = VisibleLock(Promotions())

        /// The removals begun, when none is under way; nil while one is.
        var quiet: UInt64? {
            // `finished` first: a removal begun before that load and not finished shows in the
            // later load of `started`.
            let finished = finished.load(ordering: .acquiring)
            let started = started.load(ordering: .acquiring)
            return started == finished ? started : nil
        }

        /// Registers a promotion, unless a removal began since `expected` was read.
        func enter(expecting expected: UInt64) -> Bool {
            promotions.withLock { promotions in
                // Checked under the lock a removal takes after it counts itself: either this sees
                // the removal, or the removal sees this promotion and waits for it.
                guard started.load(ordering: .acquiring) == expected else { return false }
                promotions.count += 1
                return true
            }
        }

        /// Ends a promotion; the removals that waited for the last one go on.
        func leave() {
            let waiting = promotions.withLock { promotions in
                promotions.count -= 1
                guard promotions.count == 0 else { return [CheckedContinuation<Void, Never>]() }
                defer { promotions.waiting = [] }
                return promotions.waiting
            }
            for continuation in waiting { continuation.resume() }
        }

        /// Counts a removal as begun and waits for the promotions in flight to end.
        func begin() async {
            started.add(1, ordering: .sequentiallyConsistent)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let proceed = promotions.withLock { promotions in
                    guard promotions.count > 0 else { return true }
                    promotions.waiting.append(continuation)
                    return false
                }
                if proceed { continuation.resume() }
            }
        }

        func end() {
            finished.add(1, ordering: .releasing)
        }

        /// Removals waiting for promotions to end (for tests).
        var waitingRemovals: Int { promotions.withLock { $0.waiting.count } }
    }

    /// Slots of keys, chosen by key digest.
    static let slotCount = 64
    private let slots: [Slot] = (0..<RemovalLedger.slotCount).map { _ in Slot() }
    /// The slot of removals of every key (``TieredCache/removeAll()``, removals by date).
    private let everything = Slot()

    private func slotIndex(of key: CacheKey) -> Int {
        Int(truncatingIfNeeded: key.digest >> 32) & (Self.slotCount - 1)
    }

    /// A ticket for a read of `key` that missed memory, or nil while a removal of `key` (or of
    /// everything) is under way: what such a read finds it returns, and does not promote.
    func ticket(for key: CacheKey) -> Ticket? {
        let slot = slotIndex(of: key)
        guard let keyStarted = slots[slot].quiet, let allStarted = everything.quiet else { return nil }
        return Ticket(slot: slot, keyStarted: keyStarted, allStarted: allStarted)
    }

    /// Whether no removal of the ticket's key, or of everything, has begun since it was issued.
    func isCurrent(_ ticket: Ticket) -> Bool {
        slots[ticket.slot].started.load(ordering: .acquiring) == ticket.keyStarted
            && everything.started.load(ordering: .acquiring) == ticket.allStarted
    }

    /// Registers a promotion that writes below memory, unless the ticket is no longer current;
    /// call ``endPromotion(_:)`` when it is written.
    func beginPromotion(_ ticket: Ticket) -> Bool {
        guard slots[ticket.slot].enter(expecting: ticket.keyStarted) else { return false }
        guard everything.enter(expecting: ticket.allStarted) else {
            slots[ticket.slot].leave()
            return false
        }
        return true
    }

    func endPromotion(_ ticket: Ticket) {
        everything.leave()
        slots[ticket.slot].leave()
    }

    /// Runs `body`, the removal of `key` (nil: of every key), once the promotions in flight that
    /// it must undo have ended; no promotion of what it removes begins until it is done.
    func removal<Result>(of key: CacheKey?, _ body: () async throws -> Result) async rethrows -> Result {
        let slot = key.map { slots[slotIndex(of: $0)] } ?? everything
        await slot.begin()
        defer { slot.end() }
        return try await body()
    }

    /// Removals waiting for promotions to end, over every slot (for tests).
    var waitingRemovals: Int {
        slots.reduce(everything.waitingRemovals) { $0 + $1.waitingRemovals }
    }
}
