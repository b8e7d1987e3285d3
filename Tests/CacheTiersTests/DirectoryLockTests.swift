// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Synchronization
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

            #if Tools
            // Another process: cache-tool put must refuse, and write nothing.
            try #require(FileManager.default.isExecutableFile(atPath: CacheToolTests.toolPath))
            let run = try await CacheToolTests().tool(["put", path, "k"], input: Array("theirs".utf8))
            #expect(run.status != 0 && run.error.contains("in use"))
            #expect(await owner.entry(for: "k")?.value == Array("mine".utf8))
            #endif

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

/// A process spawned by another thread holds copies of every descriptor between its fork and its
/// exec (close-on-exec closes them only at the exec), and with them the lock. A reopen that meets
/// such a copy must wait the moment out, not report the directory as in use.
@Suite struct DirectoryLockSpawnTests {
    @Test func reopeningWhileAnotherThreadSpawnsProcessesNeverReportsInUse() async throws {
        let directory = TemporaryDirectory("spawn")
        defer { directory.remove() }
        let configuration = DiskTier.Configuration(directory: directory.appending("cache"))
        try DiskStore(configuration: configuration).close()
        let spawning = Atomic<Bool>(true)
        let spawner = Thread {
            while spawning.load(ordering: .relaxed) {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/bin/true")
                guard (try? process.run()) != nil else { return }
                process.waitUntilExit()
            }
        }
        spawner.start()
        defer { spawning.store(false, ordering: .relaxed) }
        // A reopen that meets a copy waits for it: off the pool, which it would otherwise hold.
        let locked = try await offThePool {
            var locked = 0
            for _ in 0..<300 {
                do {
                    try DiskStore(configuration: configuration).close()
                } catch let error as CacheError where error.code == .directoryLocked {
                    locked += 1
                }
            }
            return locked
        }
        #expect(locked == 0)
    }
}
