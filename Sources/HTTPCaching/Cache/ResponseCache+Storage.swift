// SPDX-License-Identifier: Apache-2.0

import CacheTiers
public import HTTPTypes
import Logging

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension ResponseCache {
    /// Stores `cachedResponse` as the answer to `request`, after the configuration's ``WillCache``
    /// hook and then `willCache`.
    ///
    /// Nothing is stored when RFC 9111 §3 forbids it (``CacheRules/reasonNotToStore(_:for:)``),
    /// when a hook vetoes, when the storage policy (after the hooks) is
    /// ``StoragePolicy/notAllowed``, when the request has no URL, or when the response's `Vary`
    /// is `*`. A stored response replaces the one stored for the same URL and variant.
    /// - Parameters:
    ///   - cachedResponse: the response to store.
    ///   - request: the request it answers; its method, URL and the fields the response's `Vary`
    ///     names select where it is stored.
    ///   - willCache: a hook for this call only, run after the configuration's.
    /// - Returns: whether the response was stored (in memory at least; a tier's admission rule
    ///   may still keep a large one out of a tier).
    /// - Throws: the disk tier's write error (for example ``CacheError/Code/outOfSpace``); the
    ///   memory tier holds the response all the same.
    @discardableResult
    public func storeCachedResponse(
        _ cachedResponse: CachedResponse,
        for request: HTTPRequest,
        willCache: WillCache? = nil
    ) async throws -> Bool {
        if let reason = rules.reasonNotToStore(cachedResponse.response, for: request) {
            configuration.logger.debug("not storing a response", metadata: ["reason": "\(reason)"])
            return false
        }
        guard var response = configuration.willCache(cachedResponse, for: request) else { return false }
        if let willCache {
            guard let changed = willCache(response, for: request) else { return false }
            response = changed
        }
        guard response.storagePolicy != .notAllowed, let primaryKey = Self.primaryKey(for: request) else {
            return false
        }
        guard let varyNames = Self.varyFieldNames(response.response.headerFields) else { return false }
        let now = configuration.now()
        if varyNames.isEmpty {
            let old = await record(for: primaryKey)?.record
            try await tiers.set(
                StoredRecord.response(response).entry(storedAt: now),
                for: CacheKey(primaryKey),
                policy: response.storagePolicy
            )
            if case .variants(let index) = old {
                for variant in index.variants { _ = try? await tiers.remove(CacheKey(variant.key)) }
            }
            return true
        }
        response.varyingRequestFields = Self.fields(varyNames, of: request)
        let variantKey = Self.variantKey(primaryKey: primaryKey, names: varyNames, request: request)
        try await tiers.set(
            StoredRecord.response(response).entry(storedAt: now),
            for: CacheKey(variantKey),
            policy: response.storagePolicy
        )
        var index = VariantIndex()
        if case .variants(let existing) = await record(for: primaryKey)?.record { index = existing }
        let forgotten = index.insert(.init(fieldNames: varyNames, key: variantKey))
        try await tiers.set(StoredRecord.variants(index).entry(storedAt: now), for: CacheKey(primaryKey))
        for variant in forgotten { _ = try? await tiers.remove(CacheKey(variant.key)) }
        return true
    }

    /// The stored response for `request`, whatever its age: the one stored for its method and URL
    /// (a `HEAD` request also finds a stored `GET`), and when responses for the URL carry `Vary`,
    /// the newest variant whose varying fields match the request's (RFC 9111 §4.1).
    /// - Returns: the response, or nil when nothing matches or what was stored no longer decodes.
    /// - Complexity: one tier lookup, two when the URL has variants.
    public func cachedResponse(for request: HTTPRequest) async -> CachedResponse? {
        // The common case without an array or a second call: one plain response, one lookup.
        if request.method != .head, let primaryKey = Self.primaryKey(for: request) {
            guard let box = await record(for: primaryKey) else { return nil }
            if case .response(let response) = box.record {
                return Self.matches(box, response, request) ? response : nil
            }
            return await matching(box, primaryKey: primaryKey, request: request, limit: 1).first
        }
        return await storedResponses(for: request, limit: 1).first
    }

    /// The stored responses matching `request`, newest variant first, at most `limit` of them.
    func storedResponses(for request: HTTPRequest, limit: Int = .max) async -> [CachedResponse] {
        guard let primaryKey = Self.primaryKey(for: request) else { return [] }
        var found = await matchingResponses(primaryKey: primaryKey, request: request, limit: limit)
        if found.isEmpty, request.method == .head, let getKey = Self.primaryKey(for: request, method: .get) {
            found = await matchingResponses(primaryKey: getKey, request: request, limit: limit)
        }
        return found
    }

    /// Removes what is stored for `request`'s URL: its `GET` and `HEAD` responses and all their
    /// variants.
    /// - Throws: the disk tier's error.
    public func removeCachedResponse(for request: HTTPRequest) async throws {
        for method in [HTTPRequest.Method.get, .head] {
            guard let primaryKey = Self.primaryKey(for: request, method: method) else { continue }
            if case .variants(let index) = await record(for: primaryKey)?.record {
                for variant in index.variants { try await tiers.remove(CacheKey(variant.key)) }
            }
            try await tiers.remove(CacheKey(primaryKey))
        }
    }

    /// Removes every stored response from every tier.
    /// - Throws: the disk tier's error.
    public func removeAllCachedResponses() async throws {
        try await tiers.removeAll()
    }

    /// Removes the responses stored at or after `date`.
    /// - Throws: the disk tier's error.
    public func removeCachedResponses(since date: Date) async throws {
        try await tiers.removeEntries(storedSince: date)
    }

    // MARK: - Records

    /// The record under `key`, decoded once and kept decoded in memory; nil on a miss or when the
    /// bytes do not decode (which is then logged and forgotten).
    func record(for key: String) async -> StoredRecord.Box? {
        let cacheKey = CacheKey(key)
        let generation: UInt64
        switch tiers.memory.lookup(cacheKey) {
        case .hit(let entry):
            if let box = entry.decoded as? StoredRecord.Box { return box }
            return (try? StoredRecord(entry)).map(StoredRecord.Box.init)
        case .miss(let missGeneration):
            generation = missGeneration
        }
        var undecodable: (any Error)?
        let entry = await tiers.lowerEntry(for: cacheKey, memoryGeneration: generation) { entry in
            do {
                var prepared = entry
                prepared.decoded = StoredRecord.Box(try StoredRecord(entry))
                return prepared
            } catch {
                undecodable = error
                return nil
            }
        }
        if let undecodable {
            configuration.logger.warning(
                "dropping a stored response that does not decode",
                metadata: ["key": "\(key)", "error": "\(undecodable)"]
            )
            _ = try? await tiers.remove(cacheKey)
            return nil
        }
        guard let entry else { return nil }
        if let box = entry.decoded as? StoredRecord.Box { return box }
        return (try? StoredRecord(entry)).map(StoredRecord.Box.init)
    }

    private func matchingResponses(primaryKey: String, request: HTTPRequest, limit: Int) async -> [CachedResponse] {
        guard let box = await record(for: primaryKey) else { return [] }
        return await matching(box, primaryKey: primaryKey, request: request, limit: limit)
    }

    /// The responses of the record under `primaryKey` that match `request`'s varying fields.
    func matching(
        _ box: StoredRecord.Box,
        primaryKey: String,
        request: HTTPRequest,
        limit: Int
    ) async -> [CachedResponse] {
        switch box.record {
        case .response(let response):
            return Self.matches(box, response, request) ? [response] : []
        case .variants(let index):
            var found: [CachedResponse] = []
            var triedKeys: Set<String> = []
            for variant in index.variants where found.count < limit {
                // Only the variant whose key the request's own fields produce can match.
                let key = Self.variantKey(primaryKey: primaryKey, names: variant.fieldNames, request: request)
                guard key == variant.key, triedKeys.insert(key).inserted else { continue }
                if let variantBox = await record(for: key), case .response(let response) = variantBox.record,
                    Self.matches(variantBox, response, request)
                {
                    found.append(response)
                }
            }
            return found
        }
    }
}
