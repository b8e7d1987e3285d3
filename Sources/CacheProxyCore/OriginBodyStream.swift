// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import Synchronization

/// The body of one streamed answer on an ``OriginConnection``, from the event loop that reads it
/// to the task that takes it: parts are held until taken, and past ``highWater`` bytes held the
/// connection stops reading (`autoRead` off) until the taker has drained them. Memory: at most
/// ``highWater`` plus one read.
///
/// When the answer ended on the wire, `onEnd` gets the connection back (kept when it may carry
/// another request) at once: what was not taken yet is held here.
final class OriginBodyStream: Sendable {
    private struct State {
        var parts: [ByteBuffer] = []
        var held = 0
        var paused = false
        /// The end: whether it ended whole, or how it failed; nil while it arrives.
        var end: Result<Void, any Error>?
        var waiter: CheckedContinuation<Void, Never>?
    }

    /// The bytes held past which the connection stops reading.
    static let highWater = 256 << 10

    private let state = Mutex(State())
    private let channel: any Channel

    init(channel: any Channel) {
        self.channel = channel
    }

    /// Holds `buffer` (on the event loop); false when the connection should stop reading.
    func append(_ buffer: ByteBuffer) -> Bool {
        let (waiter, keepReading) = state.withLock { state in
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
        let (waiter, paused) = state.withLock { state in
            if state.end == nil { state.end = end }
            defer {
                state.waiter = nil
                state.paused = false
            }
            return (state.waiter, state.paused)
        }
        if paused { try? channel.syncOptions?.setOption(.autoRead, value: true) }
        waiter?.resume()
    }

    /// Everything held, or nil after the end.
    /// - Throws: how the answer broke off, once what came before it was taken.
    func next() async throws -> [UInt8]? {
        while true {
            let (taken, resume, end): ([ByteBuffer], Bool, Result<Void, any Error>?) = state.withLock { state in
                guard state.parts.isEmpty else {
                    let taken = state.parts
                    state.parts.removeAll(keepingCapacity: true)
                    state.held = 0
                    defer { state.paused = false }
                    return (taken, state.paused, nil)
                }
                return ([], false, state.end)
            }
            if resume {
                let channel = self.channel
                channel.eventLoop.execute {
                    // Only while the answer is still arriving: an ended one gave its connection back.
                    guard self.state.withLock({ $0.end == nil }) else { return }
                    try? channel.syncOptions?.setOption(.autoRead, value: true)
                }
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
                        let now = state.withLock { state in
                            guard state.parts.isEmpty, state.end == nil, !Task.isCancelled else { return true }
                            state.waiter = continuation
                            return false
                        }
                        if now { continuation.resume() }
                    }
                } onCancel: {
                    let waiter = state.withLock { state in
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
        let ended = state.withLock { $0.end != nil }
        if !ended { channel.close(promise: nil) }
    }
}
#endif
