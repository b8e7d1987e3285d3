// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Foundation's `URLCache` as a benchmark subject: on disk (memory capacity 0, its own
/// directory) or in memory only, storing the same bodies under the same URLs as our subjects.
///
/// On Linux (swift-corelibs-foundation) a disk `URLCache` lists its directory on every disk
/// operation, so its cost grows with its entries: a store into a cache of N entries costs about N
/// times one into an empty one, and filling it costs about N². ``estimatedSeconds(entries:operations:)``
/// extrapolates from a 100-entry pilot so that a suite can skip a size that would take too long.
final class URLCacheSubject {
    let cache: URLCache
    let directory: TemporaryDirectory?
    private(set) var requests: [URLRequest] = []
    private let clock = ContinuousClock()

    /// A disk cache in a fresh directory.
    init(disk label: String) {
        let directory = TemporaryDirectory(label)
        self.directory = directory
        #if canImport(FoundationNetworking)
        cache = URLCache(memoryCapacity: 0, diskCapacity: 8 << 30, diskPath: directory.path)
        #else
        cache = URLCache(memoryCapacity: 0, diskCapacity: 8 << 30, directory: URL(fileURLWithPath: directory.path))
        #endif
    }

    /// A memory-only cache of `capacity` bytes.
    init(memoryCapacity capacity: Int) {
        directory = nil
        #if canImport(FoundationNetworking)
        cache = URLCache(memoryCapacity: capacity, diskCapacity: 0, diskPath: nil)
        #else
        cache = URLCache(memoryCapacity: capacity, diskCapacity: 0, directory: nil)
        #endif
    }

    deinit { directory?.remove() }

    static func url(_ index: Int) -> String { "https://api.example.com/v1/users/\(index)?page=1" }

    static func response(for request: URLRequest, body: [UInt8], inMemoryOnly: Bool) -> CachedURLResponse {
        let response = HTTPURLResponse(
            url: request.url!,
            statusCode: 200,
            httpVersion: "HTTP/1.1",
            headerFields: ["Content-Type": "application/json"]
        )!
        return CachedURLResponse(
            response: response,
            data: Data(body),
            storagePolicy: inMemoryOnly ? .allowedInMemoryOnly : .allowed
        )
    }

    /// Stores `body` under the `index`th URL (a new entry when `index == requests.count`) and
    /// returns the elapsed nanoseconds.
    @discardableResult
    func store(_ body: [UInt8], at index: Int) -> Double {
        while requests.count <= index { requests.append(URLRequest(url: URL(string: Self.url(requests.count))!)) }
        let response = Self.response(for: requests[index], body: body, inMemoryOnly: directory == nil)
        let start = clock.now
        cache.storeCachedResponse(response, for: requests[index])
        return Harness.nanoseconds(of: clock.now - start)
    }

    /// Fills the cache to `count` entries with `bodies` (cycled); returns the elapsed seconds.
    @discardableResult
    func fill(to count: Int, bodies: [[UInt8]]) -> Double {
        var nanos = 0.0
        for index in requests.count..<count { nanos += store(bodies[index % bodies.count], at: index) }
        return nanos / 1e9
    }

    /// Reads the `index`th URL, which must hit; returns the elapsed nanoseconds.
    func get(_ index: Int) -> Double {
        let start = clock.now
        let found = cache.cachedResponse(for: requests[index])
        let nanos = Harness.nanoseconds(of: clock.now - start)
        precondition(found != nil, "URLCache must hit")
        return nanos
    }

    /// Removes the `index`th URL; returns the elapsed nanoseconds.
    func remove(_ index: Int) -> Double {
        let start = clock.now
        cache.removeCachedResponse(for: requests[index])
        return Harness.nanoseconds(of: clock.now - start)
    }

    // MARK: Time budget

    /// What a 100-entry disk pilot measured: the seconds to fill it and one get's nanoseconds.
    struct Pilot: Sendable {
        static let entries = 100
        var fillSeconds: Double
        var getNanos: Double

        /// Estimated seconds to fill a disk cache to `entries` and run `operations` operations on
        /// it, assuming a disk operation's cost grows linearly with the entries.
        func estimatedSeconds(entries: Int, operations: Int) -> Double {
            let scale = Double(entries) / Double(Self.entries)
            return fillSeconds * scale * scale + Double(operations) * getNanos * scale / 1e9
        }
    }

    /// Measures a 100-entry disk cache of `bodies`.
    static func pilot(bodies: [[UInt8]]) -> Pilot {
        let subject = URLCacheSubject(disk: "bench-urlcache-pilot")
        let fillSeconds = subject.fill(to: Pilot.entries, bodies: bodies)
        var generator = SplitMix64(seed: 5)
        let gets = (0..<20).map { _ in subject.get(Int(generator.next() % UInt64(Pilot.entries))) }
        return Pilot(fillSeconds: fillSeconds, getNanos: Harness.median(gets))
    }

    /// "skipped: > N s" for a row whose estimate exceeds the budget.
    static func skippedNote(estimatedSeconds seconds: Double, budgetSeconds budget: Double) -> String {
        let estimate =
            seconds >= 3600
            ? String(format: "about %.0f h", seconds / 3600)
            : String(format: "about %.0f s", seconds)
        return "skipped: > \(Int(budget)) s (estimated \(estimate))"
    }
}
#endif
