// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

/// `cache-tool` on a real full filesystem (a tmpfs filled to the last block): reads keep working,
/// and a write says what happened to its record.
@Suite(.serialized) struct FullDiskToolTests {
    @Test func readsWorkOnAFullDisk() throws {
        let filesystem: FullFilesystem
        switch FullFilesystem.mount(bytes: 4 << 20) {
        case .success(let mounted): filesystem = mounted
        case .failure(let refusal):
            print("FullDiskToolTests skipped: \(refusal.reason)")
            return
        }
        defer { filesystem.unmount() }
        let tool = CacheToolTests()
        let cache = filesystem.path + "/cache"
        let values = (0..<20).map { SampleData.json(approximateBytes: 2000, seed: UInt64($0)) }
        for (index, value) in values.enumerated() {
            #expect(try tool.tool(["put", cache, "k\(index)", "--capacity", "2000000"], input: value).status == 0)
        }
        filesystem.fill()

        for (index, value) in values.enumerated() {
            let get = try tool.tool(["get", cache, "k\(index)", "--capacity", "2000000"])
            #expect(get.status == 0 && get.output == value, "get k\(index): \(get.error)")
            // Nothing changed, so nothing was written: not even a warning.
            #expect(get.error.isEmpty, "get k\(index): \(get.error)")
        }
        let list = try tool.tool(["list", cache, "--capacity", "2000000"])
        #expect(list.status == 0, "\(list.error)")
        let stats = try tool.tool(["stats", cache, "--capacity", "2000000"])
        #expect(stats.status == 0, "\(stats.error)")
        // A write that cannot land says so, and what was stored stays readable.
        let put = try tool.tool(
            ["put", cache, "big", "--capacity", "2000000"],
            input: SampleData.random(count: 60_000)
        )
        #expect(put.status != 0 && put.error.contains("space"), "\(put.error)")
        #expect(try tool.tool(["get", cache, "k0", "--capacity", "2000000"]).output == values[0])
    }
}
