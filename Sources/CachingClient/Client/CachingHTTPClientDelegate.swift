// SPDX-License-Identifier: Apache-2.0

public import HTTPCaching
public import HTTPTypes

/// What an app hooks into a ``CachingHTTPClient``: the last word on what is stored
/// (``willCache(_:for:)-(_,FetchContext)``) and each request's lifecycle (``fetch(_:didEmit:)``).
///
/// Both methods are `async`: a delegate may await a keychain, an actor or a database. Both have
/// default implementations (store as proposed; ignore events), so a delegate implements what it
/// needs. One delegate sits in the client's ``CachingHTTPClient/Configuration/delegate``, and one
/// may be passed with each request; the request's runs after the client's, and both run after the
/// cache's own ``HTTPCaching/WillCache`` hooks. A ``HTTPCaching/WillCache`` is a delegate too.
///
/// ```swift
/// struct KeychainDelegate: CachingHTTPClientDelegate {
///     let vault: Vault  // an actor
///     func willCache(_ response: CachedResponse, for context: FetchContext) async -> CachedResponse? {
///         guard await vault.isUnlocked else { return nil }  // veto
///         var response = response
///         response.response.headerFields[.setCookie] = nil  // strip
///         if context.request.path?.hasPrefix("/me/") == true {
///             response.storagePolicy = .allowedInMemoryOnly  // keep off disk
///         }
///         return response
///     }
/// }
/// ```
public protocol CachingHTTPClientDelegate: ResponseCacheDelegate {
    /// Decides what of `response` is stored: it, a changed copy (fields stripped, userInfo or tags
    /// added, storage downgraded to memory only, marked incomplete) or nil to store nothing.
    /// Called only for a response the HTTP rules allow to store, and for a response freshened by a
    /// 304 before it is stored again.
    func willCache(_ response: CachedResponse, for context: FetchContext) async -> CachedResponse?

    /// Hears what happened to a request, in order (see ``FetchEvent``). The request waits for
    /// the call to return.
    func fetch(_ context: FetchContext, didEmit event: FetchEvent) async
}

extension CachingHTTPClientDelegate {
    /// Stores the response as proposed.
    public func willCache(_ response: CachedResponse, for context: FetchContext) async -> CachedResponse? {
        response
    }

    /// Ignores the event.
    public func fetch(_ context: FetchContext, didEmit event: FetchEvent) async {}

    /// ``willCache(_:for:)-(_,FetchContext)`` with the context of a request read by the protocol
    /// (``CachePolicy/useProtocolCachePolicy``, ``FreshnessClass/http``): what a door that is not
    /// the client (the Hummingbird middleware) asks.
    public func willCache(_ response: CachedResponse, for request: HTTPRequest) async -> CachedResponse? {
        await willCache(response, for: FetchContext(request: request))
    }
}

extension CachingHTTPClientDelegate {
    /// This delegate's `willCache`, asked with `context`, as a step of a storage pipeline.
    package func storageStep(_ context: FetchContext) -> ResponseCache.AsyncHook {
        { response, _ in await self.willCache(response, for: context) }
    }
}

/// A ``HTTPCaching/WillCache`` hook as a delegate: its `willCache` runs the hook.
extension WillCache: CachingHTTPClientDelegate {
    public func willCache(_ response: CachedResponse, for request: HTTPRequest) async -> CachedResponse? {
        self(response, for: request)
    }

    public func willCache(_ response: CachedResponse, for context: FetchContext) async -> CachedResponse? {
        self(response, for: context.request)
    }
}

/// What the client knows of a request when it calls its delegates.
public struct FetchContext: Sendable {
    /// The caller's request.
    public var request: HTTPRequest
    /// The policy it is fetched under.
    public var policy: CachePolicy
    /// Its freshness class.
    public var freshness: FreshnessClass

    /// A context for `request`, as the client makes one for each call: an app builds one to test
    /// its own delegate, and a caller that is not the client (a server middleware) to run the same
    /// delegates.
    /// - Parameters:
    ///   - request: the caller's request.
    ///   - policy: the policy it is fetched under; default `useProtocolCachePolicy`.
    ///   - freshness: its freshness class; default `.http`.
    public init(
        request: HTTPRequest,
        policy: CachePolicy = .useProtocolCachePolicy,
        freshness: FreshnessClass = .http
    ) {
        self.request = request
        self.policy = policy
        self.freshness = freshness
    }
}

/// One step of a request's lifecycle, as `events(for:body:policy:freshness:willCache:delegate:)`
/// yields it and ``CachingHTTPClientDelegate/fetch(_:didEmit:)`` hears it.
///
/// Every request emits `started`, then `cacheResponse` (always), then — when it asked the
/// network in the foreground — `serverResponse` or `failed`, then `finished`:
///
/// | mode (policy) | events |
/// |---|---|
/// | active (``CachePolicy/cacheThenNetwork``) | started, cacheResponse, serverResponse or failed, finished (= the server's answer, or the failure) |
/// | passive (``CachePolicy/cacheOnly``) | started, cacheResponse, finished (= the cached answer, or missing) |
/// | other policies | started, cacheResponse, [serverResponse or failed when the network was asked], finished |
///
/// A closed cache: the active mode still asks the server (`cacheResponse` carries "nothing
/// cached" with the ``CachingClientError/Code/closed`` error; nothing is stored, and the final
/// answer's ``FetchResult/cacheError`` says so); the passive mode finishes with the closed error.
public enum FetchEvent: Sendable {
    /// The request began.
    case started
    /// What the cache offers: the stored answer (with its freshness), or "nothing cached"
    /// (``FetchResult/freshness`` ``Freshness/missing``, no body, and no error unless the cache is
    /// closed) — never an empty body standing in for nothing.
    case cacheResponse(FetchResult)
    /// The server answered (any status; a 304 is reported as the revalidated stored answer).
    case serverResponse(FetchResult)
    /// The network was asked and failed (no connection, timeout, backing off, cancelled).
    case failed(CachingClientError)
    /// The request is over; this is the answer ``CachingHTTPClient/fetch(_:body:policy:freshness:willCache:delegate:)``
    /// returns.
    case finished(FetchResult)
}

extension FetchEvent {
    /// Which step of the lifecycle an event is, without its payload: what a test or a delegate
    /// compares and switches on.
    public enum Kind: Hashable, Sendable, CustomStringConvertible {
        case started, cacheResponse, serverResponse, failed, finished

        public var description: String {
            switch self {
            case .started: "started"
            case .cacheResponse: "cacheResponse"
            case .serverResponse: "serverResponse"
            case .failed: "failed"
            case .finished: "finished"
            }
        }
    }

    /// The event's step.
    public var kind: Kind {
        switch self {
        case .started: .started
        case .cacheResponse: .cacheResponse
        case .serverResponse: .serverResponse
        case .failed: .failed
        case .finished: .finished
        }
    }

    /// The answer the event carries: the cache's offer, the server's answer or the final answer;
    /// nil for ``FetchEvent/started`` and ``FetchEvent/failed(_:)``.
    public var result: FetchResult? {
        switch self {
        case .cacheResponse(let result), .serverResponse(let result), .finished(let result): result
        case .started, .failed: nil
        }
    }

    /// The failure a ``FetchEvent/failed(_:)`` event carries; nil for the others (an answer's own error is its
    /// ``FetchResult/error``).
    public var error: CachingClientError? {
        if case .failed(let error) = self { return error }
        return nil
    }
}
