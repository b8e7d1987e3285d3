// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import SystemPackage
import Testing

@testable import CacheTiers

/// A descriptor is closed once, by its owner: a second close may by then take a descriptor that
/// another thread has just opened, and that thread's next read or write fails with EBADF (seen in
/// CI as a segment that could not be truncated while another test's open failed).
@Suite struct DescriptorOwnershipTests {
    /// Opens that fail after the directory was locked (the wrong key) run beside a thread that opens,
    /// reads and closes files of its own; none of that thread's descriptors is closed under it.
    @Test func failedOpensDoNotCloseDescriptorsTheyNoLongerOwn() async throws {
        let directory = TemporaryDirectory("descriptors")
        defer { directory.remove() }
        var configuration = diskConfiguration(directory)
        configuration.encryption = DiskEncryption(key: EncryptionTests.keyA)
        try DiskStore(configuration: configuration).close()
        configuration.encryption = DiskEncryption(key: EncryptionTests.keyB)
        let wrongKey = configuration
        let probe = directory.appending("probe")
        try Data(repeating: 7, count: 64).write(to: URL(fileURLWithPath: probe))

        // Two threads of their own: the pool's threads (one per core) stay free for the other tests.
        async let opens: Void = offThePool {
            for _ in 0..<600 { _ = try? DiskStore(configuration: wrongKey) }
        }
        async let failures = offThePool {
            var failures = 0
            for _ in 0..<6_000 {
                let file = try CacheFile.open(FilePath(probe), create: false, readOnly: true)
                if (try? file.read(count: 64, at: 0)) == nil { failures += 1 }
                file.close()
            }
            return failures
        }
        try await opens
        #expect(try await failures == 0)
    }
}
