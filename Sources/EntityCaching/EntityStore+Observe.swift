// SPDX-License-Identifier: Apache-2.0

public import CachingClient
import HTTPCaching
import Synchronization

extension EntityStore {
    /// Observes a query under a read policy: the cached list at once (or "missing" — never an
    /// error for that), then the refreshed one, as the policy says (the client's table,
    /// `CachePolicy`):
    ///
    /// | policy | fresh list | stale list | no list | fetcher fails |
    /// |---|---|---|---|---|
    /// | `cacheFirst` | cache | cache, refresh behind | network | stale, with the error |
    /// | `useProtocolCachePolicy` | cache | network (conditional) | network | stale, with the error |
    /// | `networkFirst` | network | network | network | stale after the timeout |
    /// | `staleWhileRevalidate` | cache | cache, then network | network | stale |
    /// | `cacheThenNetwork` | cache, then network | cache, then network | "missing", then network | the error |
    /// | `cacheOnly` | cache | cache | "missing" | — |
    /// | `returnCacheDataDontLoad` | cache | cache | "missing", error `notCached` | — |
    /// | `networkOnly` | network | network | network | the error |
    /// | `returnCacheDataElseLoad` | cache | cache | network | the error |
    ///
    /// A list past `freshness`'s hard TTL, past its validation window, or with entities the store
    /// no longer holds counts as no list for the policies that may ask the network (the refresh
    /// is then unconditional when entities are missing); the passive policies return it with its
    /// marker (``QueryResult/missingIDs``, the freshness).
    ///
    /// With `followingChanges`, the sequence goes on after the policy's last answer: every commit
    /// that changes the list or marks it stale (a refresh, a mutation, a change feed, a background
    /// refresh) yields the list as stored, until the consumer stops iterating.
    public func observe(
        _ query: EntityQuery,
        policy: CachePolicy = .staleWhileRevalidate,
        freshness: FreshnessClass = .http,
        followingChanges: Bool = false,
        using fetch: @escaping QueryFetcher
    ) -> AsyncStream<QueryResult<Entity>> {
        let (stream, continuation) = AsyncStream.makeStream(of: QueryResult<Entity>.self)
        // Registered before the first read: no change after it is missed.
        let registration = followingChanges ? observers.register(query.key) : nil
        let task = Task {
            await answers(query, policy: policy, freshness: freshness, fetch: fetch) { continuation.yield($0) }
            if let registration {
                for await _ in registration.signals {
                    continuation.yield(await read(query, freshness: freshness))
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in
            task.cancel()
            registration?.cancel()
        }
        return stream
    }

    /// The policy's answers for `query`, in order.
    func answers(
        _ query: EntityQuery,
        policy: CachePolicy,
        freshness rule: FreshnessClass,
        fetch: @escaping QueryFetcher,
        yield: (QueryResult<Entity>) -> Void
    ) async {
        let now = configuration.now()
        let snapshot = await consistently { await self.snapshot(of: query) }
        var cached = snapshot.result(freshness: rule, now: now)
        let usable =
            snapshot.index != nil && snapshot.missing.isEmpty && !snapshot.isPastHardTTL(rule, now: now)
            && cached.freshness != .stale(.notValidated)
        switch policy.kind {
        case .cacheOnly:
            yield(cached)
        case .returnCacheDataDontLoad:
            if !cached.hasAnswer {
                cached.error = CachingClientError(code: .notCached, message: "\(query): no list is stored")
            }
            yield(cached)
        case .networkOnly:
            yield(await refreshed(query, conditional: false, stored: snapshot, fallback: nil, fetch: fetch))
        case .returnCacheDataElseLoad:
            if cached.hasAnswer && cached.isComplete {
                yield(cached)
            } else {
                yield(await refreshed(query, conditional: true, stored: snapshot, fallback: nil, fetch: fetch))
            }
        case .cacheFirst:
            guard usable else {
                yield(await refreshed(query, conditional: true, stored: snapshot, fallback: cached, fetch: fetch))
                return
            }
            yield(cached)
            if !cached.freshness.isFresh {
                Task { _ = await refreshed(query, conditional: true, stored: snapshot, fallback: nil, fetch: fetch) }
            }
        case .useProtocol:
            if usable && cached.freshness.isFresh {
                yield(cached)
            } else {
                yield(await refreshed(query, conditional: true, stored: snapshot, fallback: cached, fetch: fetch))
            }
        case .networkFirst(let timeout):
            yield(await refreshed(query, stored: snapshot, fallback: cached, timeout: timeout, fetch: fetch))
        case .staleWhileRevalidate:
            if usable && cached.freshness.isFresh {
                yield(cached)
                return
            }
            if usable {
                cached.isFinal = false
                yield(cached)
            }
            yield(await refreshed(query, conditional: true, stored: snapshot, fallback: cached, fetch: fetch))
        case .cacheThenNetwork:
            cached.isFinal = false
            yield(cached)
            yield(await refreshed(query, conditional: true, stored: snapshot, fallback: nil, fetch: fetch))
        }
    }

    /// The refreshed list, or `fallback` (stale, with the error) when the fetcher fails and there
    /// is a list to fall back on, or "missing" with the error.
    func refreshed(
        _ query: EntityQuery,
        conditional: Bool,
        stored: Snapshot,
        fallback: QueryResult<Entity>?,
        fetch: @escaping QueryFetcher
    ) async -> QueryResult<Entity> {
        do {
            return try await refresh(query, conditional: conditional, stored: stored, using: fetch)
        } catch {
            return Self.fallback(fallback, query: query, error: Self.classify(error))
        }
    }

    /// ``refreshed(_:conditional:stored:fallback:fetch:)`` within `timeout`: past it, the fallback
    /// answers and the refresh goes on, storing what it gets.
    private func refreshed(
        _ query: EntityQuery,
        stored: Snapshot,
        fallback: QueryResult<Entity>,
        timeout: Duration?,
        fetch: @escaping QueryFetcher
    ) async -> QueryResult<Entity> {
        guard let timeout else {
            return await refreshed(query, conditional: true, stored: stored, fallback: fallback, fetch: fetch)
        }
        let work = Task { await refreshed(query, conditional: true, stored: stored, fallback: fallback, fetch: fetch) }
        let late = Self.fallback(
            fallback,
            query: query,
            error: CachingClientError(code: .timeout, message: "\(query): no answer within \(timeout)")
        )
        return await withCheckedContinuation { (continuation: CheckedContinuation<QueryResult<Entity>, Never>) in
            let answered = Mutex(false)
            let answer: @Sendable (QueryResult<Entity>) -> Void = { result in
                let first = answered.withLock { done in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume(returning: result) }
            }
            Task { answer(await work.value) }
            Task {
                do {
                    try await Task.sleep(for: timeout)
                } catch {
                    return
                }
                answer(late)
            }
        }
    }

    static func fallback(
        _ fallback: QueryResult<Entity>?,
        query: EntityQuery,
        error: CachingClientError
    ) -> QueryResult<Entity> {
        guard var result = fallback, result.hasAnswer else {
            return QueryResult(
                query: query,
                items: [],
                missingIDs: [],
                freshness: .missing,
                source: .none,
                metadata: nil,
                changeToken: fallback?.changeToken,
                isFinal: true,
                error: error
            )
        }
        if result.freshness != .stale(.notValidated) {
            result.freshness = .stale(error.code == .noConnection ? .offline : .revalidationFailed)
        }
        result.isFinal = true
        result.error = error
        return result
    }
}
