// SPDX-License-Identifier: Apache-2.0

#if Proxy
/// Why a ``CacheProxy`` could not be configured or started.
public struct CacheProxyError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case invalidUpstream, invalidListenAddress, invalidArgument, invalidCertificate
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The upstream is not an absolute `http://` or `https://` URL with a host.
        public static var invalidUpstream: Self { Self(.invalidUpstream) }
        /// The listen address is not `HOST:PORT` with a port from 0 to 65535.
        public static var invalidListenAddress: Self { Self(.invalidListenAddress) }
        /// Another setting is out of range (a negative capacity, for example).
        public static var invalidArgument: Self { Self(.invalidArgument) }
        /// The listener's certificate chain or private key cannot be read, does not parse, or the
        /// two do not belong together.
        public static var invalidCertificate: Self { Self(.invalidCertificate) }

        public var description: String { String(describing: base) }
    }

    /// The kind of failure.
    public var code: Code
    /// What was wrong, in words.
    public var message: String

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "CacheProxyError(\(code)): \(message)" }
}
#endif
