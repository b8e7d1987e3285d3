// SPDX-License-Identifier: Apache-2.0

#if Proxy
import Testing

@testable import cache_proxy

/// cache-proxy sizes its event loops to the CPUs its affinity mask allows, read from a list
/// such as `/proc/self/status` gives.
@Suite struct CPUListTests {
    @Test(arguments: [
        ("0", 1), ("0-3", 4), ("0-3,8,10-11", 7), ("1", 1), (" 0-1\t", 2), ("5,7", 2),
    ])
    func aListCountsItsCPUs(list: String, count: Int) {
        #expect(CacheProxyCommand.cpuCount(list: Substring(list)) == count)
    }

    @Test(arguments: ["", "x", "3-1", "0-", "-2", "0-1-2", "1,,x"])
    func aListThatDoesNotParseCountsNone(list: String) {
        #expect(CacheProxyCommand.cpuCount(list: Substring(list)) == nil)
    }

    @Test func theProcessMayRunOnOneCPUAtLeast() {
        #expect(CacheProxyCommand.usableCPUs() >= 1)
    }
}
#endif
