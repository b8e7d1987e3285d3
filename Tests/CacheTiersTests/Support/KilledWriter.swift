// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import CacheTiers
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A crash test's directory: the cache's path inside it, and the file holding `key`, which the
/// writer reads when `encrypted`.
struct CrashTestDirectory {
    let directory: TemporaryDirectory
    let path: String
    let keyFile: String
    let encryption: DiskEncryption?

    init(_ name: String, key: EncryptionKey, encrypted: Bool) throws {
        directory = TemporaryDirectory(name)
        path = directory.appending("cache")
        keyFile = directory.appending("key")
        try FileSurgery.write(key.bytes, to: keyFile)
        encryption = encrypted ? DiskEncryption(key: key) : nil
    }
}
