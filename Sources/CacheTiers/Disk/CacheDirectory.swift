// SPDX-License-Identifier: Apache-2.0

package import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A cache directory and its lock: one directory, one owner.
///
/// The lock is `flock(LOCK_EX | LOCK_NB)` on the directory itself, then on the file `lock` inside
/// it. flock locks belong to an open file description, so a second opener is refused whether it
/// is another process or another instance in this one, and they go away with the process, so a
/// crash never leaves a stale lock. The directory's lock is what holds: deleting or replacing the
/// `lock` file (a temporary-file cleaner, a hand) cannot split ownership, because a second opener
/// still meets the lock on the directory; the file's lock keeps out versions that locked only it.
package struct CacheDirectory {
    package let path: FilePath
    private let lockFile: CacheFile?
    /// The directory opened for its lock, or -1.
    private let directoryDescriptor: Int32

    package static let lockFileName = "lock"
    /// How long a conflicting lock is waited for before the directory counts as in use: 50 tries,
    /// 2 ms apart (about 0.1 s).
    private static let lockAttempts = 1_000
    private static let lockPause: useconds_t = 2_000
    package static let snapshotFileName = "index.lcx"
    package static let segmentPrefix = "segment-"
    package static let segmentSuffix = ".lcs"

    /// Creates the directory (mode 0700) if needed and takes its lock.
    /// - Parameters:
    ///   - lock: false for read-only inspection (`cache-tool verify`), which takes no lock.
    ///   - create: false to require an existing directory.
    /// - Throws: ``CacheError/Code/directoryLocked`` when another owner holds it.
    package init(path: FilePath, lock: Bool = true, create: Bool = true) throws {
        self.path = path
        if create {
            try Self.createDirectory(path)
        } else {
            _ = try Self.list(path)
        }
        guard lock else {
            lockFile = nil
            directoryDescriptor = -1
            return
        }
        let directory = path.withPlatformString { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard directory >= 0 else { throw CacheFile.error(Errno(rawValue: errno), "open \(path)") }
        if let failure = Self.lockFailure(directory, path) {
            close(directory)
            throw failure
        }
        let file: CacheFile
        do {
            file = try CacheFile.open(path.appending(Self.lockFileName), create: true)
        } catch {
            close(directory)
            throw error
        }
        if let failure = Self.lockFailure(file.descriptor.rawValue, path) {
            file.close()
            close(directory)
            throw failure
        }
        lockFile = file
        directoryDescriptor = directory
    }

    /// Takes the exclusive lock on `descriptor`; the error to throw when that fails.
    ///
    /// A conflict is tried again for about 2 s: a process that another thread spawns holds a
    /// copy of every descriptor between its fork and its exec (close-on-exec closes them only at
    /// the exec), and with them the lock a closed cache just gave up. On a loaded machine that
    /// window passed 0.1 s (a close and reopen failed with `directoryLocked` while the test suite
    /// spawned its child processes). Only a lock still held after that is another owner.
    private static func lockFailure(_ descriptor: Int32, _ path: FilePath) -> CacheError? {
        var error = Errno.wouldBlock
        for attempt in 0..<lockAttempts {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return nil }
            error = Errno(rawValue: errno)
            guard error == .wouldBlock || error == .resourceTemporarilyUnavailable || error == .interrupted else {
                break
            }
            if attempt + 1 < lockAttempts { usleep(lockPause) }
        }
        if error == .wouldBlock || error == .resourceTemporarilyUnavailable || error == .interrupted {
            return CacheError(
                code: .directoryLocked,
                message: "\(path) is in use by another process or another cache instance in this one"
            )
        }
        return CacheFile.error(error, "lock \(path)")
    }

    /// Releases the lock. Call it once (the owner's single release path does).
    package func unlock() {
        lockFile?.close()
        if directoryDescriptor >= 0 { close(directoryDescriptor) }
    }

    /// The file name of segment `sequence`.
    package static func segmentFileName(_ sequence: UInt32) -> String {
        let digits = String(sequence)
        return segmentPrefix + String(repeating: "0", count: max(0, 10 - digits.count)) + digits + segmentSuffix
    }

    package func segmentPath(_ sequence: UInt32) -> FilePath {
        path.appending(Self.segmentFileName(sequence))
    }

    package var snapshotPath: FilePath { path.appending(Self.snapshotFileName) }

    /// The sequence numbers of the segment files present, ascending.
    package func segmentSequences() throws -> [UInt32] {
        try Self.list(path).compactMap { name in
            guard name.hasPrefix(Self.segmentPrefix), name.hasSuffix(Self.segmentSuffix) else { return nil }
            let digits = name.dropFirst(Self.segmentPrefix.count).dropLast(Self.segmentSuffix.count)
            guard digits.count == 10, digits.allSatisfy(\.isASCII) else { return nil }
            return UInt32(digits)
        }.sorted()
    }

    /// Removes a file; a file that is already gone is fine.
    package func remove(_ file: FilePath) throws {
        let result = file.withPlatformString { unlink($0) }
        if result != 0 {
            let error = Errno(rawValue: errno)
            guard error == .noSuchFileOrDirectory else { throw CacheFile.error(error, "remove \(file)") }
        }
    }

    /// Atomically replaces `destination` with `source`.
    package func rename(_ source: FilePath, to destination: FilePath) throws {
        let result = source.withPlatformString { from in destination.withPlatformString { to in systemRename(from, to) }
        }
        guard result == 0 else { throw CacheFile.error(Errno(rawValue: errno), "rename \(source) to \(destination)") }
    }

    /// Replaces the file `name` with `bytes` atomically: written to `name.tmp`, flushed, renamed over
    /// `name`, and the directory flushed. A crash leaves the old file or the new one, never half.
    package func replaceAtomically(_ name: String, with bytes: [UInt8], faults: FaultInjector? = nil) throws {
        let temporary = path.appending(name + ".tmp")
        let file = try CacheFile.open(temporary, create: true, faults: faults)
        do {
            // Closed exactly once, whatever fails: a second close could take a descriptor that
            // another thread has opened since.
            defer { file.close() }
            try file.truncate(to: 0)
            try bytes.withUnsafeBytes { try file.write($0, at: 0) }
            try file.sync()
        } catch {
            try? remove(temporary)
            throw error
        }
        do {
            try rename(temporary, to: path.appending(name))
        } catch {
            try? remove(temporary)
            throw error
        }
        sync()
    }

    /// The whole content of the file `name`, or nil when there is no such file.
    package func readIfPresent(_ name: String) throws -> [UInt8]? {
        let file: CacheFile
        do {
            file = try CacheFile.open(path.appending(name), create: false, readOnly: true)
        } catch let error as CacheError where (error.underlying as? Errno) == .noSuchFileOrDirectory {
            return nil
        }
        defer { file.close() }
        let size = Int(try file.size())
        return try file.read(count: size, at: 0) ?? []
    }

    /// Removes the directory itself if it is empty; anything else in it keeps it.
    package func removeIfEmpty() {
        _ = path.withPlatformString { rmdir($0) }
    }

    /// Flushes the directory entry changes (creations, renames, removals) to stable storage.
    package func sync() {
        guard let directory = try? CacheFile.open(path, create: false, readOnly: true) else { return }
        _ = fsync(directory.descriptor.rawValue)
        directory.close()
    }

    // MARK: Helpers

    private static func createDirectory(_ path: FilePath) throws {
        var prefix = FilePath(root: path.root)
        for component in path.components {
            prefix.append(component)
            let result = prefix.withPlatformString { mkdir($0, 0o700) }
            if result != 0 {
                let error = Errno(rawValue: errno)
                guard error == .fileExists else { throw CacheFile.error(error, "create directory \(prefix)") }
            }
        }
    }

    private static func list(_ path: FilePath) throws -> [String] {
        guard let stream = path.withPlatformString({ opendir($0) }) else {
            throw CacheFile.error(Errno(rawValue: errno), "list \(path)")
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

/// `rename(2)`, under a name that the method above does not shadow.
private func systemRename(_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>) -> Int32 {
    rename(from, to)
}
