// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
package import CachingClient
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension CachingClientError {
    /// SwiftNIO's errors of a connection that was never made, or that timed out while connecting,
    /// as the client's codes; nil for any other error (the transport classifies the rest). Both
    /// transports (AsyncHTTPClient's and cache-proxy's own) read NIO's errors through this one.
    package static func connectionFailure(_ error: any Error) -> CachingClientError? {
        if error is NIOConnectionError || error is SocketAddressError {
            return CachingClientError(code: .noConnection, message: "could not connect", underlying: error)
        }
        if case .connectTimeout? = error as? ChannelError {
            return CachingClientError(code: .timeout, message: "connecting timed out", underlying: error)
        }
        if let error = error as? IOError,
            [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL].contains(error.errnoCode)
                || failedWhileConnecting(error)
        {
            return CachingClientError(code: .noConnection, message: "could not connect", underlying: error)
        }
        return nil
    }

    /// Whether SwiftNIO raised `error` while connecting: before a byte of the request was sent, so
    /// whatever the errno (a reset handshake, say), no connection was made.
    private static func failedWhileConnecting(_ error: IOError) -> Bool {
        let description = error.description
        return description.hasPrefix("connect(") || description.hasPrefix("finishing a non-blocking connect")
    }
}
#endif
