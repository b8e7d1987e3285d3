// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
public import AsyncHTTPClient
public import CachingClient
public import HTTPTypes
import NIOCore
import NIOTransportSupport
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An `HTTPTransport` over swift-server's AsyncHTTPClient.
///
/// It sends each request with `HTTPClient.execute(_:timeout:)`, collects the body up to
/// ``maximumBodyBytes``, and classifies failures: refused connections and name-resolution
/// failures are `noConnection`, connect / read / write /
/// deadline timeouts are `timeout`, anything else is
/// `network`.
///
/// The `HTTPClient` is the app's: the transport neither starts nor shuts it down. Configure it
/// not to follow redirects if the cache should see them (`redirectConfiguration: .disallow`),
/// and, for offline-first reads, not to retry a refused connection until the deadline
/// (`connectionPool.retryConnectionEstablishment = false`): then an origin that is down answers
/// `noConnection` at once and the stale fallback is
/// immediate.
///
/// AsyncHTTPClient keeps a connection whose answer was followed by more bytes (a second response
/// in the same write, the start of one, body bytes beyond the `Content-Length`) and reads them as
/// the next request's answer: an origin that does so makes one URL's cached answer another's (a
/// response desync). Nothing outside its connection pool can see those bytes, so where origins
/// are not trusted, give each connection one exchange: ``clientConfiguration(maximumConnections:)``
/// does, with the other settings above. cache-proxy does for every `https` upstream; an `http`
/// one goes through its own client, which closes such a connection instead.
public struct HTTPClientTransport: HTTPTransport {
    /// The client requests go through.
    public let client: HTTPClient
    /// The largest body the transport accepts; a larger one is a network error.
    public var maximumBodyBytes: Int
    /// The clock the exchange's deadline waits on, head and body (the head also has the event
    /// loop's). Default `ContinuousClock()`; tests pass a manual one.
    public var clock: any Clock<Duration>

    /// Creates a transport.
    /// - Parameters:
    ///   - client: the HTTP client; default `HTTPClient.shared`.
    ///   - maximumBodyBytes: the largest response body accepted; default 64 MiB.
    ///   - clock: the clock the exchange's deadline waits on; default `ContinuousClock()`.
    public init(
        client: HTTPClient = .shared,
        maximumBodyBytes: Int = 64 << 20,
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.client = client
        self.maximumBodyBytes = maximumBodyBytes
        self.clock = clock
    }

    /// Sends `request` and collects the whole answer within `timeout`: the deadline covers the
    /// head and the body, so an origin that sends its head and then stalls fails with
    /// `timeout` when the time is up (and the connection is
    /// closed), instead of holding the caller — and every caller waiting on the same flight.
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
            let (received, bytes) = try await exchange(outgoing, within: timeout)
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

    /// The head and the whole body within `timeout`, waited on ``clock`` from the start of the
    /// exchange (the head has the event loop's deadline as well); past it the exchange is
    /// cancelled, which closes the connection, and the answer is a timeout.
    private func exchange(
        _ outgoing: HTTPClientRequest,
        within timeout: Duration
    ) async throws -> (HTTPClientResponse, ByteBuffer) {
        let limit = maximumBodyBytes
        let clock = self.clock
        let client = self.client
        return try await withExchangeDeadline(timeout, clock: clock) {
            let received = try await client.execute(outgoing, timeout: TimeAmount(timeout))
            return (received, try await received.body.collect(upTo: limit))
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
        if let failure = CachingClientError.connectionFailure(error) { return failure }
        return CachingClientError(code: .network, message: "the exchange failed", underlying: error)
    }
}

extension HTTPClientTransport {
    /// An `HTTPClient` configuration for a cache in front of origins it does not control: no
    /// redirects followed (the cache sees them), a refused connection not retried (a down origin
    /// fails at once), bodies as the origin sent them, up to `maximumConnections` per host, and
    /// one exchange per connection, so that no byte an origin sends past an answer can be read
    /// as the next request's.
    ///
    /// The last costs a connection per request (a TLS handshake for `https`).
    /// - Parameter maximumConnections: the connections per host; default 8.
    /// - Returns: the configuration, for `HTTPClient(eventLoopGroupProvider:configuration:)`.
    public static func clientConfiguration(maximumConnections: Int = 8) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = maximumConnections
        configuration.decompression = .disabled
        configuration.maximumUsesPerConnection = 1
        return configuration
    }
}

#endif
