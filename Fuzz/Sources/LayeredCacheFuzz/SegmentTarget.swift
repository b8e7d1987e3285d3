// SPDX-License-Identifier: Apache-2.0

import Logging

@testable import CacheTiers

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Segment replay and the index snapshot at open (`DiskStore.recover`), over files a program of
/// operations wrote and damaged: puts, removals, clears, snapshots, reopenings, and damage to a
/// segment or the snapshot file (flipped bits, a cut, garbage appended or inserted, a snapshot of
/// garbage). After every reopening, for every key:
/// - a key whose last operation came after every damage reads exactly as the model says (its
///   last value, or nothing after a removal or a clear): damage costs only what it touched;
/// - any other key reads nothing or a value that was put for it: recovery never returns bytes
///   that were not written, and never one key's bytes for another.
enum SegmentTarget {
    static let keys = (0..<6).map { CacheKey("https://example.com/\($0)") }

    /// A directory of its own on tmpfs when there is one (fewer disk writes), removed per input.
    static let root: String = {
        let base =
            FileManager.default.fileExists(atPath: "/dev/shm")
            ? "/dev/shm" : FileManager.default.temporaryDirectory.path
        return base + "/layeredcache-fuzz-\(getpid())"
    }()

    private struct Model {
        /// Every value put for each key.
        var written: [Set<[UInt8]>] = Array(repeating: [], count: keys.count)
        /// The value each key must read, when it is known (nil: read nothing).
        var expected: [[UInt8]?] = Array(repeating: nil, count: keys.count)
        /// Whether the key's expected value holds (no damage since its last operation).
        var known: [Bool] = Array(repeating: true, count: keys.count)
    }

    static func run(_ data: UnsafeRawBufferPointer) {
        let directory = root + "/cache"
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = DiskTier.Configuration(
            directory: directory,
            capacityBytes: 16 << 20,
            segmentBytes: 64 << 10,
            fsync: .never,
            logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() }),
            now: { Date(timeIntervalSince1970: 1_790_000_000) }
        )
        var input = FuzzInput(data)
        var model = Model()
        guard var store = try? DiskStore(configuration: configuration) else {
            check(false, "a new directory opens")
            return
        }
        var operations = 0
        while !input.isAtEnd, operations < 48 {
            operations += 1
            let operation = input.byte()
            let index = Int(input.byte()) % keys.count
            switch operation % 10 {
            case 0, 1, 2:
                // A value of up to 24 KiB that does not compress, so that segments fill and rotate.
                let length = Int(input.integer(UInt16.self)) % (24 << 10)
                let value = incompressible(length, seed: UInt64(input.integer(UInt32.self)))
                let entry = CacheEntry(value: value, metadata: [UInt8(index)], storedAt: configuration.now())
                model.written[index].insert(value)
                // A write that fails forgets the key's older value.
                let outcome = try? store.set(entry, for: keys[index])
                model.expected[index] = outcome == .stored ? value : nil
                model.known[index] = true
            case 3:
                guard (try? store.remove(keys[index])) != nil else { continue }
                model.expected[index] = nil
                model.known[index] = true
            case 4:
                guard (try? store.removeAll()) != nil else { continue }
                model.expected = Array(repeating: nil, count: keys.count)
                model.known = Array(repeating: true, count: keys.count)
            case 5:
                try? store.writeSnapshot()
            case 6, 7, 8:
                try? store.close()
                damage(directory, &input)
                model.known = Array(repeating: false, count: keys.count)
                guard let reopened = reopen(configuration, &model) else { return }
                store = reopened
            default:
                try? store.close()
                guard let reopened = reopen(configuration, &model) else { return }
                store = reopened
            }
        }
        try? store.close()
        _ = reopen(configuration, &model).map { try? $0.close() }
    }

    /// Opens the directory again and checks every key against the model.
    private static func reopen(_ configuration: DiskTier.Configuration, _ model: inout Model) -> DiskStore? {
        let store: DiskStore
        do {
            store = try DiskStore(configuration: configuration)
        } catch let error as CacheError where error.code == .unsupportedFormat && model.known.contains(false) {
            // Damage to a segment's format version reads as a newer format, which the store
            // refuses rather than overwrite (docs/disk-format.md): not a failure of recovery.
            return nil
        } catch {
            check(false, "a damaged directory still opens: \(error)")
            return nil
        }
        for (index, key) in keys.enumerated() {
            let entry = store.entry(for: key)
            if let entry {
                check(entry.metadata == [UInt8(index)], "key \(index) reads another key's record")
                check(model.written[index].contains(entry.value), "key \(index) reads bytes never written for it")
            }
            if model.known[index] {
                check(
                    entry?.value == model.expected[index],
                    "key \(index) reads \(entry?.value.count ?? -1) bytes, expected \(model.expected[index]?.count ?? -1)"
                )
            } else {
                // What it reads now is what it holds from here on.
                model.expected[index] = entry?.value
                model.known[index] = true
            }
        }
        return store
    }

    /// Damages one file of the closed directory as the input says.
    private static func damage(_ directory: String, _ input: inout FuzzInput) {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        let segments = names.filter { $0.hasSuffix(CacheDirectory.segmentSuffix) }
        let kind = input.byte() % 6
        let target: String
        if kind == 5 {
            target = CacheDirectory.snapshotFileName
        } else {
            guard !segments.isEmpty else { return }
            target = segments[Int(input.byte()) % segments.count]
        }
        let path = directory + "/" + target
        var bytes = FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
        let offset = bytes.isEmpty ? 0 : input.number(below: bytes.count)
        switch kind {
        case 0:
            // Flipped bits, up to four.
            for _ in 0...(input.byte() % 4) where !bytes.isEmpty {
                bytes[input.number(below: bytes.count)] ^= 1 << (input.byte() % 8)
            }
        case 1:
            bytes.removeSubrange(offset...)  // a torn tail
        case 2:
            bytes += input.bytes(upTo: 255)  // garbage after the last record
        case 3:
            bytes.insert(contentsOf: input.bytes(upTo: 255), at: offset)  // garbage inside
        case 4:
            // A copy of a stretch of the file pasted elsewhere: records that verify, in the wrong place.
            let length = min(bytes.count - offset, Int(input.integer(UInt16.self)))
            let stretch = Array(bytes[offset..<(offset + length)])
            bytes.insert(contentsOf: stretch, at: input.number(below: bytes.count + 1))
        default:
            bytes = input.bytes(upTo: 255)  // a snapshot of garbage
        }
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    }

    static func seeds() throws -> [[UInt8]] {
        [
            // put 0, put 1, reopen, remove 0, snapshot, reopen
            [0, 0, 0x00, 0x10, 1, 0, 0, 0, 1, 1, 0x00, 0x20, 2, 0, 0, 0, 9, 0, 3, 0, 5, 0, 9, 0],
            // put 2 large, put 3 large, put 2 again, cut a segment, reopen
            [
                0, 2, 0xFF, 0x5F, 3, 0, 0, 0, 0, 3, 0xFF, 0x5F, 4, 0, 0, 0, 0, 2, 0x00, 0x30, 5, 0, 0, 0, 6, 0, 1, 0,
                0x80, 0, 0, 0, 9, 0,
            ],
            // put, snapshot, garbage inside a segment, put, clear, reopen
            [1, 4, 0x00, 0x08, 6, 0, 0, 0, 5, 0, 7, 0, 3, 0, 0x40, 0, 0, 0, 16] + Array(repeating: 0x4C, count: 16)
                + [2, 5, 0x00, 0x04, 7, 0, 0, 0, 4, 0, 9, 0],
        ]
    }
}
