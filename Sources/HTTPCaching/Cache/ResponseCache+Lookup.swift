// SPDX-License-Identifier: Apache-2.0

import CacheTiers
public import HTTPTypes

extension ResponseCache {
    /// Looks `request` up once: builds its normalized key, reads the record stored under it (a
    /// response, or the URL's variant index and then the variant the request's fields select) and
    /// keeps what it found, decoded and with its freshness facts, in the returned value.
    ///
    /// A `HEAD` request that finds nothing of its own finds a stored `GET` response.
    /// - Parameter request: the request; without an absolute URL nothing is found.
    /// - Returns: the lookup, to judge with ``decision(for:now:)-(ResponseLookup,_)`` and to store
    ///   through.
    /// - Complexity: one tier read for a URL without variants, two for a URL with variants. A
    ///   memory hit on a response without `Vary` never suspends, decodes nothing and makes no key
    ///   string: the lookup makes its ``ResponseLookup/key`` when it is asked for.
    public func lookup(_ request: HTTPRequest) async -> ResponseLookup {
        switch startLookup(request) {
        case .hit(let hit): return lookup(request, hit: hit)
        case .done(let lookup): return lookup
        case .pending(let pending): return await finishLookup(pending)
        }
    }

    /// A lookup begun in the memory tier, synchronously: a hit on a response without `Vary`;
    /// done when nothing more can be read (a closed cache, a request without a URL); else
    /// pending, to finish with ``finishLookup(_:)`` — which does not ask the memory tier again.
    package enum LookupStart: Sendable {
        /// A decoded response without `Vary` in memory: the answer to every request for its key.
        /// ``lookup(_:hit:)`` makes the ``ResponseLookup`` when one is needed.
        case hit(MemoryHit)
        case done(ResponseLookup)
        case pending(PendingLookup)
    }

    /// What a memory hit found: the record, nothing copied, no key made.
    package struct MemoryHit: Sendable {
        let record: StoredRecord.Box
        /// The stored response (a reference to its storage).
        package var stored: CachedResponse? { record.response }
    }

    /// The lookup a memory hit of `request` amounts to.
    package func lookup(_ request: HTTPRequest, hit: MemoryHit) -> ResponseLookup {
        ResponseLookup(request: request, deferringKeyOf: hit.record)
    }

    /// A lookup that the memory tier did not finish: what it found so far.
    package struct PendingLookup: Sendable {
        fileprivate let request: HTTPRequest
        fileprivate let rest: ProbeRest
    }

    /// The first, synchronous part of ``lookup(_:)``: one memory-tier read; a caller on a hot path
    /// answers a done lookup without suspending.
    package func startLookup(_ request: HTTPRequest) -> LookupStart {
        switch probe(request) {
        case .closed:
            return .done(ResponseLookup(request: request, key: Self.primaryKey(for: request), isCacheClosed: true))
        case .noURL:
            return .done(ResponseLookup(request: request, key: nil, isCacheClosed: !tiers.isOpen))
        case .hit(let box):
            return .hit(MemoryHit(record: box))
        case .rest(let rest):
            return .pending(PendingLookup(request: request, rest: rest))
        }
    }

    /// The rest of ``lookup(_:)`` after ``startLookup(_:)``: the lower tiers and the variants.
    package func finishLookup(_ pending: PendingLookup) async -> ResponseLookup {
        let found = await find(pending.request, after: pending.rest)
        return ResponseLookup(
            request: pending.request,
            key: found.key,
            primary: found.primary,
            first: found.matches.first,
            others: found.matches.others
        )
    }

    /// The stored response for `request`, whatever its age: the one stored for its method and URL
    /// (a `HEAD` request also finds a stored `GET`), and when responses for the URL carry `Vary`,
    /// the newest variant whose varying fields match the request's (RFC 9111 §4.1).
    /// - Returns: the response, or nil when nothing matches or what was stored no longer decodes.
    /// - Complexity: as ``lookup(_:)``.
    ///
    /// It runs on the caller's executor (`nonisolated(nonsending)`): a memory hit never suspends,
    /// and a hop to the global executor on entry cost a sixth of a hit.
    public nonisolated(nonsending) func cachedResponse(for request: HTTPRequest) async -> CachedResponse? {
        let found = probe(request)
        switch consume found {
        case .closed, .noURL: return nil
        case .hit(let box): return box.response
        case .rest(let rest): return await find(request, after: rest).matches.first?.response
        }
    }

