// SPDX-License-Identifier: Apache-2.0

public import AsyncHTTPClient
public import CachingClient
public import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An ``CachingClient/HTTPTransport`` over swift-server's AsyncHTTPClient.
///
/// It sends each request with `HTTPClient.execute(_:timeout:)`, collects the body up to
/// ``maximumBodyBytes``, and classifies failures: refused connections and name-resolution
/// failures are ``CachingClient/CachingClientError/Code/noConnection``, connect / read / write /
/// deadline timeouts are ``CachingClient/CachingClientError/Code/timeout``, anything else is
/// ``CachingClient/CachingClientError/Code/network``.
///
/// The `HTTPClient` is the app's: the transport neither starts nor shuts it down. Configure it
/// not to follow redirects if the cache should see them (`redirectConfiguration: .disallow`),
/// and, for offline-first reads, not to retry a refused connection until the deadline
/// (`connectionPool.retryConnectionEstablishment = false`): then an origin that is down answers
/// ``CachingClient/CachingClientError/Code/noConnection`` at once and the stale fallback is
/// immediate.
public struct HTTPClientTransport: HTTPTransport {
    /// The client requests go through.
    public let client: HTTPClient
    /// The largest body the transport accepts; a larger one is a network error.
    public var maximumBodyBytes: Int

    /// Creates a transport.
    /// - Parameters:
    ///   - client: the HTTP client; default `HTTPClient.shared`.
    ///   - maximumBodyBytes: the largest response body accepted; default 64 MiB.
    public init(client: HTTPClient = .shared, maximumBodyBytes: Int = 64 << 20) {
        self.client = client
        self.maximumBodyBytes = maximumBodyBytes
    }

    public func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse {
        guard let scheme = request.scheme, let authority = request.authority else {
            throw CachingClientError(code: .network, message: "the request has no absolute URL")
        }
        var outgoing = HTTPClientRequest(url: "\(scheme)://\(authority)\(request.path ?? "/")")
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headerFields {
            outgoing.headers.add(name: field.name.rawName, value: field.value)
        }
        if let body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        do {
            let received = try await client.execute(outgoing, timeout: TimeAmount(timeout))
            let bytes = try await received.body.collect(upTo: maximumBodyBytes)
            var fields = HTTPFields()
            for header in received.headers {
                guard let name = HTTPField.Name(header.name) else { continue }
                fields.append(HTTPField(name: name, value: header.value))
            }
            let status = HTTPResponse.Status(
                code: Int(received.status.code),
                reasonPhrase: received.status.reasonPhrase
            )
            return HTTPTransportResponse(
                response: HTTPResponse(status: status, headerFields: fields),
                body: Array(bytes.readableBytesView)
            )
        } catch {
            throw Self.classify(error)
        }
    }

    /// The transport's classification of an AsyncHTTPClient or SwiftNIO error.
    static func classify(_ error: any Error) -> any Error {
        if error is CancellationError || error is CachingClientError { return error }
        if let error = error as? HTTPClientError {
            switch error {
            case .cancelled:
                return CancellationError()
            case .connectTimeout, .readTimeout, .writeTimeout, .deadlineExceeded, .getConnectionFromPoolTimeout,
                .tlsHandshakeTimeout:
                return CachingClientError(code: .timeout, message: "the exchange timed out", underlying: error)
            default:
                return CachingClientError(code: .network, message: "the exchange failed", underlying: error)
            }
        }
        if error is NIOConnectionError || error is SocketAddressError {
            return CachingClientError(code: .noConnection, message: "could not connect", underlying: error)
        }
        if case .connectTimeout? = error as? ChannelError {
            return CachingClientError(code: .timeout, message: "connecting timed out", underlying: error)
        }
        if let error = error as? IOError,
            [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL].contains(error.errnoCode)
                || Self.failedWhileConnecting(error)
        {
            return CachingClientError(code: .noConnection, message: "could not connect", underlying: error)
        }
        return CachingClientError(code: .network, message: "the exchange failed", underlying: error)
    }
}

extension HTTPClientTransport {
    /// Whether SwiftNIO raised `error` while connecting: before a byte of the request was sent, so
    /// whatever the errno (a reset handshake, say), no connection was made.
    fileprivate static func failedWhileConnecting(_ error: IOError) -> Bool {
        let description = error.description
        return description.hasPrefix("connect(") || description.hasPrefix("finishing a non-blocking connect")
    }
}

extension TimeAmount {
    fileprivate init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
