// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HummingbirdCore
import NIOConcurrencyHelpers
import NIOCore

/// A client's request body, read as the upstream request is sent (``source``), at most `limit`
/// bytes of it: past the limit the read fails and ``isOverLimit`` says so.
///
/// The body's iterator is the connection's own: HummingbirdCore reads the next request with it
/// once the responder returned. So the responder ends the upload (``end(closing:)``) before it
/// returns: an upload not read to its end closes the connection, and no read of the iterator
/// starts after, or is still running when, `end` returns.
final class Upload: Sendable {
    private struct State {
        var reading = false
        var ended = false
        var finished = false
        var count = 0
        var overLimit = false
        /// Why the client's body could not be read (broken chunked framing, say).
        var failure: (any Error)?
        var waiter: CheckedContinuation<Void, Never>?
    }

    /// The iterator, used by one read at a time (``State/reading`` guards it): hence unchecked.
    private final class IteratorBox: @unchecked Sendable {
        var iterator: RequestBody.AsyncIterator
        init(_ iterator: RequestBody.AsyncIterator) { self.iterator = iterator }
    }

    private let box: IteratorBox
    private let state = NIOLockedValueBox(State())
    private let limit: Int
    private let length: Int?

    init(_ body: RequestBody, length: Int?, limit: Int) {
        self.box = IteratorBox(body.makeAsyncIterator())
        self.length = length
        self.limit = limit
    }

    struct Ended: Error {}

    /// The body passed the limit.
    struct TooLarge: Error {}

    /// The body as the client sends it.
    var source: RequestBodySource {
        RequestBodySource(length: length) { try await self.next() }
    }

    /// Whether the body passed the limit.
    var isOverLimit: Bool { state.withLockedValue { $0.overLimit } }

    /// Why the client's body could not be read, if it could not.
    var readFailure: (any Error)? { state.withLockedValue { $0.failure } }

    private func next() async throws -> [UInt8]? {
        let may = state.withLockedValue { state in
            guard !state.ended, !state.finished else { return false }
            state.reading = true
            return true
        }
        guard may else { throw Ended() }
        let read: Result<ByteBuffer?, any Error>
        do {
            read = .success(try await box.iterator.next())
        } catch {
            read = .failure(error)
        }
        let (waiter, overLimit) = state.withLockedValue { state in
            state.reading = false
            if case .success(let buffer) = read {
                if let buffer { state.count += buffer.readableBytes } else { state.finished = true }
                if state.count > limit { state.overLimit = true }
            } else if case .failure(let error) = read {
                state.finished = true
                state.failure = error
            }
            defer { state.waiter = nil }
            return (state.waiter, state.overLimit)
        }
        waiter?.resume()
        if overLimit { throw TooLarge() }
        return try read.get().map { Array($0.readableBytesView) }
    }

    /// Ends the upload: when it was not read to its end, `channel` is closed (what is left of it
    /// cannot be told from the next request), and a read under way is waited for.
    func end(closing channel: any Channel) async {
        let unfinished = state.withLockedValue { state in
            state.ended = true
            return !state.finished
        }
        guard unfinished else { return }
        // A failure to close is a connection closed already: its reads end all the same.
        try? await channel.close()
        await withCheckedContinuation { continuation in
            let now = state.withLockedValue { state in
                guard state.reading else { return true }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}
#endif
