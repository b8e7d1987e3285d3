// SPDX-License-Identifier: Apache-2.0

/// Deterministic payloads shared by the tests and the benchmarks. Not a product: nothing here is
/// part of the public API.
package enum SampleData {
    /// A JSON API response of about `approximateBytes` bytes: an array of user records with ids,
    /// names, e-mail addresses, timestamps and nested tags, as a typical REST endpoint returns.
    package static func json(approximateBytes: Int, seed: UInt64 = 42) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        let firstNames = [
            "Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Dennis", "Frances", "Edsger", "Radia",
        ]
        let lastNames = ["Lovelace", "Hopper", "Torvalds", "Liskov", "Thompson", "Hamilton", "Ritchie", "Allen"]
        let tags = ["admin", "beta", "billing", "support", "ops", "mobile", "web", "api", "eu", "us"]
        var out = Array("{\"data\":[".utf8)
        out.reserveCapacity(approximateBytes + 512)
        var index = 0
        while out.count < approximateBytes {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            let first = firstNames[Int(generator.next() % UInt64(firstNames.count))]
            let last = lastNames[Int(generator.next() % UInt64(lastNames.count))]
            let id = 100_000 + Int(generator.next() % 900_000)
            let balance = Double(generator.next() % 10_000_000) / 100
            let created = 1_600_000_000 + Int(generator.next() % 100_000_000)
            let tag1 = tags[Int(generator.next() % UInt64(tags.count))]
            let tag2 = tags[Int(generator.next() % UInt64(tags.count))]
            let active = generator.next() % 2 == 0
            let record =
                "{\"id\":\(id),\"name\":\"\(first) \(last)\",\"email\":\"\(first.lowercased()).\(last.lowercased())"
                + "\(id % 97)@example.com\",\"balance\":\(balance),\"active\":\(active),"
                + "\"createdAt\":\(created),\"tags\":[\"\(tag1)\",\"\(tag2)\"],"
                + "\"address\":{\"city\":\"Springfield\",\"zip\":\"\(10_000 + id % 89_999)\"}}"
            out.append(contentsOf: record.utf8)
            index += 1
        }
        out.append(contentsOf: "],\"page\":1,\"hasMore\":true}".utf8)
        return out
    }

    /// `count` bytes from a seeded generator: incompressible.
    package static func random(count: Int, seed: UInt64 = 7) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        var out = [UInt8]()
        out.reserveCapacity(count + 8)
        while out.count < count {
            withUnsafeBytes(of: generator.next().littleEndian) { out.append(contentsOf: $0) }
        }
        out.removeLast(out.count - count)
        return out
    }

    /// `count` bytes repeating a short pattern: compresses extremely well.
    package static func repetitive(count: Int) -> [UInt8] {
        let pattern = Array("abcabcabd".utf8)
        return (0..<count).map { pattern[$0 % pattern.count] }
    }
}

/// SplitMix64: a small, fast, seedable generator, so runs are repeatable.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension SampleData {
    /// A value that names its key and version: a stamp `key#version|` followed by incompressible
    /// bytes seeded by the stamp, so that any wrong or stale answer is caught by comparing bytes.
    package static func versioned(key: String, version: Int, size: Int = 300) -> [UInt8] {
        let stamp = Array("\(key)#\(version)|".utf8)
        var seed: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in stamp { seed = (seed ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return Array((stamp + random(count: size, seed: seed)).prefix(max(size, stamp.count)))
    }
}

extension SampleData {
    /// The size of the `index`th value of the batch at `version` in the batch crash test: from
    /// 16 bytes to about 12 KB, known to the writer and to the checker alike.
    package static func batchValueSize(version: Int, index: Int) -> Int {
        16 + (version &* 31 &+ index &* 977) % 12_000
    }
}
