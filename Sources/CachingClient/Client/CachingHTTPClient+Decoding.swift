// SPDX-License-Identifier: Apache-2.0

import HTTPCaching
public import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A decoded answer: the app's value with where it came from and how fresh it is.
public struct FetchedValue<Value: Sendable>: Sendable {
    /// The decoded body.
    public var value: Value
    /// The answer it was decoded from (its body included).
    public var result: FetchResult

    /// How fresh the value is.
    public var freshness: Freshness { result.freshness }
    /// Where it came from.
    public var source: FetchResult.Source { result.source }
}

extension CachingHTTPClient {
    /// Fetches `request` and decodes its body as `Value` with `decode`.
    ///
    /// - Parameters:
    ///   - type: the type to decode.
    ///   - request: the request.
    ///   - policy: how to use the cache; nil: the configuration's.
    ///   - freshness: the TTLs; nil: the configuration's.
    ///   - decode: turns the body into a value; JSON by default.
    /// - Returns: the value, with the answer's freshness and source.
    /// - Throws: ``CachingClientError``: the fetch's error when there is no good (2xx) answer,
    ///   ``CachingClientError/Code/parse`` with the decoder's error when decoding fails.
    public func fetch<Value: Decodable & Sendable>(
        _ type: Value.Type,
        for request: HTTPRequest,
        policy: CachePolicy? = nil,
        freshness: FreshnessClass? = nil,
        decode: (Value.Type, Data) throws -> Value = { try JSONDecoder().decode($0, from: $1) }
    ) async throws(CachingClientError) -> FetchedValue<Value> {
        let result = await fetch(request, policy: policy, freshness: freshness)
        let body = try result.requireBody()
        do {
            return FetchedValue(value: try decode(type, Data(body)), result: result)
        } catch {
            throw CachingClientError(
                code: .parse,
                message: "the body did not decode as \(Value.self)",
                response: result.response,
                underlying: error
            )
        }
    }
}
