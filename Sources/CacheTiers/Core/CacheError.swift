// SPDX-License-Identifier: Apache-2.0

/// An error thrown by the storage tiers.
///
/// Match on ``code`` to decide what to do; ``message`` says what happened in words and
/// ``underlying`` carries the cause (an `Errno`, a decoding error) when there is one.
///
/// ```swift
/// do {
///     try await cache.set(value, forKey: key)
/// } catch let error as CacheError where error.code == .outOfSpace {
///     // keep serving from memory
/// }
/// ```
public struct CacheError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case compressionFailed
            case corruptData
            case valueTooLarge
            case invalidArgument
            case directoryLocked
            case io
            case outOfSpace
            case corruptRecord
            case unsupportedFormat
            case closed
            case wrongKey
            case encryptionMismatch
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// LZ4 could not compress the input (it is larger than LZ4 accepts).
        public static var compressionFailed: Self { Self(.compressionFailed) }
        /// Compressed bytes did not decode to the expected length: they are corrupt or truncated.
        public static var corruptData: Self { Self(.corruptData) }
        /// A length is above the configured or supported maximum.
        public static var valueTooLarge: Self { Self(.valueTooLarge) }
        /// An argument or a configuration value is out of range.
        public static var invalidArgument: Self { Self(.invalidArgument) }
        /// Another process or another instance owns the cache directory.
        public static var directoryLocked: Self { Self(.directoryLocked) }
        /// A file operation failed; ``CacheError/underlying`` holds the `Errno`.
        public static var io: Self { Self(.io) }
        /// The disk is full. Reads and the memory tier go on; nothing stored is damaged.
        public static var outOfSpace: Self { Self(.outOfSpace) }
        /// A record on disk failed its checksum or is malformed.
        public static var corruptRecord: Self { Self(.corruptRecord) }
        /// A file was written by a newer, unknown format version.
        public static var unsupportedFormat: Self { Self(.unsupportedFormat) }
        /// The tier was closed and takes no more operations.
        public static var closed: Self { Self(.closed) }
        /// None of the given encryption keys opens the cache directory. Nothing in it was changed.
        public static var wrongKey: Self { Self(.wrongKey) }
        /// An encrypted cache directory was opened without a key, or a plain one with a key.
        /// Nothing in it was changed.
        public static var encryptionMismatch: Self { Self(.encryptionMismatch) }

        public var description: String { String(describing: base) }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What happened, in words.
    public var message: String
    /// The error that caused this one, if any.
    public var underlying: (any Error)?

    /// Creates an error.
    public init(code: Code, message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String {
        if let underlying {
            return "CacheError(\(code)): \(message) (\(underlying))"
        }
        return "CacheError(\(code)): \(message)"
    }
}
