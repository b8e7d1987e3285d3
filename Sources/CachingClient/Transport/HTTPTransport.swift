// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

/// The one protocol a network client implements so that ``CachingHTTPClient`` can send requests
/// through it.
///
/// A transport sends one request and returns the whole response. It does not cache, retry or
/// follow redirects on its own account: the caching client decides those. It reports failures
/// by throwing; a ``CachingClientError`` with code ``CachingClientError/Code/noConnection``,
/// ``CachingClientError/Code/timeout`` or ``CachingClientError/Code/network`` tells the client
/// what kind of failure it was, and any other error counts as ``CachingClientError/Code/network``.
///
/// The module `AsyncHTTPClientTransport` adapts swift-server's AsyncHTTPClient.
public protocol HTTPTransport: Sendable {
    /// Sends `request` with `body` and returns the response with its whole body.
    /// - Parameters:
    ///   - request: the request head; its URL is absolute (scheme, authority and path).
    ///   - body: the request body, or nil for none.
    ///   - timeout: how long the whole exchange may take.
    /// - Returns: the response head and body.
    /// - Throws: a ``CachingClientError`` that says what failed, or any error (counted as a
    ///   network failure); `CancellationError` when the calling task is cancelled.
    func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse
}

/// A response as a transport received it.
public struct HTTPTransportResponse: Sendable, Hashable {
    /// The status and header fields, repeated fields in order.
    public var response: HTTPResponse
    /// The whole body; empty for none.
    public var body: [UInt8]

    /// Creates a response.
    public init(response: HTTPResponse, body: [UInt8] = []) {
        self.response = response
        self.body = body
    }
}
