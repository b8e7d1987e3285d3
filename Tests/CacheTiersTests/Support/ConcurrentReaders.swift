// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Dispatch
import Synchronization

@testable import CacheTiers

/// Threads that read keys through a store's ``DiskReader`` until stopped, and check every byte of
/// every hit: the fault tests run them beside their own reads and writes, so that byte flips, torn
/// tails, full disks and crashes are met by concurrent readers too.
final class ConcurrentReaders: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let hitCount = Atomic<Int>(0)
    private let wrongCount = Atomic<Int>(0)
    private let group = DispatchGroup()

    /// Starts `threads` readers of `keys`; `isValid` says whether a value is a right one for its key.
    init(
        _ reader: DiskReader,
        keys: [CacheKey],
        threads: Int = 4,
        isValid: @escaping @Sendable (CacheKey, CacheEntry) -> Bool = ConcurrentReaders.isVersionedValue
    ) {
        for thread in 0..<threads {
            DispatchQueue.global().async(group: group) { [self] in
                var generator = SplitMix64(seed: UInt64(thread + 1))
                while !stopped.load(ordering: .relaxed) {
                    let key = keys[Int(generator.next() % UInt64(keys.count))]
                    guard let found = reader.entry(for: key) else { continue }
                    hitCount.add(1, ordering: .relaxed)
                    if !isValid(key, found) { wrongCount.add(1, ordering: .relaxed) }
                }
            }
        }
    }

    /// Stops the readers and waits for them.
    /// - Returns: how many hits they had, and how many of those were wrong.
    @discardableResult
    func stop() -> (hits: Int, wrong: Int) {
        stopped.store(true, ordering: .relaxed)
        group.wait()
        return (hitCount.load(ordering: .relaxed), wrongCount.load(ordering: .relaxed))
    }

    /// Whether `entry`'s value is some version of `key`'s ``SampleData/versioned(key:version:size:)``.
    @Sendable static func isVersionedValue(_ key: CacheKey, _ entry: CacheEntry) -> Bool {
        let value = entry.value
        let prefix = Array("\(key.string)#".utf8)
        guard value.starts(with: prefix), let bar = value[prefix.count...].firstIndex(of: UInt8(ascii: "|")),
            let version = Int(String(decoding: value[prefix.count..<bar], as: UTF8.self))
        else { return false }
        return value == SampleData.versioned(key: key.string, version: version, size: value.count)
    }
}
