// SPDX-License-Identifier: Apache-2.0

import CacheTiers
public import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A step a response passes through before it is stored: it returns the response unchanged, a
/// changed copy (headers stripped, userInfo added, storage downgraded to memory only), or nil to
/// veto storage.
///
/// A ``ResponseCache`` runs its configuration's hook, then the one passed to the store call.
/// Hooks compose with ``then(_:)``:
///
/// ```swift
/// let hook = WillCache.stripCredentials
///     .then(.stampStoredDate(key: "storedAt"))
///     .then(.memoryOnly { _, request in request.path?.hasPrefix("/me/") == true })
/// ```
public struct WillCache: Sendable {
    private let body: @Sendable (CachedResponse, HTTPRequest) -> CachedResponse?

    /// A hook from a closure that receives the proposed response and the request that produced it.
    /// - Parameter body: returns the response to store, or nil to store nothing.
    public init(_ body: @escaping @Sendable (CachedResponse, HTTPRequest) -> CachedResponse?) {
        self.body = body
    }

    /// Runs the hook.
    /// - Returns: the response to store, or nil when the hook vetoes storage.
    public func callAsFunction(_ response: CachedResponse, for request: HTTPRequest) -> CachedResponse? {
        body(response, request)
    }

    /// This hook, then `next` on what it returned; a veto by either is a veto.
    public func then(_ next: WillCache) -> WillCache {
        WillCache { response, request in
            self(response, for: request).flatMap { next($0, for: request) }
        }
    }

    /// Stores every response as proposed.
    public static let identity = WillCache { response, _ in response }

    /// Removes the named fields from the stored response head.
    /// - Parameter names: the fields to remove, all their lines.
    public static func stripHeaders(_ names: [HTTPField.Name]) -> WillCache {
        WillCache { response, _ in
            var response = response
            for name in names {
                response.response.headerFields[values: name] = []
            }
            return response
        }
    }

    /// The fields that carry a user's credentials or session in a response head:
    /// `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, `Set-Cookie2`,
    /// `WWW-Authenticate`, `Proxy-Authenticate`, `Authentication-Info` and
    /// `Proxy-Authentication-Info`.
    public static let credentialFieldNames: [HTTPField.Name] = [
        .authorization, .proxyAuthorization, .cookie, .setCookie, .wwwAuthenticate, .proxyAuthenticate,
        HTTPField.Name("Set-Cookie2")!, .authenticationInfo, .proxyAuthenticationInfo,
    ]

    /// Removes ``credentialFieldNames`` from the stored response head.
    public static let stripCredentials = stripHeaders(credentialFieldNames)

    /// Records the time of storage in the response's userInfo under `key`.
    /// - Parameters:
    ///   - key: the userInfo key to set.
    ///   - now: the clock; defaults to the system's.
    public static func stampStoredDate(
        key: String,
        now: @escaping @Sendable () -> Date = { Date() }
    ) -> WillCache {
        WillCache { response, _ in
            var response = response
            response.userInfo[key] = .date(now())
            return response
        }
    }

    /// Downgrades storage to memory only when `condition` holds; a response already kept out of
    /// storage stays out.
    public static func memoryOnly(
        when condition: @escaping @Sendable (CachedResponse, HTTPRequest) -> Bool
    ) -> WillCache {
        WillCache { response, request in
            guard response.storagePolicy == .allowed, condition(response, request) else { return response }
            var response = response
            response.storagePolicy = .allowedInMemoryOnly
            return response
        }
    }

    /// Adds the tags `tags` returns to the stored response's ``CachedResponse/tags``, so that
    /// ``ResponseCache/invalidate(tag:)`` and ``ResponseCache/markStale(tag:)`` reach it: derive
    /// them from the URL (a prefix, a resource type) or the response.
    ///
    /// ```swift
    /// .tagging { _, request in request.path?.hasPrefix("/tasks") == true ? ["tasks"] : [] }
    /// ```
    public static func tagging(
        _ tags: @escaping @Sendable (CachedResponse, HTTPRequest) -> Set<String>
    ) -> WillCache {
        WillCache { response, request in
            let new = tags(response, request)
            guard !new.isSubset(of: response.tags) else { return response }
            var response = response
            response.tags.formUnion(new)
            return response
        }
    }

    /// Vetoes storage when `condition` holds.
    public static func never(
        when condition: @escaping @Sendable (CachedResponse, HTTPRequest) -> Bool
    ) -> WillCache {
        WillCache { response, request in condition(response, request) ? nil : response }
    }
}
