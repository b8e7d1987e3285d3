// SPDX-License-Identifier: Apache-2.0

public import Logging
public import Metrics

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// When the disk tier asks the operating system to flush written data to stable storage.
///
/// Whatever the policy, a crash never corrupts the cache: recovery cuts a torn tail. The policy
/// only decides how much of the newest data a power loss may take.
public struct FsyncPolicy: Hashable, Sendable, CustomStringConvertible {
    private enum Base: Hashable, Sendable {
        case never
        case onRotation
        case interval(Duration)
    }

    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// Never: the operating system writes back when it likes. Fastest; a process crash loses
    /// nothing that `set` returned for, a power loss may lose the last seconds of writes.
    public static var never: Self { Self(.never) }
    /// When a segment is full and a new one starts, and on close and snapshots.
    public static var onRotation: Self { Self(.onRotation) }
    /// At most `interval` after a write, checked on the next write, and on rotation.
    public static func every(_ interval: Duration) -> Self { Self(.interval(interval)) }

    package var syncsOnRotation: Bool { base != .never }
    package var interval: Duration? {
        if case .interval(let interval) = base { return interval }
        return nil
    }

    public var description: String {
        switch base {
        case .never: "never"
        case .onRotation: "onRotation"
        case .interval(let interval): "every(\(interval))"
        }
    }
}

extension DiskTier {
    /// How a disk tier is set up. Every property has a documented default.
    public struct Configuration: Sendable {
        /// The cache directory; created with mode 0700 when missing.
        public var directory: String
        /// The most bytes the tier keeps on disk, counting every byte of every segment and the index
        /// snapshot. Usage may pass it by at most one segment. Default 512 MiB.
        public var capacityBytes: Int
        /// The size at which a segment is closed and a new one started. Default 64 MiB; the tier
        /// uses at most an eighth of ``capacityBytes`` (and at least 64 KiB) so that retiring the
        /// oldest segment never drops a large part of the cache at once.
        public var segmentBytes: Int
        /// A value whose record would take more than this fraction of ``capacityBytes`` is not
        /// written to disk. Default 0.05, URLCache's 5% rule.
        public var admissionFraction: Double
        /// When to flush to stable storage. Default ``FsyncPolicy/onRotation``.
        public var fsync: FsyncPolicy
        /// Segments whose live bytes fall below this fraction of their size are compacted by
        /// ``DiskTier/compact()`` and by the maintenance loop. Default 0.5.
        public var compactionThreshold: Double
        /// How often the maintenance loop in ``DiskTier/run()`` writes an index snapshot and compacts.
        /// Default 60 seconds.
        public var maintenanceInterval: Duration
        /// Where the tier logs recoveries, corrupt records and I/O errors. Default: `Logger.current`,
        /// the task-local logger the app binds with `withLogger` (swift-log 1.16), read when the
        /// configuration is made.
        public var logger: Logger
        /// The wall clock that stamps entries. Default `Date()`; tests pass their own.
        public var now: @Sendable () -> Date
        /// Where the tier's metrics go. Default nil: the process-wide `MetricsSystem.factory`.
        public var metricsFactory: (any MetricsFactory)?
        /// Encrypts every record at rest (AES-256-GCM) and keys the index digests (HMAC-SHA256)
        /// when set; see ``DiskEncryption``. A directory is encrypted or not from its creation on:
        /// the wrong key, or a key for a plain directory, is an error at open. Default nil.
        public var encryption: DiskEncryption?
        /// Faults for tests to inject into file I/O.
        package var faults: FaultInjector?

        /// Creates a configuration.
        public init(
            directory: String,
            capacityBytes: Int = 512 << 20,
            segmentBytes: Int = 64 << 20,
            admissionFraction: Double = 0.05,
            fsync: FsyncPolicy = .onRotation,
            compactionThreshold: Double = 0.5,
            maintenanceInterval: Duration = .seconds(60),
            logger: Logger = Logger.current,
            now: @escaping @Sendable () -> Date = { Date() },
            metricsFactory: (any MetricsFactory)? = nil,
            encryption: DiskEncryption? = nil
        ) {
            self.directory = directory
            self.capacityBytes = capacityBytes
            self.segmentBytes = segmentBytes
            self.admissionFraction = admissionFraction
            self.fsync = fsync
            self.compactionThreshold = compactionThreshold
            self.maintenanceInterval = maintenanceInterval
            self.logger = logger
            self.now = now
            self.metricsFactory = metricsFactory
            self.encryption = encryption
            self.faults = nil
        }

        /// The segment size in force: ``segmentBytes`` bounded by an eighth of the capacity, at
        /// least 64 KiB, at most 1 GiB.
        package var effectiveSegmentBytes: Int {
            min(1 << 30, max(64 << 10, min(segmentBytes, capacityBytes / 8)))
        }

        /// The largest record the tier admits.
        package var admissionLimit: Int {
            Int(Double(capacityBytes) * admissionFraction)
        }

        package func validate() throws {
            guard capacityBytes >= 0 else {
                throw CacheError(code: .invalidArgument, message: "capacityBytes must not be negative")
            }
            guard segmentBytes > 0 else {
                throw CacheError(code: .invalidArgument, message: "segmentBytes must be positive")
            }
            guard (0...1).contains(admissionFraction) else {
                throw CacheError(code: .invalidArgument, message: "admissionFraction must be in 0...1")
            }
            guard (0...1).contains(compactionThreshold) else {
                throw CacheError(code: .invalidArgument, message: "compactionThreshold must be in 0...1")
            }
            guard !directory.isEmpty else {
                throw CacheError(code: .invalidArgument, message: "directory must not be empty")
            }
        }
    }
}
