// SPDX-License-Identifier: Apache-2.0

import Synchronization
package import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Faults a test can make the disk tier's file I/O run into: short writes, a full disk, torn
/// records. Production code passes none.
package final class FaultInjector: Sendable {
    private struct Plan {
        var writeError: Errno?
        var bytesBeforeError = 0
        var remainingFailures = 0
    }

    // Protected by its own mutex; a test sets a plan, the disk tier's writes consume it.
    private let plan = Mutex(Plan())

    package init() {}

    /// Makes the next `count` writes write `bytesBeforeError` bytes (a short, torn write) and then
    /// fail with `error`, e.g. `.noSpace`.
    package func failWrites(with error: Errno, afterWriting bytesBeforeError: Int = 0, count: Int = .max) {
        plan.withLock { $0 = Plan(writeError: error, bytesBeforeError: bytesBeforeError, remainingFailures: count) }
    }

    /// Clears every planned fault.
    package func reset() {
        plan.withLock { $0 = Plan() }
    }

    /// The fault for the next write, if any: how many bytes to write first, and the error.
    fileprivate func nextWriteFault() -> (bytes: Int, error: Errno)? {
        plan.withLock { plan in
            guard let error = plan.writeError, plan.remainingFailures > 0 else { return nil }
            plan.remainingFailures -= 1
            if plan.remainingFailures == 0 { plan.writeError = nil }
            return (plan.bytesBeforeError, error)
        }
    }
}

/// The one small type through which the disk tier reads and writes files: positional reads and
/// writes over swift-system's `FileDescriptor`, every failure a thrown `CacheError` with the
/// `Errno` as its cause.
package struct CacheFile: Sendable {
    package let descriptor: FileDescriptor
    package let path: FilePath
    private let faults: FaultInjector?

    private init(descriptor: FileDescriptor, path: FilePath, faults: FaultInjector?) {
        self.descriptor = descriptor
        self.path = path
        self.faults = faults
    }

    /// Opens `path` for reading and writing (or reading only), creating it with mode 0600 when asked.
    package static func open(
        _ path: FilePath,
        create: Bool,
        readOnly: Bool = false,
        faults: FaultInjector? = nil
    ) throws -> CacheFile {
        do {
            let descriptor = try FileDescriptor.open(
                path,
                readOnly ? .readOnly : .readWrite,
                options: create ? [.create, .closeOnExec] : [.closeOnExec],
                permissions: create ? [.ownerReadWrite] : nil,
                retryOnInterrupt: true
            )
            return CacheFile(descriptor: descriptor, path: path, faults: faults)
        } catch let errno as Errno {
            throw CacheFile.error(errno, "open \(path)")
        }
    }

    /// Writes all of `bytes` at `offset`.
    /// - Throws: ``CacheError/Code/outOfSpace`` when the disk is full, ``CacheError/Code/io`` otherwise;
    ///   some bytes may have been written.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        do {
            if let fault = faults?.nextWriteFault() {
                let prefix = min(fault.bytes, bytes.count)
                if prefix > 0 {
                    _ = try descriptor.writeAll(
                        toAbsoluteOffset: offset,
                        UnsafeRawBufferPointer(rebasing: bytes[..<prefix])
                    )
                }
                throw fault.error
            }
            _ = try descriptor.writeAll(toAbsoluteOffset: offset, bytes)
        } catch let errno as Errno {
            throw CacheFile.error(errno, "write \(bytes.count) bytes at \(offset) of \(path)")
        }
    }

    /// Reads into `buffer` from `offset` until it is full or the file ends.
    /// - Returns: the number of bytes read; less than `buffer.count` only at the end of the file.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        try read(into: buffer, at: offset) { _ in false }
    }

    /// Reads into `buffer` from `offset` until it is full, the file ends, or `isEnough` — asked
    /// after a read that returned fewer bytes than asked for — says the bytes so far suffice.
    /// - Returns: the number of bytes read.
    package func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        isEnough: (UnsafeRawBufferPointer) -> Bool
    ) throws -> Int {
        do {
            return try Self.read(from: descriptor, into: buffer, at: offset, isEnough: isEnough)
        } catch {
            throw CacheFile.error(error, "read \(buffer.count) bytes at \(offset) of \(path)")
        }
    }

    /// ``read(into:at:isEnough:)`` on a bare descriptor: what the disk tier's readers call, so
    /// that a read copies no reference-counted value (a path, a fault injector) that every reader
    /// would share.
    /// - Throws: the `Errno` of a failed read.
    package static func read(
        from descriptor: FileDescriptor,
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        isEnough: (UnsafeRawBufferPointer) -> Bool
    ) throws(Errno) -> Int {
        var total = 0
        while total < buffer.count {
            let count: Int
            do {
                count = try descriptor.read(
                    fromAbsoluteOffset: offset + Int64(total),
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...]),
                    retryOnInterrupt: true
                )
            } catch let errno as Errno {
                throw errno
            } catch {
                throw Errno.ioError
            }
            if count == 0 { break }
            total += count
            if total < buffer.count, isEnough(UnsafeRawBufferPointer(rebasing: buffer[..<total])) { break }
        }
        return total
    }

    /// Reads exactly `count` bytes at `offset`.
    /// - Returns: the bytes, or nil when the file ends first.
    package func read(count: Int, at offset: Int64) throws -> [UInt8]? {
        var complete = true
        let bytes = try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let read = try self.read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
            complete = read == count
            initialized = read
        }
        return complete ? bytes : nil
    }

    /// The file's current size in bytes.
    package func size() throws -> Int64 {
        do {
            return try descriptor.seek(offset: 0, from: .end)
        } catch let errno as Errno {
            throw CacheFile.error(errno, "size of \(path)")
        }
    }

    /// Cuts or extends the file to `size` bytes.
    package func truncate(to size: Int64) throws {
        do {
            try descriptor.resize(to: size, retryOnInterrupt: true)
        } catch let errno as Errno {
            throw CacheFile.error(errno, "truncate \(path) to \(size)")
        }
    }

    /// Flushes the file's data to stable storage.
    package func sync() throws {
        guard fsync(descriptor.rawValue) == 0 else {
            throw CacheFile.error(Errno(rawValue: errno), "fsync \(path)")
        }
    }

    /// Closes the descriptor; errors are ignored, as there is nothing left to do about them.
    package func close() {
        try? descriptor.close()
    }

    /// Maps an `Errno` to the tier's error: a full disk or quota is `.outOfSpace`, the rest `.io`.
    package static func error(_ errno: Errno, _ what: String) -> CacheError {
        let code: CacheError.Code = (errno == .noSpace || errno == .diskQuotaExceeded) ? .outOfSpace : .io
        return CacheError(code: code, message: "\(what) failed: \(errno)", underlying: errno)
    }
}
