// SPDX-License-Identifier: Apache-2.0

import CacheTiers

/// An error thrown by the HTTP caching layer.
///
/// Match on ``code``; ``message`` says what happened in words, and ``underlying`` carries the
/// cause: for ``Code/storage``, the storage tier's `CacheError` (for example `outOfSpace`), which
/// says what the tiers did.
///
/// ```swift
/// do {
///     try await cache.storeCachedResponse(response, for: request)
/// } catch let error as HTTPCachingError where error.code == .storage {
///     logger.warning("not stored on disk", metadata: ["error": "\(error)"])  // memory still holds it
/// }
/// ```
public struct HTTPCachingError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case invalidArgument
            case corruptData
            case unsupportedFormat
            case storage
            case closed
            case wrongKey
            case encryptionMismatch
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// An argument or a configuration value is out of range.
        public static var invalidArgument: Self { Self(.invalidArgument) }
        /// Stored bytes do not decode as a cached response or a variant index.
        public static var corruptData: Self { Self(.corruptData) }
        /// Stored bytes were written in a format this version does not read.
        public static var unsupportedFormat: Self { Self(.unsupportedFormat) }
        /// A storage tier failed (opening, writing, removing); ``HTTPCachingError/underlying`` is
        /// its error.
        public static var storage: Self { Self(.storage) }
        /// The cache is closed (``ResponseCache/close()``): nothing is read or stored until
        /// ``ResponseCache/reopen(encryption:)``.
        public static var closed: Self { Self(.closed) }
        /// No key given opens the encrypted disk directory (a wrong key, or a lost one): opening
        /// or reopening failed and the directory is as it was. ``HTTPCachingError/underlying`` is
        /// the disk tier's `CacheError`.
        public static var wrongKey: Self { Self(.wrongKey) }
        /// A key is missing or extra: the directory is encrypted and no key was given, or it is
        /// plain and a key was given. Opening failed and the directory is as it was (reset it to
        /// start again with or without a key).
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
            return "HTTPCachingError(\(code)): \(message) (\(underlying))"
        }
        return "HTTPCachingError(\(code)): \(message)"
    }

    /// Runs `body`, turning a storage tier's error into ``Code/storage``.
    static func storage<T>(_ what: String, _ body: () async throws -> T) async throws(HTTPCachingError) -> T {
        do {
            return try await body()
        } catch let error as HTTPCachingError {
            throw error
        } catch let error as CacheError where error.code == .closed {
            throw HTTPCachingError(code: .closed, message: "\(what): the cache is closed", underlying: error)
        } catch let error as CacheError where keyCode(of: error) != nil {
            throw HTTPCachingError(code: keyCode(of: error)!, message: "\(what): \(error.message)", underlying: error)
        } catch {
            throw HTTPCachingError(code: .storage, message: what, underlying: error)
        }
    }

    /// This layer's code for a disk tier's key error (`wrongKey`, `encryptionMismatch`); nil for
    /// any other error.
    static func keyCode(of error: CacheError) -> Code? {
        switch error.code {
        case .wrongKey: .wrongKey
        case .encryptionMismatch: .encryptionMismatch
        default: nil
        }
    }
}
