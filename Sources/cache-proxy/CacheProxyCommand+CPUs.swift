// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension CacheProxyCommand {
    /// The CPUs this process may run on: on Linux its affinity mask (`Cpus_allowed_list` in
    /// `/proc/self/status`, which `taskset` sets and SwiftNIO's `System.coreCount` does not
    /// read), at most NIO's count; elsewhere NIO's count.
    static func usableCPUs() -> Int {
        let cores = System.coreCount
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }),
            let allowed = cpuCount(list: line.dropFirst("Cpus_allowed_list:".count))
        else { return cores }
        return max(1, min(allowed, cores))
    }

    /// The number of CPUs a list such as `0-3,8,10-11` names; nil when it does not parse.
    static func cpuCount(list: Substring) -> Int? {
        var count = 0
        for part in list.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = part.split(separator: "-", omittingEmptySubsequences: false).map {
                Int($0.filter { !$0.isWhitespace })
            }
            switch bounds.count {
            case 1:
                guard bounds[0] != nil else { return nil }
                count += 1
            case 2:
                guard let low = bounds[0], let high = bounds[1], low <= high else { return nil }
                count += high - low + 1
            default:
                return nil
            }
        }
        return count > 0 ? count : nil
    }
}
#endif
