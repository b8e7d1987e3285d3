// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTiers
import Logging
import PostgresNIO
import Synchronization

/// The invalidation log and the listener: what other instances removed reaches this one as a
/// notification while it listens, and from the log when it (re)connects.
extension PostgresSharedTier {
    /// Listens on the channel until cancelled, reconnecting with backoff.
    func listen(_ onInvalidation: @escaping @Sendable (SharedInvalidation) async -> Void) async {
        var backoff = configuration.initialBackoff
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: self.configuration.channel) { notifications in
                        // Listening now: what was logged while the listener was down is replayed
                        // before the notifications that arrive meanwhile (they wait in the sequence).
                        try await self.replay(onInvalidation)
                        self.listening.store(true, ordering: .relaxed)
                        backoff = self.configuration.initialBackoff
                        for try await notification in notifications {
                            await self.receive(notification.payload, onInvalidation)
                        }
                    }
                }
            } catch {
                if !Task.isCancelled {
                    configuration.logger.debug("shared tier listener lost", metadata: ["error": "\(error)"])
                }
            }
            listening.store(false, ordering: .relaxed)
            do {
                try await configuration.reconnectClock.sleep(for: backoff)
            } catch {
                return
            }
            backoff = min(backoff * 2, configuration.maximumBackoff)
        }
    }

    /// Applies a notification: `SEQUENCE PAYLOAD`, the log's sequence number and the message, or
    /// `SEQUENCE` alone for a message too long for a notification, which is read from the log.
    private func receive(_ notification: String, _ onInvalidation: @Sendable (SharedInvalidation) async -> Void) async {
        let parts = notification.split(separator: " ", maxSplits: 1)
        guard let sequence = parts.first.flatMap({ Int64($0) }) else {
            configuration.logger.debug("ignored a notification", metadata: ["payload": "\(notification.prefix(40))"])
            return
        }
        if parts.count == 2 {
            await apply(String(parts[1]), sequence: sequence, onInvalidation)
            return
        }
        do {
            let entries = try await perform(timeout: configuration.writeTimeout) { [self] in
                try await logEntries(after: sequence - 1, through: sequence)
            }
            for (sequence, payload) in entries { await apply(payload, sequence: sequence, onInvalidation) }
        } catch {
            // Not applied; a replay after the listener reconnects may still reach it (it starts
            // before the cursor, see replayOverlap).
            configuration.logger.warning(
                "shared tier: an invalidation could not be read from the log",
                metadata: ["sequence": "\(sequence)", "error": "\(error)"]
            )
        }
    }

    private func apply(
        _ payload: String,
        sequence: Int64,
        _ onInvalidation: @Sendable (SharedInvalidation) async -> Void
    ) async {
        logCursor.withLock { $0 = max($0 ?? sequence, sequence) }
        guard let message = InvalidationMessage(payload: payload, sealer: sealer) else {
            configuration.logger.debug("ignored an invalidation", metadata: ["payload": "\(payload.prefix(40))"])
            return
        }
        guard message.sender != instanceID else { return }
        count(\.invalidationsReceived, metrics.invalidationsReceived)
        await onInvalidation(message.invalidation)
    }

    /// How far before the cursor a replay starts: a removal whose sequence number was handed out
    /// before another's may commit after it. Applying one twice does no harm.
    static let replayOverlap: Int64 = 64

    /// Replays the invalidation log after the last sequence applied, when the listener
    /// (re)connects. On the first connection there is nothing to replay: it starts at the log's
    /// end. When entries it has not applied were trimmed (it was away longer than
    /// ``Configuration/invalidationLogRetention``) or the log is not the one it followed, it
    /// cannot tell what it missed, and every local copy is dropped (``SharedInvalidation/all``).
    func replay(_ onInvalidation: @Sendable (SharedInvalidation) async -> Void) async throws {
        let clock = ContinuousClock()
        let began = clock.now
        let bounds = try await perform(timeout: configuration.writeTimeout) { [self] in try await logBounds() }
        let handedOut = bounds.last ?? 0
        guard let cursor = logCursor.withLock({ $0 }) else {
            logCursor.withLock { $0 = max($0 ?? handedOut, handedOut) }
            return
        }
        let start = max(0, cursor - Self.replayOverlap)
        let entries = try await perform(timeout: configuration.writeTimeout) { [self] in
            try await logEntries(after: start)
        }
        // Entries after the cursor were handed out but the oldest kept is past them: trimmed.
        let trimmed = handedOut > cursor && (bounds.lowest.map { $0 > cursor + 1 } ?? true)
        if handedOut < cursor || trimmed {
            configuration.logger.warning(
                "shared tier: invalidations were missed beyond the log; dropping every local copy",
                metadata: ["applied": "\(cursor)", "log": "\(bounds.lowest ?? 0)...\(handedOut)"]
            )
            logCursor.withLock { $0 = handedOut }
            count(\.invalidationsReceived, metrics.invalidationsReceived)
            await onInvalidation(.all)
            return
        }
        for (sequence, payload) in entries {
            await apply(payload, sequence: sequence, onInvalidation)
        }
        let record = ReplayRecord(entries: entries.count, duration: clock.now - began)
        replays.withLock { $0 = record }
        configuration.logger.debug(
            "shared tier: replayed the invalidation log",
            metadata: ["entries": "\(record.entries)", "duration": "\(record.duration)"]
        )
    }

    /// A replay of the log: how many entries it read (those it applied, and the ones before the
    /// cursor it read again), and how long it took, from the first query to the last entry
    /// applied.
    package struct ReplayRecord: Sendable {
        package var entries: Int
        package var duration: Duration
    }

    /// The last replay of the log since the tier was made (after the listener's first connection:
    /// a reconnection, a restarted server), or nil.
    package var lastReplay: ReplayRecord? { replays.withLock { $0 } }
}
#endif
