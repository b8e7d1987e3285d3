// SPDX-License-Identifier: Apache-2.0

// `MemoryFootprint BUDGET_BYTES URLS BODY_BYTES`: stores a response for each of URLS distinct
// URLs (a proxy's kind of response: six header fields and a body of BODY_BYTES) into a
// memory-only ResponseCache whose memory budget is BUDGET_BYTES, twice over so that eviction runs,
// and prints how much the process's resident memory grew against the budget:
// `budget B growth G ratio R entries E bytes U`. Run as its own process so that nothing else
// allocates beside it.

import CacheTiers
import Foundation
import HTTPCaching
import HTTPTypes

func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let budget = Int(arguments[1]), let urls = Int(arguments[2]),
    let bodyBytes = Int(arguments[3])
else {
    FileHandle.standardError.write(Data("usage: MemoryFootprint BUDGET_BYTES URLS BODY_BYTES\n".utf8))
    exit(2)
}

let now = Date()
let body = [UInt8]((0..<bodyBytes).map { UInt8(truncatingIfNeeded: $0 &* 31) })
/// Stores a response for each of `urls` URLs, `rounds` times over.
func fill(_ cache: ResponseCache, urls: Int, rounds: Int) async throws {
    for round in 0..<rounds {
        for index in 0..<urls {
            let request = HTTPRequest(
                method: .get,
                scheme: "http",
                authority: "origin.internal:8080",
                path: "/api/v1/items/\(index)?page=\(index % 7)&fields=all"
            )
            let fields: HTTPFields = [
                .contentType: "application/json; charset=utf-8",
                .cacheControl: "public, max-age=3600",
                .eTag: "\"\(index)-\(round)-5f3c9a\"",
                .lastModified: "Sun, 22 Nov 2026 10:00:00 GMT",
                .date: "Mon, 23 Nov 2026 10:00:00 GMT",
                HTTPField.Name("X-Request-Id")!: "req-\(index)-\(round)-9f8e7d6c5b4a",
            ]
            let response = CachedResponse(
                response: HTTPResponse(status: .ok, headerFields: fields),
                body: body,
                requestTime: now,
                responseTime: now
            )
            _ = try await cache.storeCachedResponse(response, for: await cache.lookup(request))
        }
    }
}

// The baseline is taken after a warm-up, so that what the runtime and the libraries set up once
// (type metadata, the allocator's arenas) is not counted against the budget.
try await fill(try ResponseCache(configuration: .init(memory: .init(capacityBytes: 1 << 20))), urls: 2_000, rounds: 1)
let cache = try ResponseCache(configuration: .init(memory: .init(capacityBytes: budget)))
let before = residentBytes()
try await fill(cache, urls: urls, rounds: 2)
let growth = residentBytes() - before
let usage = cache.tiers.memory.usage
print(
    "budget \(budget) growth \(growth) ratio \(String(format: "%.2f", Double(growth) / Double(budget))) "
        + "entries \(usage.entryCount) bytes \(usage.bytes)"
)
