// SPDX-License-Identifier: Apache-2.0

#if Proxy && Hummingbird
import CacheTiers
import Foundation
import NIOCore
import PostgresNIO
import Synchronization

@testable import PostgresCacheTier

/// Reads what the cache wrote: the directories' files (segments from where the last scan ended;
/// the other files whole) and the shared tier's rows.
final class Scanner: Sendable {
    private let directories: [String]
    private let scanned = Mutex<[String: Int]>([:])
    /// How many bytes of files the scans read.
    let bytesRead = Atomic<Int>(0)

    init(directories: [String]) {
        self.directories = directories
    }

    /// Forgets where the segments were read to: the next scan reads every file whole.
    func rescanEverything() { scanned.withLock { $0 = [:] } }

    /// What holds a secret: files (by name) and rows, as short descriptions.
    func scan(_ secrets: Secrets, rows shared: (any SharedCacheTier)?, table: String) async throws -> [String] {
        var found: [String] = []
        for directory in directories {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                let path = directory + "/" + name
                guard let data = FileManager.default.contents(atPath: path) else { continue }
                let bytes = [UInt8](data)
                bytesRead.add(bytes.count, ordering: .relaxed)
                let isSegment = name.hasPrefix("segment-")
                let start =
                    isSegment ? max(0, min(bytes.count, scanned.withLock { $0[path] ?? 0 }) - Secrets.length) : 0
                if isSegment { scanned.withLock { $0[path] = bytes.count } }
                if let secret = Self.firstSecret(in: bytes[start...], secrets) { found.append("\(path): \(secret)") }
            }
        }
        if let tier = shared as? PostgresSharedTier {
            found += try await scanRows(of: tier, table: table, secrets: secrets)
        }
        return found
    }

    /// The rows whose key, metadata or value holds a secret.
    func scanRows(of tier: PostgresSharedTier, table: String, secrets: Secrets) async throws -> [String] {
        var found: [String] = []
        let rows: PostgresRowSequence
        do {
            rows = try await tier.client.query(
                "SELECT key, metadata, value FROM \(unescaped: tier.configuration.tableName)"
            )
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "42P01" {
            return []  // no table yet: nothing was written
        }
        var count = 0
        for try await (key, metadata, value) in rows.decode((ByteBuffer, ByteBuffer, ByteBuffer).self) {
            count += 1
            for column in [key, metadata, value] {
                if let secret = Self.firstSecret(in: Array(column.readableBytesView)[...], secrets) {
                    found.append("row: \(secret)")
                }
            }
        }
        rowCounts.withLock { $0.append(count) }
        return found
    }

    /// How many rows each scan of the table read.
    let rowCounts = Mutex<[Int]>([])

    /// The first secret in `bytes`: a window of ``Secrets/length`` letters and digits that is one.
    static func firstSecret(in bytes: ArraySlice<UInt8>, _ secrets: Secrets) -> String? {
        var run = bytes.startIndex
        var index = bytes.startIndex
        while index <= bytes.endIndex {
            let isAlphanumeric =
                index < bytes.endIndex
                && ((bytes[index] >= 0x30 && bytes[index] <= 0x39)
                    || (bytes[index] | 0x20 >= 0x61 && bytes[index] | 0x20 <= 0x7A))
            if !isAlphanumeric {
                if index - run >= Secrets.length {
                    for start in run...(index - Secrets.length) {
                        let window = bytes[start..<(start + Secrets.length)]
                        if secrets.contains(window) { return String(decoding: window, as: UTF8.self) }
                    }
                }
                run = index + 1
            }
            index += 1
        }
        return nil
    }
}

/// A small, fast, seedable generator (SplitMix64), so that a seed replays a run.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
#endif