    /// What ``probe(_:)`` found in the memory tier.
    enum Probe {
        /// The cache is closed: nothing is read.
        case closed
        /// The request has no absolute URL: nothing is stored for it.
        case noURL
        /// A decoded response without `Vary`: the answer to every request for the key. No key
        /// string was made.
        case hit(StoredRecord.Box)
        /// The lookup goes on: ``find(_:after:)``.
        case rest(ProbeRest)
    }

    /// What a lookup still has to read after the memory tier's answer.
    enum ProbeRest: Sendable {
        /// A decoded record that is not a response without `Vary` (a variant index, a response
        /// with `Vary`): the variants are still to be read.
        case attached(CacheKey, StoredRecord.Box)
        /// An attachment this cache did not make (an outside caller of the tiers replaced it):
        /// everything is read again.
        case unknownAttachment
        /// Anything else: the key, and the memory tier's answer, to finish the read with
        /// ``record(for:after:)``.
        case read(CacheKey, AttachedMemoryLookup)
    }

    /// The memory tier's record for `request`'s primary key, looked up synchronously by the key's
    /// bytes built on the stack: a hit makes no key string (only a lookup that goes on needs one).
    /// The memory tier counts one lookup.
    func probe(_ request: HTTPRequest) -> Probe {
        guard let scheme = request.scheme, let authority = request.authority else { return .noURL }
        let probe = URLKey.withUTF8(
            method: request.method.rawValue,
            scheme: scheme,
            authority: authority,
            path: request.path ?? "/"
        ) { tiers.probeMemory(utf8: $0) }
        // Consumed, not copied: a hit moves its attachment out (no retain and release of it).
        switch consume probe {
        case .closed:
            return .closed
        case .attached(let attachment):
            guard let box = Self.record(attachedAs: attachment) else { return .rest(.unknownAttachment) }
            if box.answersEveryRequest { return .hit(box) }
            guard let key = Self.primaryKey(for: request) else { return .noURL }
            return .rest(.attached(key, box))
        case .notAttached(let key, let memoryLookup):
            return .rest(.read(key, memoryLookup))
        }
    }

    /// What a lookup finds once the memory tier answered: the record under the key, read
    /// through the lower tiers where needed, and the stored responses that answer the request.
    private func find(_ request: HTTPRequest, after rest: ProbeRest) async -> Found {
        switch rest {
        case .unknownAttachment:
            guard let key = Self.primaryKey(for: request) else { return (nil, nil, (nil, [])) }
            return await find(request, key: key, primary: await record(for: key))
        case .attached(let key, let primary):
            return await find(request, key: key, primary: primary)
        case .read(let key, let memoryLookup):
            return await find(request, key: key, primary: await record(for: key, after: memoryLookup))
        }
    }

    /// What a lookup finds: the request's key, the record under it, and the stored responses that
    /// answer the request (newest first).
    typealias Found = (
        key: CacheKey?, primary: StoredRecord.Box?, matches: (first: StoredRecord.Box?, others: [StoredRecord.Box])
    )

    /// What ``lookup(_:)`` finds once the record under the request's key is read.
    private func find(_ request: HTTPRequest, key: CacheKey, primary: StoredRecord.Box?) async -> Found {
        // The common case: one plain response under the key, which every request matches.
        if let primary, primary.answersEveryRequest {
            return (key, primary, (primary, []))
        }
        if let partial = primary?.partial {
            // Partial content answers a range it holds, as a 206 of that range; nothing else.
            guard let answer = partial.answer(to: request) else { return (key, primary, (nil, [])) }
            return (key, primary, (StoredRecord.Box(.response(answer), metadataBytes: 0), []))
        }
        var found = await matching(primary, primaryKey: key, request: request)
        if found.isEmpty, request.method == .head, let getKey = Self.primaryKey(for: request, method: .get) {
            found = await matching(await record(for: getKey), primaryKey: getKey, request: request)
        }
        return (key, primary, (found.first, Array(found.dropFirst())))
    }
}
