// SPDX-License-Identifier: Apache-2.0

// The child process of the crash tests: `CrashWriter DIRECTORY SEED [KEYFILE]` opens a disk store
// (encrypted with the 32-byte key in KEYFILE when given) and
// writes, removes, snapshots and compacts in a loop until it is killed. Around every operation it
// writes a line to standard output, unbuffered: `B key version size` before, `A key version size`
// after (version -1 is a removal). The parent kills it with SIGKILL at a random line and checks
// that the reopened directory holds exactly what was acknowledged, or the one operation in flight.
//
// With `--batches` before the directory, each operation is a batch (`DiskStore.commit`) over the
// four keys of one of 16 groups (`gG-k0` … `gG-k3`): all four set to one version, with sizes the
// parent derives (`batchValueSize`), or all four removed; the lines are `B gG version` and
// `A gG version`.

import CacheTestSupport
import CacheTiers
import Foundation

// The test process ignores SIGPIPE (NIO does), and a child inherits that. Restored, a writer
// whose parent has died ends quietly at its next line, not with a trap on the failed write and a
// backtrace that would bury the parent's own at the end of the test run's output.
signal(SIGPIPE, SIG_DFL)

let batches = CommandLine.arguments.dropFirst().first == "--batches"
let arguments = batches ? [CommandLine.arguments[0]] + CommandLine.arguments.dropFirst(2) : CommandLine.arguments
guard (3...4).contains(arguments.count), let seed = UInt64(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: CrashWriter [--batches] DIRECTORY SEED [KEYFILE]\n".utf8))
    exit(2)
}

let store: DiskStore
do {
    let encryption = try arguments.dropFirst(3).first.map { path in
        DiskEncryption(key: try EncryptionKey(bytes: Data(contentsOf: URL(fileURLWithPath: path))))
    }
    let configuration = DiskTier.Configuration(
        directory: arguments[1],
        capacityBytes: 16 << 20,
        segmentBytes: 512 << 10,
        fsync: .never,
        encryption: encryption
    )
    store = try DiskStore(configuration: configuration)
} catch {
    FileHandle.standardError.write(Data("open failed: \(error)\n".utf8))
    exit(1)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

var generator = SplitMix64(seed: seed)
var step = 0
while batches {
    let group = "g\(generator.next() % 16)"
    let removes = generator.next() % 10 == 0
    let version = removes ? -1 : Int(seed % 1000) * 1_000_000 + step
    let changes: [DiskTier.Change] = (0..<4).map { index in
        let key = CacheKey("\(group)-k\(index)")
        guard !removes else { return .remove(key) }
        let size = SampleData.batchValueSize(version: version, index: index)
        let value = SampleData.versioned(key: key.string, version: version, size: size)
        return .set(CacheEntry(value: value, metadata: Array(key.string.utf8), storedAt: Date()), for: key)
    }
    do {
        say("B \(group) \(version)")
        try store.commit(changes)
        say("A \(group) \(version)")
        if step % 300 == 299 { try store.writeSnapshot() }
        if step % 450 == 449 { try store.compact(threshold: 0.6) }
    } catch {
        FileHandle.standardError.write(Data("batch failed: \(error)\n".utf8))
        exit(1)
    }
    step += 1
}
while true {
    let key = "key\(generator.next() % 64)"
    do {
        if generator.next() % 10 == 0 {
            say("B \(key) -1 0")
            try store.remove(CacheKey(key))
            say("A \(key) -1 0")
        } else {
            let version = Int(seed % 1000) * 1_000_000 + step
            let size = 16 + Int(generator.next() % 20_000)
            let value = SampleData.versioned(key: key, version: version, size: size)
            say("B \(key) \(version) \(size)")
            try store.set(CacheEntry(value: value, metadata: Array(key.utf8), storedAt: Date()), for: CacheKey(key))
            say("A \(key) \(version) \(size)")
        }
        if step % 300 == 299 { try store.writeSnapshot() }
        if step % 450 == 449 { try store.compact(threshold: 0.6) }
    } catch {
        FileHandle.standardError.write(Data("operation failed: \(error)\n".utf8))
        exit(1)
    }
    step += 1
}
