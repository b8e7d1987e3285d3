// SPDX-License-Identifier: Apache-2.0

package import HTTPTypes
import Synchronization

/// A transport that can hand over an answer's head as soon as it arrives and its body as it
/// comes, for callers that pass bodies on as they arrive (cache-proxy's own transport does).
///
/// The client streams only for a caller that asked for it
/// (``CachingHTTPClient/fetchStreaming(_:body:)``); every other call uses
/// ``HTTPTransport/send(_:body:timeout:)``.
package protocol StreamingHTTPTransport: HTTPTransport {
    /// Sends `request` and returns its final answer's head once it arrived, with its body still
    /// to be read. Interim answers go to ``InterimResponseHandler/current`` as with `send`.
    /// - Parameters:
    ///   - body: the request body when it is all there, or nil.
    ///   - bodyParts: the request body read as it comes (sent as it is read), or nil; never
    ///     given with `body`. A request sent so is never sent again (its body is gone).
    ///   - timeout: how long the head may take after the request's body was sent; each part of
    ///     `bodyParts` may take that long too.
    func stream(
        _ request: HTTPRequest,
        body: [UInt8]?,
        bodyParts: RequestBodySource?,
        timeout: Duration
    ) async throws -> StreamedTransportResponse
}

/// A request body read in parts as it comes (a client's upload), by one reader.
package struct RequestBodySource: Sendable {
    /// The body's declared length, or nil when it is unknown (it goes chunked).
    package let length: Int?
    private let nextPart: @Sendable () async throws -> [UInt8]?

    /// - Parameters:
    ///   - length: the declared length, or nil.
    ///   - next: the next part, or nil after the last; throws when the body cannot be read.
    package init(length: Int?, next: @escaping @Sendable () async throws -> [UInt8]?) {
        self.length = length
        self.nextPart = next
    }

    /// The next part, or nil after the last.
    package func next() async throws -> [UInt8]? { try await nextPart() }

    /// The whole body.
    package func collect() async throws -> [UInt8] {
        var whole: [UInt8] = []
        while let part = try await next() { whole += part }
        return whole
    }
}

/// An answer whose body is still arriving.
package struct StreamedTransportResponse: Sendable {
    /// The status and header fields.
    package var response: HTTPResponse
    /// The body, read in parts.
    package var body: ResponseBodySource
    /// The whole body when it came with the head (a short one): the client then takes the answer
    /// as a whole one, without reading ``body``.
    package var whole: [UInt8]?
    /// What the bytes kept of this body to store it count against (the transport's bound on what
    /// its answers hold at once), or nil for no bound.
    package var budget: RetentionBudget?

    package init(
        response: HTTPResponse,
        body: ResponseBodySource,
        whole: [UInt8]? = nil,
        budget: RetentionBudget? = nil
    ) {
        self.response = response
        self.body = body
        self.whole = whole
        self.budget = budget
    }
}

/// A bound on the bytes held at once: what a streamed body kept for storing takes from it, and
/// gives back when it is let go.
package struct RetentionBudget: Sendable {
    private let taking: @Sendable (Int) -> Bool
    private let giving: @Sendable (Int) -> Void

    /// - Parameters:
    ///   - take: takes that many bytes, or returns false (taking nothing) when fewer are left.
    ///   - give: gives back bytes taken before.
    package init(take: @escaping @Sendable (Int) -> Bool, give: @escaping @Sendable (Int) -> Void) {
        self.taking = take
        self.giving = give
    }

    package func take(_ count: Int) -> Bool { taking(count) }
    package func give(_ count: Int) { giving(count) }
}

/// A body read in parts from one connection, by one reader.
package struct ResponseBodySource: Sendable {
    private let nextPart: @Sendable () async throws -> [UInt8]?
    private let abandon: @Sendable () -> Void

    /// - Parameters:
    ///   - next: the next part (never empty), or nil after the last; it throws when the body
    ///     broke off before its end (the connection closed or failed), which is never a short
    ///     body presented as whole.
    ///   - cancel: gives the body up: its connection is closed, nothing more is read.
    package init(next: @escaping @Sendable () async throws -> [UInt8]?, cancel: @escaping @Sendable () -> Void) {
        self.nextPart = next
        self.abandon = cancel
    }

    /// A body that is all there already.
    package init(whole: [UInt8]) {
        let taken = Latch(whole)
        self.init(next: { taken.take() }, cancel: {})
    }

    /// The next part, or nil after the last.
    package func next() async throws -> [UInt8]? { try await nextPart() }

    /// Gives the body up.
    package func cancel() { abandon() }
}

/// A value taken once.
private final class Latch: Sendable {
    private let value: Mutex<[UInt8]?>
    init(_ value: [UInt8]) { self.value = Mutex(value.isEmpty ? nil : value) }
    func take() -> [UInt8]? {
        value.withLock { value in
            defer { value = nil }
            return value
        }
    }
}
