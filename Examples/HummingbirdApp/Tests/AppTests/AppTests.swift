// SPDX-License-Identifier: Apache-2.0

import App
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct AppTests {
    @Test func cachesTheCatalogAndCountsVisits() async throws {
        let app = try buildApplication(AppOptions(port: 0))
        try await app.test(.router) { client in
            try await client.execute(uri: "/catalog", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[HTTPField.Name("Cache-Status")!] == "example; fwd=uri-miss")
            }
            try await client.execute(uri: "/catalog", method: .get) { response in
                #expect(response.headers[.age] == "0")
                #expect(response.headers[HTTPField.Name("Cache-Status")!]?.hasPrefix("example; hit") == true)
            }
            try await client.execute(uri: "/catalog", method: .get, headers: [.ifNoneMatch: "\"c1\""]) {
                #expect($0.status == .notModified)
            }
            for expected in ["ada: 1\n", "ada: 2\n"] {
                try await client.execute(uri: "/visits/ada", method: .get) {
                    #expect(String(buffer: $0.body) == expected)
                }
            }
        }
    }
}
