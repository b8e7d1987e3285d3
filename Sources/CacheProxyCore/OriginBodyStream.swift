// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOConcurrencyHelpers
import NIOCore

/// The body of one streamed answer on an ``OriginConnection``, from the event loop that reads it
/// to the task that takes it: the connection reads nothing past the head until the taker first
/// asks, parts are held until taken, and past ``highWater`` bytes held the connection stops
/// reading (`autoRead` off) until the taker has drained them. Memory: at most
/// ``highWater`` plus what the event loop reads in the turn it stops (up to four reads of at most
/// 64 KiB each, NIO's defaults).
///
/// When the answer ended on the wire, `onEnd` gets the connection back (kept when it may carry
/// another request) at once: what was not taken yet is held here.
final class OriginBodyStream: Sendable {
    private struct State {
        var parts: [ByteBuffer] = []
        var held = 0
        /// Whether the connection's reading is off: from the head on, until the body is first asked
        /// for. Changed on the event loop only, with the option itself, so that a connection is
        /// never given back with its reading off.
        var paused = true
        /// The end: whether it ended whole, or how it failed; nil while it arrives.
        var end: Result<Void, any Error>?
        var waiter: CheckedContinuation<Void, Never>?
    }

    /// The bytes held past which the connection stops reading.
    static let highWater = 256 << 10

    // A lock the thread sanitizer sees (it reports false races through `Mutex`'s futex).
    private let state = NIOLockedValueBox(State())
    private let channel: any Channel

    /// Made with the answer's head, on a connection whose reading was turned off then: it goes on
    /// at the first ``next()``.
    init(channel: any Channel) {
        self.channel = channel
    }

    /// Holds `buffer` (on the event loop); false when the connection should stop reading.
    func append(_ buffer: ByteBuffer) -> Bool {
        let (waiter, keepReading) = state.withLockedValue { state in
            state.parts.append(buffer)
            state.held += buffer.readableBytes
            if state.held >= Self.highWater { state.paused = true }
            defer { state.waiter = nil }
            return (state.waiter, !state.paused)
        }
        waiter?.resume()
        return keepReading
    }

    /// Records the end (on the event loop); a failure after a whole end changes nothing. Reading
    /// is turned back on first, so that a connection given back reads as any other.
    func finish(_ end: Result<Void, any Error>) {
        let (waiter, paused) = state.withLockedValue { state in
            if state.end == nil { state.end = end }
            defer {
                state.waiter = nil
                state.paused = false
            }
            return (state.waiter, state.paused)
        }
        // Setting the option fails only on a closed channel, which reads nothing more anyway.
        if paused { try? channel.syncOptions?.setOption(.autoRead, value: true) }
        waiter?.resume()
    }

    /// Turns reading back on (on the event loop) when it is off and what is held was taken.
    private func resumeReading() {
        let resumes = state.withLockedValue { state in
            guard state.paused, state.held < Self.highWater else { return false }
            state.paused = false
            return true
        }
        // Fails only on a closed channel (see `finish`).
        if resumes { try? channel.syncOptions?.setOption(.autoRead, value: true) }
    }

    /// Everything held, or nil after the end.
    /// - Throws: how the answer broke off, once what came before it was taken.
    func next() async throws -> [UInt8]? {
        while true {
            let (taken, resume, end): ([ByteBuffer], Bool, Result<Void, any Error>?) = state.withLockedValue { state in
                guard state.parts.isEmpty else {
                    let taken = state.parts
                    state.parts.removeAll(keepingCapacity: true)
                    state.held = 0
                    return (taken, state.paused, nil)
                }
                // Reading that stopped with the head goes on once the body is first asked for.
                return ([], state.end == nil && state.paused && state.held < Self.highWater, state.end)
            }
            if resume {
                // An answer that ended meanwhile turned reading on as it gave its connection back
                // (`resumeReading` finds it on).
                channel.eventLoop.execute { self.resumeReading() }
            }
            if !taken.isEmpty {
                var whole: [UInt8] = []
                whole.reserveCapacity(taken.reduce(0) { $0 + $1.readableBytes })
                for part in taken { whole.append(contentsOf: part.readableBytesView) }
                return whole
            }
            switch end {
            case .success?: return nil
            case .failure(let error)?: throw error
            case nil:
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let now = state.withLockedValue { state in
                            guard state.parts.isEmpty, state.end == nil, !Task.isCancelled else { return true }
                            state.waiter = continuation
                            return false
                        }
                        if now { continuation.resume() }
                    }
                } onCancel: {
                    let waiter = state.withLockedValue { state in
                        defer { state.waiter = nil }
                        return state.waiter
                    }
                    waiter?.resume()
                }
                try Task.checkCancellation()
            }
        }
    }

    /// Gives the answer up: its connection is closed unless the answer already ended.
    func cancel() {
        let ended = state.withLockedValue { $0.end != nil }
        if !ended { channel.close(promise: nil) }
    }
}
#endif
