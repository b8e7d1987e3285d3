// SPDX-License-Identifier: Apache-2.0

#if Tools
import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

/// `cache-tool` on a real full filesystem (a tmpfs filled to the last block): reads keep working,
/// and a write says what happened to its record.
@Suite(.serialized) struct FullDiskToolTests {
    @Test func readsWorkOnAFullDisk() async throws {
        guard let filesystem = Self.mountOrSkip() else { return }
        defer { filesystem.unmount() }
        let tool = CacheToolTests()
        let cache = filesystem.path + "/cache"
        let values = (0..<20).map { SampleData.json(approximateBytes: 2000, seed: UInt64($0)) }
        for (index, value) in values.enumerated() {
            #expect(
                try await tool.tool(["put", cache, "k\(index)", "--capacity", "2000000"], input: value).status == 0
            )
        }
        filesystem.fill()

        for (index, value) in values.enumerated() {
            let get = try await tool.tool(["get", cache, "k\(index)", "--capacity", "2000000"])
            #expect(get.status == 0 && get.output == value, "get k\(index): \(get.error)")
            // Nothing changed, so nothing was written: not even a warning.
            #expect(get.error.isEmpty, "get k\(index): \(get.error)")
        }
        let list = try await tool.tool(["list", cache, "--capacity", "2000000"])
        #expect(list.status == 0, "\(list.error)")
        let stats = try await tool.tool(["stats", cache, "--capacity", "2000000"])
        #expect(stats.status == 0, "\(stats.error)")
        // A write that cannot land says so, and what was stored stays readable.
        let put = try await tool.tool(
            ["put", cache, "big", "--capacity", "2000000"],
            input: SampleData.random(count: 60_000)
        )
        #expect(put.status != 0 && put.error.contains("space"), "\(put.error)")
        #expect(try await tool.tool(["get", cache, "k0", "--capacity", "2000000"]).output == values[0])
    }

    /// A put whose record lands but whose index snapshot cannot be written has stored its value,
    /// and says so (before, it failed although the value was stored and readable later).
    @Test func aPutWhoseSnapshotFailsSaysItStored() async throws {
        guard let filesystem = Self.mountOrSkip() else { return }
        defer { filesystem.unmount() }
        let tool = CacheToolTests()
        let cache = filesystem.path + "/cache"
        let capacity = ["--capacity", "2000000"]
        for index in 0..<5 {
            let value = SampleData.json(approximateBytes: 2000, seed: UInt64(index))
            #expect(try await tool.tool(["put", cache, "k\(index)"] + capacity, input: value).status == 0)
        }
        // Fill the filesystem, leaving room only in the last page of the active segment: enough
        // for one small record, none for a new snapshot file.
        var room = 0
        for shift in 0..<4 {
            let filler = filesystem.fill()
            room = Self.roomInLastPage(of: cache)
            if room >= 400 { break }
            try FileManager.default.removeItem(atPath: filler)
            let padding = SampleData.random(count: 1500, seed: UInt64(100 + shift))
            #expect(try await tool.tool(["put", cache, "pad\(shift)"] + capacity, input: padding).status == 0)
        }
        try #require(room >= 400, "could not leave room for one record")
        let late = SampleData.random(count: room - 300, seed: 7)
        let put = try await tool.tool(["put", cache, "late"] + capacity, input: late)
        #expect(put.status == 0, "\(put.error)")
        #expect(put.error.contains("snapshot was not written"), "\(put.error)")
        try FileManager.default.removeItem(atPath: filesystem.path + "/filler")
        let get = try await tool.tool(["get", cache, "late"] + capacity)
        #expect(get.status == 0 && get.output == late)
    }

    /// A 4 MiB tmpfs, or nil after one line saying why none can be mounted here.
    static func mountOrSkip() -> FullFilesystem? {
        switch FullFilesystem.mount(bytes: 4 << 20) {
        case .success(let mounted): return mounted
        case .failure(let refusal):
            print("FullDiskToolTests skipped: \(refusal.reason)")
            return nil
        }
    }

    /// The unused bytes in the last 4 KiB page of the newest segment.
    static func roomInLastPage(of cache: String) -> Int {
        let segments = ((try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? [])
            .filter { $0.hasPrefix(CacheDirectory.segmentPrefix) }.sorted()
        guard let newest = segments.last,
            let size = (try? FileManager.default.attributesOfItem(atPath: cache + "/" + newest))?[.size] as? Int
        else { return 0 }
        return (4096 - size % 4096) % 4096
    }

    /// On a full disk an operator can still free space: `evict --to` drops whole segments without
    /// appending, after which writes work again.
    @Test func evictFreesAFullDisk() async throws {
        guard let filesystem = Self.mountOrSkip() else { return }
        defer { filesystem.unmount() }
        let tool = CacheToolTests()
        let cache = filesystem.path + "/cache"
        let capacity = ["--capacity", "2000000"]  // segments of 250,000 bytes
        for index in 0..<40 {
            let value = SampleData.random(count: 20_000, seed: UInt64(index))
            #expect(try await tool.tool(["put", cache, "k\(index)"] + capacity, input: value).status == 0)
        }
        filesystem.fill()
        let stuck = try await tool.tool(
            ["put", cache, "new"] + capacity,
            input: SampleData.random(count: 20_000, seed: 99)
        )
        #expect(stuck.status != 0)

        let evict = try await tool.tool(["evict", cache, "--to", "300000"] + capacity)
        #expect(evict.status == 0, "\(evict.error)")
        #expect(String(decoding: evict.output, as: UTF8.self).hasPrefix("dropped "))
        let value = SampleData.random(count: 20_000, seed: 100)
        #expect(try await tool.tool(["put", cache, "new"] + capacity, input: value).status == 0)
        #expect(try await tool.tool(["get", cache, "new"] + capacity).output == value)
        // The newest entries were kept; dropped ones are misses, never wrong bytes.
        let newest = try await tool.tool(["get", cache, "k39"] + capacity)
        #expect(newest.status == 0 && newest.output == SampleData.random(count: 20_000, seed: 39))
    }
}
#endif
