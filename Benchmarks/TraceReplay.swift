// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import CacheTiers
import Foundation

/// A cache trace in memory: each request's object (numbered densely from 0) and size.
struct Trace: Sendable {
    struct Request: Sendable {
        var object: Int32
        var size: Int32
    }

    var requests: [Request] = []
    /// The last size of each object.
    var lastSizes: [Int32] = []
    /// Each object's key: its 64-bit id as 16 hex digits.
    var keys: [CacheKey] = []

    var objectCount: Int { lastSizes.count }

    /// Every object counted once at its last size plus `overhead`.
    func footprint(overhead: Int) -> Int {
        lastSizes.reduce(0) { $0 + Int($1) + overhead }
    }

    /// Reads a gzip CSV of `time, object, size, next_access_vtime` lines (a `#` header line
    /// first), decompressed by `gzip -dc`, keeping the first `limit` requests.
    init(gzipPath: String, limit: Int?) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-dc", gzipPath]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        // Read to the end before waiting, so that gzip never blocks on a full pipe.
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TraceError(description: "gzip -dc \(gzipPath) exited with \(process.terminationStatus)")
        }
        var objects: [UInt64: Int32] = [:]
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            for line in bytes.split(separator: UInt8(ascii: "\n")) {
                if let limit, requests.count >= limit { break }
                guard line.first != UInt8(ascii: "#") else { continue }
                let fields = line.split(separator: UInt8(ascii: ","))
                guard fields.count >= 3, let id = Self.number(fields[1]), let size = Self.number(fields[2]) else {
                    continue
                }
                let object: Int32
                if let known = objects[id] {
                    object = known
                    lastSizes[Int(known)] = Int32(size)
                } else {
                    object = Int32(lastSizes.count)
                    objects[id] = object
                    lastSizes.append(Int32(size))
                    let hex = String(id, radix: 16)
                    keys.append(CacheKey(String(repeating: "0", count: 16 - hex.utf8.count) + hex))
                }
                requests.append(Request(object: object, size: Int32(size)))
            }
        }
        guard !requests.isEmpty else { throw TraceError(description: "no requests in \(gzipPath)") }
    }

    /// A decimal number, spaces around it ignored.
    private static func number(_ field: Slice<UnsafeRawBufferPointer>) -> UInt64? {
        var value: UInt64 = 0
        var digits = 0
        for byte in field where byte != UInt8(ascii: " ") {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
            digits += 1
        }
        return digits > 0 ? value : nil
    }
}

struct TraceError: Error, CustomStringConvertible {
    var description: String
}

/// The outcome of one replay of a trace.
struct TraceReplay {
    var misses = 0
    var requests = 0
    var nanoseconds = 0.0

    var missRatio: Double { Double(misses) / Double(requests) }

    /// Runs `replay` `rounds` times: its misses (the same every time) and its median speed.
    static func median(_ rounds: Int, _ replay: () -> TraceReplay) -> TraceReplay {
        let replays = (0..<max(1, rounds)).map { _ in replay() }
        precondition(Set(replays.map(\.misses)).count == 1, "a replay must miss the same requests every time")
        var result = replays[0]
        result.nanoseconds = Harness.median(replays.map(\.nanoseconds))
        return result
    }
    var requestsPerSecond: Double { Double(requests) / nanoseconds * 1e9 }

    /// One value per size, shared by every entry of that size (random bytes, so that the disk
    /// tier's compression does not shrink them).
    static func values(for trace: Trace) -> [[UInt8]] {
        let largest = Int(trace.requests.lazy.map(\.size).max() ?? 0)
        let pool = SampleData.random(count: largest, seed: 52)
        return (0...largest).map { Array(pool.prefix($0)) }
    }

    /// Replays the trace through `tier`: a lookup per request, a set after each miss.
    static func memory(_ trace: Trace, tier: MemoryTier) -> TraceReplay {
        let values = values(for: trace)
        let storedAt = Date()
        let keys = trace.keys
        var replay = TraceReplay(requests: trace.requests.count)
        replay.nanoseconds = Harness.time {
            for request in trace.requests {
                let key = keys[Int(request.object)]
                if tier.entry(for: key) == nil {
                    replay.misses += 1
                    tier.set(CacheEntry(value: values[Int(request.size)], storedAt: storedAt), for: key)
                }
            }
        }
        return replay
    }

    /// Replays the trace through `cache` (memory, then disk; a disk hit is promoted): a miss in
    /// both tiers is followed by a set in both.
    static func tiered(_ trace: Trace, cache: TieredCache) async throws -> TraceReplay {
        let values = values(for: trace)
        let storedAt = Date()
        var replay = TraceReplay(requests: trace.requests.count)
        let clock = ContinuousClock()
        let start = clock.now
        for request in trace.requests {
            let key = trace.keys[Int(request.object)]
            if await cache.entry(for: key) == nil {
                replay.misses += 1
                try await cache.set(CacheEntry(value: values[Int(request.size)], storedAt: storedAt), for: key)
            }
        }
        replay.nanoseconds = Harness.nanoseconds(of: clock.now - start)
        return replay
    }

    /// An exact LRU over object numbers with capacity in bytes, each object costing its size
    /// plus `overhead`: the reference the tier is checked against in the same run.
    static func referenceLRU(_ trace: Trace, capacity: Int, overhead: Int) -> TraceReplay {
        let none: Int32 = -1
        let count = trace.objectCount
        var previous = [Int32](repeating: none, count: count)
        var next = [Int32](repeating: none, count: count)
        var cost = [Int](repeating: -1, count: count)  // -1: not cached
        var head = none
        var tail = none
        var used = 0
        var replay = TraceReplay(requests: trace.requests.count)
        func unlink(_ object: Int32) {
            let (before, after) = (previous[Int(object)], next[Int(object)])
            if before != none { next[Int(before)] = after } else { head = after }
            if after != none { previous[Int(after)] = before } else { tail = before }
        }
        func pushFront(_ object: Int32) {
            previous[Int(object)] = none
            next[Int(object)] = head
            if head != none { previous[Int(head)] = object } else { tail = object }
            head = object
        }
        replay.nanoseconds = Harness.time {
            for request in trace.requests {
                let object = request.object
                if cost[Int(object)] >= 0 {
                    unlink(object)
                    pushFront(object)
                    continue
                }
                replay.misses += 1
                let size = Int(request.size) + overhead
                guard size <= capacity else { continue }
                while used + size > capacity {
                    let victim = tail
                    unlink(victim)
                    used -= cost[Int(victim)]
                    cost[Int(victim)] = -1
                }
                cost[Int(object)] = size
                used += size
                pushFront(object)
            }
        }
        return replay
    }
}
#endif
