// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

/// What an app hooks into a cache's storage: the last word on what is stored, after the
/// ``WillCache`` hooks, asynchronous (it may await a keychain, an actor or a database).
///
/// Every door runs it in one storage pipeline — the configuration's ``WillCache``, the call's,
/// then the delegates — for a new answer and for a stored answer a 304 freshened, before either is
/// stored. The Hummingbird middleware takes one; a `CachingHTTPClientDelegate` (CachingClient) is
/// one with a request's context and events added, and a ``WillCache`` is one too.
///
/// ```swift
/// struct KeepAccountsInMemory: ResponseCacheDelegate {
///     func willCache(_ response: CachedResponse, for request: HTTPRequest) async -> CachedResponse? {
///         var response = response
///         response.response.headerFields[.setCookie] = nil  // strip
///         if request.path?.hasPrefix("/account/") == true {
///             response.storagePolicy = .allowedInMemoryOnly  // keep off disk
///         }
///         return response
///     }
/// }
/// ```
public protocol ResponseCacheDelegate: Sendable {
    /// Decides what of `response` is stored for `request`: it, a changed copy (fields stripped,
    /// userInfo or tags added, storage downgraded to memory only, marked incomplete) or nil to
    /// store nothing. Called only for a response the HTTP rules allow to store, and for a response
    /// freshened by a 304 before it is stored again.
    func willCache(_ response: CachedResponse, for request: HTTPRequest) async -> CachedResponse?
}

extension ResponseCacheDelegate {
    /// Stores the response as proposed.
    public func willCache(_ response: CachedResponse, for request: HTTPRequest) async -> CachedResponse? {
        response
    }

    /// This delegate's `willCache` as a step of a storage pipeline.
    package var storageStep: ResponseCache.AsyncHook {
        { response, request in await self.willCache(response, for: request) }
    }
}

/// A hook is a delegate: its `willCache` runs the hook.
extension WillCache: ResponseCacheDelegate {
    public func willCache(_ response: CachedResponse, for request: HTTPRequest) async -> CachedResponse? {
        self(response, for: request)
    }
}
