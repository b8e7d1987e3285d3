// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

/// Receives the interim (1xx) responses an upstream sends ahead of its final response, such as
/// `103 Early Hints`.
///
/// Interim responses are not part of a ``FetchResult`` and are never stored: the final response
/// is what ``HTTPTransport/send(_:body:timeout:)`` returns. A caller that passes them on (a proxy
/// does, RFC 9110 §15.2) binds a handler for the task that fetches, and a transport that can read
/// them calls ``current`` for each one, in the order they came:
///
/// ```swift
/// let handler = InterimResponseHandler { interim in print(interim.status) }
/// let result = await InterimResponseHandler.$current.withValue(handler) {
///     await client.fetch(request)
/// }
/// ```
///
/// Only the exchange the task itself starts reports to it: a request answered from the cache, or
/// one that joined an exchange already running for the same key, gets none. A revalidation the
/// request starts in the background keeps its handler and may call it after the request has its
/// answer; a handler ignores what comes too late. `HTTPClientTransport` (AsyncHTTPClient) drops
/// interim responses; `OriginTransport` (module `CacheProxyCore`) reports them.
public struct InterimResponseHandler: Sendable {
    /// The handler of the current task, if one was bound.
    @TaskLocal public static var current: InterimResponseHandler?

    private let receive: @Sendable (HTTPResponse) -> Void

    /// Creates a handler that calls `receive` with each interim response (status 100–199 except
    /// 101), on the transport's thread: it should return quickly.
    public init(_ receive: @escaping @Sendable (HTTPResponse) -> Void) {
        self.receive = receive
    }

    /// Hands `response` to the handler.
    public func callAsFunction(_ response: HTTPResponse) {
        receive(response)
    }
}
