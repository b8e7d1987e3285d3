// SPDX-License-Identifier: Apache-2.0

/// The answers to one request, the last one final: what
/// `results(for:body:policy:freshness:willCache:)` returns.
///
/// Iterating does the work: the cache lookup on the first `next()`, the network on the one that
/// needs it. Iterate it once.
public struct FetchResults: AsyncSequence, Sendable {
    public typealias Element = FetchResult
    public typealias Failure = Never

    let client: CachingHTTPClient
    let call: Call

    public func makeAsyncIterator() -> Iterator {
        Iterator(client: client, call: call)
    }

    /// The iterator.
    public struct Iterator: AsyncIteratorProtocol {
        private enum State {
            case start(CachingHTTPClient, Call)
            case network(CachingHTTPClient, Call, NetworkStep)
            case done
        }
        private var state: State

        init(client: CachingHTTPClient, call: Call) {
            state = .start(client, call)
        }

        /// The next answer, or nil after the final one.
        public mutating func next() async -> FetchResult? {
            switch state {
            case .done:
                return nil
            case .network(let client, let call, let step):
                state = .done
                let result = await client.network(step)
                await call.emit(CachingHTTPClient.networkEvent(result))
                await call.emit(.finished(result))
                return result
            case .start(let client, let call):
                state = .done
                await call.emit(.started)
                let lookup = await client.lookup(for: call)
                let at = client.now
                let plan = client.plan(call, lookup, now: at)
                if !call.delegates.isEmpty {
                    await call.emit(.cacheResponse(client.offer(plan, lookup: lookup, call: call, now: at)))
                }
                switch plan {
                case .answer(let result):
                    await call.emit(.finished(result))
                    return result
                case .answerAndRefresh(let result, let step):
                    client.refresh(step)
                    await call.emit(.finished(result))
                    return result
                case .answerThenNetwork(let result, let step):
                    state = .network(client, call, step)
                    return result
                case .network(let step):
                    let result = await client.network(step)
                    await call.emit(CachingHTTPClient.networkEvent(result))
                    await call.emit(.finished(result))
                    return result
                }
            }
        }
    }
}
