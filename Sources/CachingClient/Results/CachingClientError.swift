// SPDX-License-Identifier: Apache-2.0

public import HTTPTypes

/// Why a fetch through ``CachingHTTPClient`` did not get a good answer from the network (or from
/// the app's decode step), with the underlying cause.
public struct CachingClientError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure: what an app branches on.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case authentication, noConnection, timeout, network, server, parse, notCached, backingOff, cancelled
            case closed, storage, notValidated, invalidArgument, overloaded
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The origin refused the credentials: a 401 (Unauthorized) or 403 (Forbidden) response.
        public static var authentication: Self { Self(.authentication) }
        /// No connection could be made: refused, DNS failure, host or network unreachable, or the
        /// handshake reset before a byte of the request was sent.
        public static var noConnection: Self { Self(.noConnection) }
        /// The exchange took longer than allowed.
        public static var timeout: Self { Self(.timeout) }
        /// Any other transport failure, for example a connection dropped mid-response.
        public static var network: Self { Self(.network) }
        /// The origin answered with a status other than 2xx, 304, 401 or 403.
        public static var server: Self { Self(.server) }
        /// The app's decode step failed on the body.
        public static var parse: Self { Self(.parse) }
        /// The policy forbids the network (cache-only) and nothing usable is cached.
        public static var notCached: Self { Self(.notCached) }
        /// The key is backing off after failures, so the network was not tried; ``underlying``
        /// holds the last failure.
        public static var backingOff: Self { Self(.backingOff) }
        /// The calling task was cancelled.
        public static var cancelled: Self { Self(.cancelled) }
        /// The cache is closed: a cache-only request fails with it; a request that went to the
        /// network carries it as ``FetchResult/cacheError`` (nothing was read or stored).
        public static var closed: Self { Self(.closed) }
        /// The answer could not be stored (a full disk, a failing tier): as
        /// ``FetchResult/cacheError``, beside a good answer.
        public static var storage: Self { Self(.storage) }
        /// The answer's ``FreshnessClass/validationWindow`` has passed and the origin could not
        /// confirm it: the stored answer is there to show, not to act on.
        public static var notValidated: Self { Self(.notValidated) }
        /// An argument is out of range.
        public static var invalidArgument: Self { Self(.invalidArgument) }
        /// The transport refused or cut the exchange to stay within its memory budget for answers
        /// in flight (not the origin's fault: the key does not back off).
        public static var overloaded: Self { Self(.overloaded) }

        public var description: String { String(describing: base) }
    }

    /// The kind of failure.
    public var code: Code
    /// What happened, in words.
    public var message: String
    /// The origin's response, for ``Code/authentication`` and ``Code/server``.
    public var response: HTTPResponse?
    /// The error that caused this one, if any.
    public var underlying: (any Error)?

    /// Creates an error.
    public init(code: Code, message: String, response: HTTPResponse? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.response = response
        self.underlying = underlying
    }

    public var description: String {
        var text = "CachingClientError(\(code)): \(message)"
        if let response { text += " [\(response.status.code)]" }
        if let underlying { text += " (\(underlying))" }
        return text
    }

    /// The classification of a response status: nil for success (2xx, 304), else an error.
    static func classify(_ response: HTTPResponse) -> CachingClientError? {
        let code = response.status.code
        if (200..<300).contains(code) || code == 304 { return nil }
        if code == 401 || code == 403 {
            return CachingClientError(
                code: .authentication,
                message: "the origin refused the credentials",
                response: response
            )
        }
        return CachingClientError(code: .server, message: "the origin answered \(code)", response: response)
    }

    /// The classification of an error a transport threw.
    static func classify(_ error: any Error) -> CachingClientError {
        if let error = error as? CachingClientError { return error }
        if error is CancellationError {
            return CachingClientError(code: .cancelled, message: "the request was cancelled", underlying: error)
        }
        return CachingClientError(code: .network, message: "the transport failed", underlying: error)
    }
}
