// SPDX-License-Identifier: Apache-2.0

#if Tools
import ArgumentParser
import CacheTiers
import Foundation

/// Opens the store, runs `body`, and closes it (writing the index snapshot when something
/// changed).
///
/// What `body` did is the command's result: once it succeeded, a failure to close (the index
/// snapshot could not be written on a full disk, say) is a warning, not the command's failure —
/// a `put` whose record is in the log has stored its value, and a read has read. The next open
/// replays what the snapshot does not cover.
func withStore<T>(_ options: StoreOptions, _ body: (DiskStore) throws -> T) throws -> T {
    let store = try DiskStore(configuration: try options.configuration())
    let result: T
    do {
        result = try body(store)
    } catch {
        try? store.close()
        throw error
    }
    do {
        try store.close()
    } catch {
        writeError(
            "warning: done, but the index snapshot was not written (\(error)); the next open replays the log"
        )
    }
    return result
}

func writeError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

struct Put: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Store a value: from FILE, or standard input.")

    @OptionGroup var options: StoreOptions
    @Argument(help: "The key.") var key: String
    @Argument(help: "The file holding the value; standard input when absent.") var file: String?

    func run() throws {
        let data: Data
        if let file {
            data = try Data(contentsOf: URL(fileURLWithPath: file))
        } else {
            data = FileHandle.standardInput.readDataToEndOfFile()
        }
        let stored = try withStore(options) { store in
            try store.set(CacheEntry(value: [UInt8](data), storedAt: Date()), for: CacheKey(key))
        }
        if stored == .refused {
            writeError("not stored: \(data.count) bytes is over the admission limit (5% of the capacity)")
            throw ExitCode(1)
        }
    }
}

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write a value to standard output; exit 1 on a miss.")

    @OptionGroup var options: StoreOptions
    @Argument(help: "The key.") var key: String

    func run() throws {
        guard let entry = try withStore(options, { $0.entry(for: CacheKey(key)) }) else {
            writeError("miss: \(key)")
            throw ExitCode(1)
        }
        FileHandle.standardOutput.write(Data(entry.value))
    }
}

struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove a key; exit 1 when it was not there.")

    @OptionGroup var options: StoreOptions
    @Argument(help: "The key.") var key: String

    func run() throws {
        guard try withStore(options, { try $0.remove(CacheKey(key)) }) else {
            writeError("not found: \(key)")
            throw ExitCode(1)
        }
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List every entry: key, size, stored size, age.")

    @OptionGroup var options: StoreOptions

    func run() throws {
        let entries = try withStore(options) { $0.listEntries() }
        let now = Date()
        print("key\tsize\tstored\tage")
        for entry in entries {
            let age = max(0, Int(now.timeIntervalSince(entry.storedAt)))
            print("\(entry.key)\t\(entry.valueBytes)\t\(entry.storedBytes)\t\(age)s")
        }
    }
}

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Entries, bytes on disk, live ratio, compression ratio, segments."
    )

    @OptionGroup var options: StoreOptions
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let figures: [(String, String)] = try withStore(options) { store in
            let entries = store.listEntries()
            let valueBytes = entries.reduce(0) { $0 + $1.valueBytes }
            let storedValueBytes = entries.reduce(0) { $0 + $1.storedValueBytes }
            let total = store.totalBytes
            let live = store.liveBytes
            return [
                ("entries", "\(store.index.count)"),
                ("bytesOnDisk", "\(total)"),
                ("liveBytes", "\(live)"),
                ("liveRatio", ratio(live, total)),
                ("valueBytes", "\(valueBytes)"),
                ("storedValueBytes", "\(storedValueBytes)"),
                ("compressionRatio", ratio(valueBytes, storedValueBytes)),
                ("segments", "\(store.order.count)"),
                ("indexBytes", "\(store.index.memoryBytes)"),
            ]
        }
        if json {
            print("{" + figures.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
        } else {
            for (name, value) in figures { print("\(name)\t\(value)") }
        }
    }

    private func ratio(_ numerator: Int, _ denominator: Int) -> String {
        guard denominator > 0 else { return "0" }
        return String(Double(Int(Double(numerator) / Double(denominator) * 1000)) / 1000)
    }
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read every record and check every checksum; exit 1 when any is corrupt.",
        discussion:
            "Takes no lock and changes nothing. A torn record at the end of the newest segment is what a crash leaves; the next open cuts it."
    )

    @Argument(help: "The cache directory.") var directory: String
    @OptionGroup var keys: KeyOptions

    func run() throws {
        let encryption = try keys.encryption()
        let report = try DiskStore.verify(directory: directory, encryption: encryption)
        print("segments\t\(report.segments)")
        print("good\t\(report.goodRecords)")
        print("corrupt\t\(report.corruptRecords)")
        print("torn\t\(report.tornRecords)")
        print("snapshot\t\(report.snapshotPresent ? (report.snapshotValid ? "valid" : "damaged") : "absent")")
        print(
            "encrypted\t\(report.encrypted ? (encryption == nil ? "yes (not authenticated: no key given)" : "yes") : "no")"
        )
        if encryption != nil { print("unauthenticated\t\(report.unauthenticatedRecords)") }
        if report.corruptRecords > 0 || report.unauthenticatedRecords > 0
            || (report.snapshotPresent && !report.snapshotValid)
        {
            throw ExitCode(1)
        }
    }
}

struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Compact segments whose live ratio is low.")

    @OptionGroup var options: StoreOptions
    @Option(help: "Compact segments whose live ratio is below this.") var threshold: Double = 0.5

    func run() throws {
        guard (0...1).contains(threshold) else { throw ValidationError("--threshold must be in 0...1") }
        let (compacted, before, after) = try withStore(options) { store in
            let before = store.totalBytes
            let compacted = try store.compact(threshold: threshold)
            return (compacted, before, store.totalBytes)
        }
        print("compacted \(compacted) segments: \(before) -> \(after) bytes")
    }
}

struct Rekey: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-seal every record with --key-file; afterwards the previous keys are not needed.",
        discussion: "Give the old keys with --previous-key-file. Rewrites every segment."
    )

    @OptionGroup var options: StoreOptions

    func run() throws {
        guard options.keys.keyFile != nil else { throw ValidationError("rekey needs --key-file") }
        let resealed = try withStore(options) { try $0.rekey() }
        print("re-sealed \(resealed) records with the key of \(options.keys.keyFile ?? "")")
    }
}
#endif
