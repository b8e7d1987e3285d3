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
    /// A step that runs after the ``WillCache`` hooks and may suspend (an app's delegate): returns
    /// the response to store, or nil to store nothing.
    package typealias AsyncHook = @Sendable (CachedResponse, HTTPRequest) async -> CachedResponse?

    /// A lookup of `request` that builds its key and reads nothing, for a call that will not use
    /// what is stored (network-only, unsafe methods); storing through it reads what it replaces.
    package func unreadLookup(_ request: HTTPRequest) -> ResponseLookup {
        ResponseLookup(request: request, key: Self.primaryKey(for: request), isRead: false)
    }

    /// Stores `cachedResponse` as the answer to `request`, after the configuration's ``WillCache``
    /// hook and then `willCache`.
    ///
    /// Nothing is stored when RFC 9111 §3 forbids it (``CacheRules/reasonNotToStore(_:for:)``),
    /// when a hook vetoes, when the storage policy (after the hooks) is
    /// `notAllowed`, when the request has no URL, or when the response's `Vary`
    /// is `*`. A stored response replaces the one stored for the same URL and variant.
    ///
    /// This call reads what the URL holds first (to keep its other variants); a caller that has a
    /// ``ResponseLookup`` stores through it instead and saves that read.
    /// - Parameters:
    ///   - cachedResponse: the response to store.
    ///   - request: the request it answers; its method, URL and the fields the response's `Vary`
    ///     names select where it is stored.
    ///   - willCache: a hook for this call only, run after the configuration's.
    /// - Returns: whether the response was stored (in memory at least; a tier's admission rule
    ///   may still keep a large one out of a tier).
    /// - Throws: ``HTTPCachingError/Code/storage`` with the disk tier's write error (for example
    ///   `outOfSpace`); the memory tier holds the response all the same.
    @discardableResult
    public func storeCachedResponse(
        _ cachedResponse: CachedResponse,
        for request: HTTPRequest,
        willCache: WillCache? = nil
    ) async throws(HTTPCachingError) -> Bool {
        let lookup = ResponseLookup(request: request, key: Self.primaryKey(for: request), isRead: false)
        return try await store(cachedResponse, for: lookup, through: StoragePipeline(willCache: willCache)) != nil
    }

    /// Stores `cachedResponse` as the answer to the lookup's request, replacing what the lookup
    /// found without reading the lower tiers again (what the memory tier holds now, when another
    /// store for the URL came since, so that its variants are kept); otherwise as
    /// ``storeCachedResponse(_:for:willCache:)-(_,HTTPRequest,_)``.
    /// - Parameters:
    ///   - cachedResponse: the response to store.
    ///   - lookup: the lookup made for the request it answers.
    ///   - willCache: a hook for this call only, run after the configuration's.
    /// - Returns: whether the response was stored.
    /// - Throws: ``HTTPCachingError/Code/storage`` with the disk tier's write error.
    @discardableResult
    public func storeCachedResponse(
        _ cachedResponse: CachedResponse,
        for lookup: ResponseLookup,
        willCache: WillCache? = nil
    ) async throws(HTTPCachingError) -> Bool {
        try await store(cachedResponse, for: lookup, through: StoragePipeline(willCache: willCache)) != nil
    }

    /// Stores as ``storeCachedResponse(_:for:willCache:)-(_,ResponseLookup,_)`` does, through
    /// `pipeline` after the configuration's hook.
    /// - Returns: the lookup as it stands after the store (the stored response first), or nil
    ///   when nothing was stored.
    package func store(
        _ cachedResponse: CachedResponse,
        for lookup: ResponseLookup,
        through pipeline: StoragePipeline,
        storedVarying: HTTPFields? = nil
    ) async throws(HTTPCachingError) -> ResponseLookup? {
        guard tiers.isOpen else {
            throw HTTPCachingError(code: .closed, message: "the cache is closed: the response was not stored")
        }
        let request = lookup.request
        let storability = rules.storability(of: cachedResponse.response, for: request)
        if let reason = storability.reason {
            configuration.logger.debug("not storing a response", metadata: ["reason": "\(reason)"])
            return nil
        }
        guard let response = await pipeline.run(cachedResponse, for: request, after: configuration.willCache)
        else { return nil }
        guard response.storagePolicy != .notAllowed, let key = lookup.key else { return nil }
        // A hook may have awaited a close.
        guard tiers.isOpen else {
            throw HTTPCachingError(code: .closed, message: "the cache is closed: the response was not stored")
        }
        if cachedResponse.response.status.code == 206 || response.response.status.code == 206 {
            return try await storePartial(response, for: lookup, key: key)
        }
        let primary = await primaryRecord(of: lookup)
        // What the rules parsed still describes the response unless a hook changed its fields.
        let parsed =
            response.response.headerFields == cachedResponse.response.headerFields ? storability.parsed : nil
        guard
            let stored = try await put(
                response,
                for: request,
                key: key,
                replacing: primary,
                parsed: parsed,
                storedVarying: storedVarying
            )
        else {
            return nil
        }
        return ResponseLookup(request: request, key: key, primary: stored.primary, first: stored.response)
    }

    /// Writes `response` (its hooks already run) under `key`, replacing what the key holds:
    /// `primary` as the caller read it, or what the memory tier holds now when a store came
    /// between. `storedVarying`, when given, are the varying fields as a stored variant already
    /// keeps them (a freshened one), used in place of `request`'s. A response without `Vary`
    /// replaces the key's record (and forgets the variants of an index it replaces); a response
    /// with `Vary` is stored under its variant key and recorded in the URL's index, which is kept
    /// no further than its most restrictive variant allows.
    /// - Returns: the key's record now and the stored response's record; nil for `Vary: *`.
    func put(
        _ response: CachedResponse,
        for request: HTTPRequest,
        key: CacheKey,
        replacing primary: StoredRecord.Box?,
        parsed: ParsedResponseFields?,
        storedVarying: HTTPFields? = nil
    ) async throws(HTTPCachingError) -> (primary: StoredRecord.Box, response: StoredRecord.Box)? {
        let parsed =
            parsed
            ?? ParsedResponseFields(
                directives: CacheControl(response.response.headerFields),
                varyNames: VaryRule.fieldNames(in: response.response.headerFields)
            )
        guard let varyNames = parsed.varyNames else { return nil }
        let now = configuration.now()
        // What the key holds is read again, and replaced, as one step per URL: two variants
        // stored at once, or one stored by a request that read the URL before another variant was
        // stored (it waited on that one's exchange), would otherwise each write an index without
        // the other's variant.
        let lock = variantIndexLocks.lock(for: key)
        await lock.lock()
        defer { lock.unlock() }
        let primary = currentRecord(for: key, readAs: primary)
        if varyNames.isEmpty {
            let entry = StoredRecord.response(response).entry(storedAt: now, parsed: parsed)
            try await HTTPCachingError.storage("storing a response") {
                try await tiers.set(entry, for: key, policy: response.storagePolicy)
            }
            if let index = primary?.variantIndex {
                for variant in index.variants { _ = try? await tiers.remove(CacheKey(variant.key)) }
            }
            if !response.tags.isEmpty { try await recordTags(of: response, for: key) }
            let box = Self.box(of: entry)
            return (box, box)
        }
        var response = response
        // The cache sets the varying fields itself, whatever a hook left there: a credential only
        // as its keyed digest. A freshened variant keeps the ones it was stored with.
        response.varyingRequestFields = storedVarying ?? storedVaryingFields(varyNames, of: request)
        let variantKey = Self.variantKey(
            primaryKey: key.string,
            names: varyNames,
            values: VaryRule.normalizedValues(of: varyNames, in: response.varyingRequestFields)
        )
        let variantEntry = StoredRecord.response(response).entry(storedAt: now, parsed: parsed)
        var index = primary?.variantIndex ?? VariantIndex()
        let forgotten = index.insert(
            .init(fieldNames: varyNames, key: variantKey, storagePolicy: response.storagePolicy)
        )
        let indexEntry = StoredRecord.variants(index).entry(storedAt: now)
        try await HTTPCachingError.storage("storing a response variant") {
            try await tiers.set(variantEntry, for: CacheKey(variantKey), policy: response.storagePolicy)
            try await tiers.set(indexEntry, for: key, policy: index.storagePolicy)
        }
        for variant in forgotten { _ = try? await tiers.remove(CacheKey(variant.key)) }
        if !response.tags.isEmpty { try await recordTags(of: response, for: key) }
        return (Self.box(of: indexEntry), Self.box(of: variantEntry))
    }

    /// What `key` holds now, for a store that read it earlier as `primary`: the memory tier's
    /// record when it has one (every store writes memory first, so it is the newest), otherwise
    /// `primary` (the memory tier let it go; reading the lower tiers again would cost a store a
    /// disk or database read for what is, at worst, a variant forgotten).
    private func currentRecord(for key: CacheKey, readAs primary: StoredRecord.Box?) -> StoredRecord.Box? {
        guard let attachment = tiers.memory.attachmentInPlace(for: key) else { return primary }
        return Self.record(attachedAs: attachment) ?? primary
    }

    /// Removes what is stored for `request`'s URL: its `GET` and `HEAD` responses and all their
    /// variants.
    /// - Throws: ``HTTPCachingError/Code/storage`` with the disk tier's error.
    public func removeCachedResponse(for request: HTTPRequest) async throws(HTTPCachingError) {
        for method in [HTTPRequest.Method.get, .head] {
            guard let key = Self.primaryKey(for: request, method: method) else { continue }
            _ = try await removeRecord(under: key)
        }
    }

    /// Removes the record under the primary `key` and, for a variant index, its variants.
    /// - Returns: whether anything was stored there.
    func removeRecord(under key: CacheKey) async throws(HTTPCachingError) -> Bool {
        let index = await record(for: key)?.variantIndex
        return try await HTTPCachingError.storage("removing a response") {
            var removed = false
            for variant in index?.variants ?? [] where try await tiers.remove(CacheKey(variant.key)) {
                removed = true
            }
            return try await tiers.remove(key) || removed
        }
    }

    /// Removes every stored response from every tier.
    /// - Throws: ``HTTPCachingError/Code/storage`` with the disk tier's error.
    public func removeAllCachedResponses() async throws(HTTPCachingError) {
        try await HTTPCachingError.storage("removing every response") { try await tiers.removeAll() }
        tagRegistry.forgetAll()
    }

    /// Removes the responses stored at or after `date`.
    /// - Throws: ``HTTPCachingError/Code/storage`` with the disk tier's error.
    public func removeCachedResponses(since date: Date) async throws(HTTPCachingError) {
        try await HTTPCachingError.storage("removing recent responses") {
            try await tiers.removeEntries(storedSince: date)
        }
    }

    /// Removes every response whose URL starts with the URL of `prefix` (a ban, as an operator
    /// bans `/static/` in Varnish): the `GET` and `HEAD` responses stored for URLs with its
    /// scheme and authority whose path (query included) starts with its path, with all their
    /// variants; with a shared tier (``Configuration/shared``), on every instance.
    ///
    /// ```swift
    /// let prefix = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/tasks/")
    /// let removed = try await cache.removeCachedResponses(withURLPrefix: prefix)
    /// ```
    /// The prefix is compared byte for byte on the normalized URL (scheme and host lowercased, the
    /// default port dropped): `/tasks` also covers `/tasks?page=2` and `/tasks-archive`.
    /// - Parameter prefix: a request whose scheme, authority and path name the prefix; its method
    ///   and fields are not used.
    /// - Returns: how many URLs held a response and were removed.
    /// - Throws: ``HTTPCachingError/Code/invalidArgument`` for a request without scheme or
    ///   authority; ``HTTPCachingError/Code/closed`` when the cache is closed;
    ///   ``HTTPCachingError/Code/storage`` with a tier's error, or when the other instances could
    ///   not be told (the responses are gone here all the same; calling it again reaches them).
    /// - Complexity: O(entries in memory), plus a read of every live record on disk (the disk
    ///   tier's index keeps digests, not keys) and of the shared tier's keys (every row, when its
    ///   rows are sealed).
    @discardableResult
    public func removeCachedResponses(withURLPrefix prefix: HTTPRequest) async throws(HTTPCachingError) -> Int {
        var removed = Set<String>()
        for method in [HTTPRequest.Method.get, .head] {
            guard let key = Self.primaryKey(for: prefix, method: method) else {
                throw HTTPCachingError(code: .invalidArgument, message: "a URL prefix needs a scheme and an authority")
            }
            let keys = try await HTTPCachingError.storage("removing the responses under a URL prefix") {
                try await tiers.removeEntries(withKeyPrefix: key.string)
            }
            // A variant's key is its URL's key, a unit separator and more: count URLs once.
            for key in keys {
                removed.insert(String(key.string.prefix { $0 != "\u{1F}" }))
            }
        }
        return removed.count
    }

    // MARK: - Records

    /// The record under `key`, read through the tiers and kept decoded in memory; nil on a miss
    /// or when the bytes do not decode (which is then logged, and the key forgotten).
    @inline(__always)
    func record(for key: CacheKey) async -> StoredRecord.Box? {
        await record(for: key, after: nil)
    }

    /// ``record(for:)`` once the memory tier answered `memoryLookup` (nil: not asked yet).
    func record(for key: CacheKey, after memoryLookup: AttachedMemoryLookup?) async -> StoredRecord.Box? {
        // Only the attachment: a memory hit copies nothing of the entry's bytes.
        let attach = { (entry: CacheEntry) -> (any CacheAttachment)? in
            do {
                return try StoredRecord.Box.of(entry)
            } catch {
                configuration.logger.warning(
                    "dropping a stored response that does not decode",
                    metadata: ["key": "\(key)", "error": "\(error)"]
                )
                return nil
            }
        }
        let attachment =
            if let memoryLookup {
                await tiers.attachment(for: key, after: memoryLookup, attaching: attach)
            } else {
                await tiers.attachment(for: key, attaching: attach)
            }
        guard let attachment else { return nil }
        if let box = Self.record(attachedAs: attachment) { return box }
        // An outside caller of the tiers replaced the attachment: decode the bytes again.
        return await tiers.entry(for: key).map(Self.box(of:))
    }

    /// `attachment` as the record this cache attached, or nil when an outside caller of the tiers
    /// replaced it.
    @inline(__always)
    static func record(attachedAs attachment: any CacheAttachment) -> StoredRecord.Box? {
        // The box is final: comparing types is enough, and much cheaper than a dynamic cast.
        guard type(of: attachment) == StoredRecord.Box.self else { return nil }
        return unsafeDowncast(attachment, to: StoredRecord.Box.self)
    }

    /// What the lookup's key holds: as the lookup found it, or read now for a lookup that only
    /// built its key.
    func primaryRecord(of lookup: ResponseLookup) async -> StoredRecord.Box? {
        guard !lookup.isRead, let key = lookup.key else { return lookup.primary }
        return await record(for: key)
    }

    /// The record attached to `entry` (decoded again only if an outside caller of the tiers
    /// replaced the attachment; an entry that does not decode reads as an empty index).
    static func box(of entry: CacheEntry) -> StoredRecord.Box {
        (try? StoredRecord.Box.of(entry)) ?? StoredRecord.Box(.variants(VariantIndex()), metadataBytes: 0)
    }

    /// The stored responses under `primaryKey` (whose record is `primary`) that match
    /// `request`'s varying fields, newest first.
    func matching(
        _ primary: StoredRecord.Box?,
        primaryKey: CacheKey,
        request: HTTPRequest
    ) async -> [StoredRecord.Box] {
        guard let primary else { return [] }
        if let response = primary.response {
            return matches(primary, response, request) ? [primary] : []
        }
        var found: [StoredRecord.Box] = []
        var triedKeys: Set<String> = []
        for variant in primary.variantIndex?.variants ?? [] {
            // Only the variant whose key the request's own fields produce can match.
            let key = variantKey(primaryKey: primaryKey.string, names: variant.fieldNames, request: request)
            guard key == variant.key, triedKeys.insert(key).inserted else { continue }
            if let box = await record(for: CacheKey(key)), let response = box.response,
                matches(box, response, request)
            {
                found.append(box)
            }
        }
        if found.isEmpty, let variants = primary.variantIndex?.variants {
            return await negotiated(variants, request: request)
        }
        return found
    }

    /// When no variant's fields match the request's, the newest variant that varies on
    /// `Accept-Language`, whose other varying fields match, and whose `Content-Language` is the
    /// request's first choice (``LanguagePreference/isFirstChoice(_:for:)``): the variant the
    /// origin would have chosen (RFC 9111 §4.1 lets a cache select by a field's meaning).
    /// Reads only on a would-be miss of a URL that varies on `Accept-Language`.
    private func negotiated(_ variants: [VariantIndex.Variant], request: HTTPRequest) async -> [StoredRecord.Box] {
        let acceptLanguage = request.headerFields[values: .acceptLanguage]
        guard !acceptLanguage.isEmpty else { return [] }
        var triedKeys: Set<String> = []
        for variant in variants {
            guard let languageIndex = variant.fieldNames.firstIndex(of: "accept-language"),
                triedKeys.insert(variant.key).inserted,
                let box = await record(for: CacheKey(variant.key)), let response = box.response,
                box.varyFieldNames == variant.fieldNames, let stored = box.storedVaryValues,
                let language = response.response.headerFields[.contentLanguage],
                LanguagePreference.isFirstChoice(language, for: acceptLanguage)
            else { continue }
            let values = varyValues(of: variant.fieldNames, in: request.headerFields)
            guard stored.count == values.count,
                stored.indices.allSatisfy({ $0 == languageIndex || stored[$0] == values[$0] })
            else { continue }
            return [box]
        }
        return []
    }
}
