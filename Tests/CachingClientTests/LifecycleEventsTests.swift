// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import CacheTestSupport
import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes
import TestOriginSupport
import Testing

@testable import CachingClient

/// Records what a delegate hears, as short labels.
actor EventRecorder: CachingHTTPClientDelegate {
    private(set) var labels: [String] = []

    func fetch(_ context: FetchContext, didEmit event: FetchEvent) async {
        labels.append(Self.label(event))
    }

    static func label(_ event: FetchEvent) -> String {
        switch event {
        case .started: "started"
        case .cacheResponse(let result): "cache(\(result.freshness)\(errors(result)))"
        case .serverResponse(let result): "server(\(result.response?.status.code ?? 0))"
        case .failed(let error): "failed(\(error.code))"
        case .finished(let result):
            "finished(\(result.source),\(result.text ?? "-")\(errors(result)))"
        }
    }

    /// The answer's error and its cache error (`cache:` before it), each after a comma.
    static func errors(_ result: FetchResult) -> String {
        (result.error.map { ",\($0.code)" } ?? "") + (result.cacheError.map { ",cache:\($0.code)" } ?? "")
    }
}

/// The active and passive request lifecycles, and what a closed cache does in each.
@Suite struct LifecycleEventsTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var policy: CachePolicy
        var stored: Bool
        var origin: Bool
        var closed: Bool = false
        var expected: [String]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(
            name: "active, stored, server answers",
            policy: .cacheThenNetwork,
            stored: true,
            origin: true,
            expected: [
                "started", "cache(stale(expired))", "server(200)", "finished(network,new)",
            ]
        ),
        Row(
            name: "active, nothing stored, server answers",
            policy: .cacheThenNetwork,
            stored: false,
            origin: true,
            expected: ["started", "cache(missing)", "server(200)", "finished(network,new)"]
        ),
        Row(
            name: "active, stored, server down",
            policy: .cacheThenNetwork,
            stored: true,
            origin: false,
            expected: [
                "started", "cache(stale(expired))", "failed(noConnection)", "finished(none,-,noConnection)",
            ]
        ),
        Row(
            name: "passive, stored",
            policy: .cacheOnly,
            stored: true,
            origin: true,
            expected: ["started", "cache(stale(expired))", "finished(cache,old)"]
        ),
        Row(
            name: "passive, nothing stored",
            policy: .cacheOnly,
            stored: false,
            origin: true,
            expected: ["started", "cache(missing)", "finished(none,-)"]
        ),
        Row(
            name: "passive as URLCache's returnCacheDataDontLoad, nothing stored",
            policy: .returnCacheDataDontLoad,
            stored: false,
            origin: true,
            expected: ["started", "cache(missing)", "finished(none,-,notCached)"]
        ),
        Row(
            name: "active, closed cache",
            policy: .cacheThenNetwork,
            stored: true,
            origin: true,
            closed: true,
            expected: ["started", "cache(missing,cache:closed)", "server(200)", "finished(network,new,cache:closed)"]
        ),
        Row(
            name: "passive, closed cache",
            policy: .cacheOnly,
            stored: true,
            origin: true,
            closed: true,
            expected: ["started", "cache(missing,cache:closed)", "finished(none,-,cache:closed)"]
        ),
    ]

    @Test(arguments: rows) func eventOrder(_ row: Row) async throws {
        try await withTemporaryDirectory { directory in
            let f = try await Fixture.make(directory: directory.path)
            let headers = [("Cache-Control", "max-age=0"), ("ETag", "\"e\"")]
            if row.stored {
                f.origin.enqueue(.ok("old", headers: headers), for: "/r")
                _ = await f.client.fetch(f.request("/r"), policy: .networkOnly)
            }
            if row.closed { try await f.client.close() }
            f.origin.enqueue(.ok("new", headers: headers), for: "/r")
            if !row.origin { await f.origin.stop() }
            let requestsBefore = f.origin.requestCount

            let recorder = EventRecorder()
            var streamed: [String] = []
            for await event in f.client.events(for: f.request("/r"), policy: row.policy, delegate: recorder) {
                streamed.append(EventRecorder.label(event))
            }
            #expect(streamed == row.expected)
            #expect(await recorder.labels == row.expected)

            if row.policy.isPassive { #expect(f.origin.requestCount == requestsBefore) }
            if row.closed {
                // Nothing was stored while closed: the old answer (or nothing) is what the disk holds.
                try await f.client.reopen(encryption: nil)
                let after = await f.client.fetch(f.request("/r"), policy: .cacheOnly)
                #expect(after.text == (row.stored ? "old" : nil))
            } else if row.origin, row.policy == .cacheThenNetwork {
                // What the server sent replaced the stored answer.
                #expect(await f.client.fetch(f.request("/r"), policy: .cacheOnly).text == "new")
            } else if !row.origin {
                // A failure leaves the cache as it was.
                #expect(await f.client.fetch(f.request("/r"), policy: .cacheOnly).text == "old")
            }
            if row.origin { await f.stop() }
        }
    }

    @Test func aClosedCacheIsVisibleInTheResultOfAnActiveRequest() async throws {
        let f = try await Fixture.make()
        try await f.client.close()
        f.origin.enqueue(.ok("live", headers: [("Cache-Control", "max-age=60")]), for: "/c")
        let result = await f.client.fetch(f.request("/c"), policy: .cacheFirst)
        #expect(result.source == .network && result.text == "live" && result.error == nil)
        #expect(result.cacheError?.code == .closed)
        let passive = await f.client.fetch(f.request("/c"), policy: .cacheOnly)
        // Reported in one place, the cache's error, in both modes; "missing" is not a failure.
        #expect(passive.freshness == .missing && passive.error == nil && passive.cacheError?.code == .closed)
        let thrown = #expect(throws: CachingClientError.self) { try passive.requireBody() }
        #expect(thrown?.code == .closed)
        try await f.client.reopen(encryption: nil)
        #expect(await f.client.fetch(f.request("/c"), policy: .cacheOnly).freshness == .missing)
        await f.stop()
    }

    /// Issue 38 (API): an event says its kind and carries its result or error without a switch.
    @Test func anEventExposesItsKindAndResult() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("v1", headers: [("Cache-Control", "max-age=600")]), for: "/k")
        var events: [FetchEvent] = []
        for await event in f.client.events(for: f.request("/k"), policy: .cacheThenNetwork) { events.append(event) }
        #expect(events.map(\.kind) == [.started, .cacheResponse, .serverResponse, .finished])
        #expect(events.map { $0.result?.text } == [nil, nil, "v1", "v1"])
        #expect(events[1].result?.freshness == .missing && events.allSatisfy { $0.error == nil })
        await f.origin.stop()
        var failed: [FetchEvent] = []
        for await event in f.client.events(for: f.request("/down"), policy: .networkOnly) { failed.append(event) }
        #expect(failed.map(\.kind) == [.started, .cacheResponse, .failed, .finished])
        #expect(failed[2].error?.code == .noConnection && failed[2].result == nil)
        await f.stop()
    }

    @Test func resultsYieldsTheCachedAnswerThenTheServersInActiveMode() async throws {
        let f = try await Fixture.make()
        f.origin.enqueue(.ok("v1", headers: [("Cache-Control", "max-age=600")]), for: "/s")
        _ = await f.client.fetch(f.request("/s"))
        f.origin.enqueue(.ok("v2", headers: [("Cache-Control", "max-age=600")]), for: "/s")
        var answers: [FetchResult] = []
        for await result in f.client.results(for: f.request("/s"), policy: .cacheThenNetwork) {
            answers.append(result)
        }
        #expect(answers.map(\.text) == ["v1", "v2"])
        #expect(answers.map(\.isFinal) == [false, true])
        #expect(answers.map(\.source) == [.cache, .network])
        await f.stop()
    }
}
#endif
