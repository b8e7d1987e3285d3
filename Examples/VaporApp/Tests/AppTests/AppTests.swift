// SPDX-License-Identifier: Apache-2.0

import App
import CacheTiers
import InMemoryTracing
import Testing
import Tracing
import VaporTesting

@Suite struct AppTests {
    @Test func theCatalogIsCachedAndAPOSTInvalidatesIt() async throws {
        try await withApp { app in
            try configure(app)
            let tester = try app.testing()
            try await tester.test(.GET, "catalog") { response in
                #expect(response.status == .ok)
                #expect(response.body.string == #"{"items":["tea","coffee"]}"#)
                #expect(response.headers.first(name: "Cache-Status") == "example; fwd=uri-miss")
            }
            try await tester.test(.GET, "catalog") { response in
                #expect(response.headers.first(name: "Cache-Status")?.hasPrefix("example; hit; ttl=") == true)
            }
            try await tester.test(.GET, "catalog", headers: ["If-None-Match": "\"c1\""]) { response in
                #expect(response.status == .notModified)
            }
            try await tester.test(.POST, "catalog") { #expect($0.status == .noContent) }
            try await tester.test(.GET, "catalog") { response in
                #expect(response.headers.first(name: "Cache-Status") == "example; fwd=uri-miss")
            }
        }
    }

    @Test func visitsAreCountedInAppCache() async throws {
        try await withApp { app in
            try configure(app)
            let tester = try app.testing()
            for expected in ["ada: 1", "ada: 2"] {
                try await tester.test(.GET, "visits/ada") { #expect($0.body.string == expected) }
            }
            try await tester.test(.GET, "visits/grace") { #expect($0.body.string == "grace: 1") }
        }
    }

    /// The cache's span, with what it did, for each request (swift-otel exports the same spans).
    @Test func eachRequestHasTheCachesSpan() async throws {
        let tracer = InMemoryTracer()
        try await withApp { app in
            try configure(app, AppOptions(tracer: tracer))
            let tester = try app.testing()
            try await tester.test(.GET, "account") { _ in }
            try await tester.test(.GET, "account") { _ in }
        }
        let statuses = tracer.finishedSpans
            .filter { $0.operationName == "layeredcache.middleware" }
            .compactMap { span -> String? in
                guard case .string(let status) = span.attributes["layeredcache.cache_status"]?.toSpanAttribute() else {
                    return nil
                }
                return status
            }
        // The app runs on the wall clock: the hit's ttl is 30 or, across a second boundary, 29.
        #expect(statuses.count == 2 && statuses.first == "fwd=uri-miss")
        #expect(statuses.last?.hasPrefix("hit; ttl=") == true)
    }
}
