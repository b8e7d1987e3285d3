// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import SystemPackage
import Testing

@testable import CacheTiers

/// A snapshot is written only when something changed: a session that only reads closes without
/// writing, so it works on a full disk; a session that writes still snapshots on close.
@Suite struct SnapshotOnChangeTests {
    @Test func aReadOnlySessionClosesWithoutWritingASnapshot() throws {
        try withTemporaryDirectoryBlocking { directory in
            let faults = FaultInjector()
            let configuration = diskConfiguration(directory, faults: faults)
            do {
                let store = try DiskStore(configuration: configuration)
                for index in 0..<10 {
                    _ = try store.set(entry(Array("v\(index)".utf8)), for: CacheKey("k\(index)"))
                }
                try store.close()
            }
            // Every write now fails as on a full disk.
            faults.failWrites(with: .noSpace)
            let reader = try DiskStore(configuration: configuration)
            #expect(reader.recovery.usedSnapshot && reader.recovery.replayedRecords == 0)
            for index in 0..<10 {
                #expect(reader.entry(for: CacheKey("k\(index)"))?.value == Array("v\(index)".utf8))
            }
            try reader.close()  // nothing changed: no snapshot to write, no error

            // A session that changes something still writes its snapshot (and fails to, here).
            faults.reset()
            let writer = try DiskStore(configuration: configuration)
            _ = try writer.remove(CacheKey("k0"))
            faults.failWrites(with: .noSpace)
            #expect(throws: CacheError.self) { try writer.close() }
            faults.reset()
            let after = try DiskStore(configuration: configuration)
            #expect(after.entry(for: CacheKey("k0")) == nil)
            try after.close()
        }
    }
}

/// `withTemporaryDirectory` for synchronous tests.
func withTemporaryDirectoryBlocking<T>(_ body: (TemporaryDirectory) throws -> T) rethrows -> T {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    return try body(directory)
}
