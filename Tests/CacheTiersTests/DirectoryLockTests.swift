// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

/// One directory, one owner — even when the `lock` file is deleted or replaced under a running
/// owner (a temporary-file cleaner, a hand): the lock on the directory itself still refuses a
/// second opener, in this process and in another.
@Suite struct DirectoryLockTests {
    @Test func aDeletedLockFileDoesNotLetASecondOwnerIn() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appending("cache")
            let owner = try DiskTier(configuration: .init(directory: path))
            _ = try await owner.set(entry(Array("mine".utf8)), for: "k")
            try FileManager.default.removeItem(atPath: path + "/lock")

            // Another instance in this process.
            let error = #expect(throws: CacheError.self) { try DiskTier(configuration: .init(directory: path)) }
            #expect(error?.code == .directoryLocked)

            // Another process: cache-tool put must refuse, and write nothing.
            try #require(FileManager.default.isExecutableFile(atPath: CacheToolTests.toolPath))
            let run = try CacheToolTests().tool(["put", path, "k"], input: Array("theirs".utf8))
            #expect(run.status != 0 && run.error.contains("in use"))
            #expect(await owner.entry(for: "k")?.value == Array("mine".utf8))

            // A replaced lock file changes nothing either.
            #expect(FileManager.default.createFile(atPath: path + "/lock", contents: Data()))
            #expect(throws: CacheError.self) { try DiskTier(configuration: .init(directory: path)) }
            try await owner.close()
            // Once the owner closes, the directory opens again.
            let next = try DiskTier(configuration: .init(directory: path))
            #expect(await next.entry(for: "k")?.value == Array("mine".utf8))
            try await next.close()
        }
    }
}
