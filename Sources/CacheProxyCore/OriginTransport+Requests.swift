// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPTypes
import NIOHTTP1
import NIOTransportSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a request becomes on the wire, where it goes, and what its failures are called.
extension OriginTransport {
    /// The HTTP/1.1 head of `request`: `Host` first, then its fields, then the body's length.
    static func head(for request: HTTPRequest, authority: String, bodyCount: Int?) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count + 2)
        headers.add(name: "Host", value: authority)
        for field in request.headerFields where field.name != .transferEncoding && field.name != .contentLength {
            headers.add(name: field.name.rawName, value: field.value)
        }
        if let bodyCount { headers.add(name: "Content-Length", value: String(bodyCount)) }
        return HTTPRequestHead(
            version: .http1_1,
            method: HTTPMethod(rawValue: request.method.rawValue),
            uri: request.path ?? "/",
            headers: headers
        )
    }

    /// The host and port of `authority` (`host`, `host:port`, `[v6]` or `[v6]:port`; port 80 by
    /// default), or nil when it is none of these.
    static func hostAndPort(_ authority: String, defaultPort: Int = 80) -> (host: String, port: Int)? {
        var host = Substring(authority)
        var port = defaultPort
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let number = Int(rest.dropFirst()) else { return nil }
                port = number
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard let number = Int(host[host.index(after: colon)...]) else { return nil }
            port = number
            host = host[..<colon]
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        return (String(host), port)
    }

    /// Methods a request may be sent again with when its connection closed before any answer
    /// (RFC 9110 §9.2.2).
    static func isIdempotent(_ method: HTTPRequest.Method) -> Bool {
        switch method {
        case .get, .head, .options, .trace, .put, .delete: true
        default: false
        }
    }

    /// The transport's classification of a SwiftNIO or exchange error.
    static func classify(_ error: any Error) -> any Error {
        if let early = error as? OriginConnectionHandler.FailedBeforeAnswer { return classify(early.cause) }
        if error is CancellationError || error is CachingClientError { return error }
        if let failure = error as? OriginConnectionHandler.Failure, case .tooLarge(let limit) = failure {
            return CachingClientError(
                code: .network,
                message: "the response body is larger than \(limit) bytes",
                underlying: error
            )
        }
        if let failure = error as? OriginConnectionHandler.Failure, case .overBudget(let limit) = failure {
            return CachingClientError(
                code: .overloaded,
                message: "the answers in flight hold \(limit) bytes, the transport's budget",
                underlying: error
            )
        }
        if let failure = CachingClientError.connectionFailure(error) { return failure }
        return CachingClientError(code: .network, message: "the exchange failed", underlying: error)
    }

    /// Whether `host` is an IPv4 or IPv6 address rather than a name.
    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
#endif
