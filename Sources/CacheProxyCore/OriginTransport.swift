// SPDX-License-Identifier: Apache-2.0

#if Proxy
public import CachingClient
public import HTTPTypes
public import NIOCore
import NIOHTTP1
import NIOSSL
import NIOTransportSupport
public import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An ``CachingClient/HTTPTransport`` to `http://` and `https://` origins over SwiftNIO's
/// HTTP/1.1 codec that passes interim responses on: the transport cache-proxy sends through.
///
/// AsyncHTTPClient drops every interim (1xx) response but `101`, and a proxy must forward them
/// (RFC 9110 §15.2). This transport hands each one, such as `103 Early Hints`, to the task's
/// ``CachingClient/InterimResponseHandler`` as it arrives, and returns the final response with
/// its whole body.
///
/// - Connections are opened as needed and kept after an answer that allows it, up to
///   ``Configuration/maximumIdleConnections`` per origin. When a kept connection turns out to
///   be closed or reset before any byte of the answer came (the origin closed it while it was
///   idle), the other kept ones are dropped and an idempotent request is sent again on a new
///   connection.
/// - An answer is never read from bytes that came before its request was sent: a connection on
///   which the origin wrote anything past an answer (a second response, the start of one, body
///   bytes past its length), or wrote while it was idle, is closed rather than kept (see
///   `OriginResponseFramer`; docs/cache-proxy.md, "A hostile origin").
/// - What the exchanges hold at once is bounded by ``Configuration/maximumBufferedBytes``, over
///   every connection; an exchange that would take more fails with `overloaded`.
/// - Failures are classified as `HTTPClientTransport` classifies them: a connection refused or
///   not made is `noConnection`; a connect or an exchange past its time is `timeout`; anything
///   else, a body over ``Configuration/maximumBodyBytes`` included, is `network`.
/// - `https` origins are reached over TLS 1.2 or 1.3 (swift-nio-ssl): the certificate is verified
///   against the system's trust store (or ``Configuration/certificateAuthorityPath``) and the
///   origin's host name or IP address, the host name sent as SNI. A certificate that does not
///   verify fails the exchange with `network`. Everything above holds the same over TLS.
///
/// Call ``shutdown()`` when done with it: it closes the kept connections.
public final class OriginTransport: HTTPTransport, StreamingHTTPTransport {
    /// How the transport connects and what it accepts.
    public struct Configuration: Sendable {
        /// The largest response body accepted; a larger one is a network error. Default 64 MiB.
        public var maximumBodyBytes: Int
        /// The most bytes of answers all exchanges may hold at once, over every connection: an
        /// exchange whose body would take more fails with `overloaded` (cache-proxy answers 503)
        /// and gives back what it took. A streamed body kept to be stored counts too: one the
        /// budget cannot keep is passed on and not stored. Default 256 MiB (four bodies of the
        /// largest size).
        public var maximumBufferedBytes: Int
        /// The idle connections kept per origin. Default 64.
        public var maximumIdleConnections: Int
        /// How long making a connection may take, at most; never longer than the exchange's
        /// timeout. Default 10 seconds.
        public var connectTimeout: Duration
        /// The clock the exchange's deadline waits on. Default `ContinuousClock()`; tests pass a
        /// manual one.
        public var clock: any Clock<Duration>
        /// A PEM file of the certificate authorities `https` origins' certificates must chain
        /// to, in place of the system's trust store; nil (the default) for the system's.
        public var certificateAuthorityPath: String?

        /// Creates a configuration.
        public init(
            maximumBodyBytes: Int = 64 << 20,
            maximumBufferedBytes: Int = 256 << 20,
            maximumIdleConnections: Int = 64,
            connectTimeout: Duration = .seconds(10),
            clock: any Clock<Duration> = ContinuousClock(),
            certificateAuthorityPath: String? = nil
        ) {
            self.maximumBodyBytes = maximumBodyBytes
            self.maximumBufferedBytes = maximumBufferedBytes
            self.maximumIdleConnections = maximumIdleConnections
            self.connectTimeout = connectTimeout
            self.clock = clock
            self.certificateAuthorityPath = certificateAuthorityPath
        }
    }

    /// The configuration.
    public let configuration: Configuration
    private let group: any EventLoopGroup
    /// What the exchanges hold at once, against ``Configuration/maximumBufferedBytes``.
    let budget: BufferBudget
    /// The kept connections by scheme and authority, the most recently used last; nil once shut
    /// down.
    private let idle = Mutex<[String: [OriginConnection]]?>([:])
    /// The TLS context of `https` connections, made by the first one (``tlsContext()``).
    let tls = Mutex<NIOSSLContext?>(nil)

    /// Creates a transport.
    /// - Parameters:
    ///   - eventLoopGroup: where its connections run; default NIO's shared group.
    ///   - configuration: limits and the clock.
    public init(
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        configuration: Configuration = .init()
    ) {
        self.group = eventLoopGroup
        self.configuration = configuration
        self.budget = BufferBudget(limit: configuration.maximumBufferedBytes)
    }

    /// Sends `request` and returns the final answer, whole, within `timeout` (head and body);
    /// interim answers go to ``CachingClient/InterimResponseHandler/current`` as they come.
    public func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse {
        let outgoing = try exchange(for: request, body: body, timeout: timeout)
        do {
            return try await withExchangeDeadline(timeout, clock: configuration.clock) {
                try await self.exchange(outgoing)
            }
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Self.classify(error)
        }
    }

    /// Sends `request` and returns the final answer's head once it came, within `timeout`, its
    /// body read as it arrives. A body declared no longer than
    /// `OriginConnectionHandler.streamingThreshold` (256 KiB), or none (a `HEAD`, a 204, a 304),
    /// comes whole with the head, as ``send(_:body:timeout:)`` gives it. A longer one or one of
    /// unknown length streams: no limit on its length, and at most
    /// `OriginBodyStream.highWater` bytes of it (plus one read) held before the connection stops
    /// reading until they are taken. The connection goes back to the kept ones when the body ended.
    ///
    /// `bodyParts` go upstream as they are read, with their declared length or chunked; each part
    /// within `timeout`, and the head within `timeout` of the body's end. Such a request is never
    /// sent again, and its connection is not kept.
    package func stream(
        _ request: HTTPRequest,
        body: [UInt8]?,
        bodyParts: RequestBodySource?,
        timeout: Duration
    ) async throws -> StreamedTransportResponse {
        do {
            guard let bodyParts else {
                let outgoing = try exchange(for: request, body: body, timeout: timeout)
                return try await withExchangeDeadline(timeout, clock: configuration.clock) {
                    try await self.streamingExchange(outgoing)
                }
            }
            // The deadline for the head starts when the body was sent.
            let (sent, bodyEnded) = AsyncStream.makeStream(of: Void.self)
            let clock = configuration.clock
            let parts = RequestBodySource(length: bodyParts.length) {
                let part = try await withExchangeDeadline(timeout, clock: clock) { try await bodyParts.next() }
                if part == nil { bodyEnded.finish() }
                return part
            }
            let outgoing = try exchange(for: request, body: nil, bodyParts: parts, timeout: timeout)
            return try await withThrowingTaskGroup(of: StreamedTransportResponse?.self) { group in
                group.addImmediateTask { try await self.streamingExchange(outgoing) }
                group.addTask {
                    for await _ in sent {}
                    try await clock.sleep(for: timeout)
                    return nil
                }
                defer {
                    bodyEnded.finish()
                    group.cancelAll()
                }
                guard let first = try await group.next(), let answer = first else {
                    throw CachingClientError(code: .timeout, message: "no answer in time after the request's body")
                }
                return answer
            }
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Self.classify(error)
        }
    }

    private func exchange(
        for request: HTTPRequest,
        body: [UInt8]?,
        bodyParts: RequestBodySource? = nil,
        timeout: Duration
    ) throws -> Exchange {
        let scheme = request.scheme?.lowercased()
        let secure = scheme == "https"
        guard secure || scheme == "http", let authority = request.authority,
            let (host, port) = Self.hostAndPort(authority, defaultPort: secure ? 443 : 80)
        else {
            throw CachingClientError(
                code: .network,
                message: "OriginTransport sends to http:// and https://host[:port] only, not \(request.scheme ?? "")://"
                    + (request.authority ?? "")
            )
        }
        var head = Self.head(for: request, authority: authority, bodyCount: body?.count ?? bodyParts?.length)
        if let bodyParts, bodyParts.length == nil { head.headers.add(name: "Transfer-Encoding", value: "chunked") }
        return Exchange(
            head: head,
            body: body.map { ByteBuffer(bytes: $0) },
            bodyParts: bodyParts,
            interim: InterimResponseHandler.current,
            // A body sent as it was read is gone: the request cannot be sent again.
            retries: Self.isIdempotent(request.method) && bodyParts == nil,
            // A connect is not cancelled with its task: it must end within the exchange's time.
            connectTimeout: min(configuration.connectTimeout, timeout),
            // Plain and TLS connections to one authority are kept apart.
            authority: (secure ? "https://" : "http://") + authority,
            host: host,
            port: port,
            tls: secure ? try tlsContext() : nil
        )
    }

    /// Closes the kept connections; a request sent later gets a connection of its own, closed
    /// after its answer.
    public func shutdown() async {
        let kept = idle.withLock { idle in
            defer { idle = nil }
            return idle.map { Array($0.values.joined()) } ?? []
        }
        for connection in kept { try? await connection.channel.close() }
    }

    private struct Exchange: Sendable {
        let head: HTTPRequestHead
        let body: ByteBuffer?
        let bodyParts: RequestBodySource?
        let interim: InterimResponseHandler?
        let retries: Bool
        let connectTimeout: Duration
        /// The scheme and authority: the key of the kept connections.
        let authority: String
        let host: String
        let port: Int
        /// The TLS context of an `https` exchange, nil for `http`.
        let tls: NIOSSLContext?
    }

    private func exchange(_ outgoing: Exchange) async throws -> HTTPTransportResponse {
        let received = try await received(outgoing, streaming: false)
        return HTTPTransportResponse(response: OriginConnectionHandler.response(received.head), body: received.body)
    }

    private func streamingExchange(_ outgoing: Exchange) async throws -> StreamedTransportResponse {
        let received = try await received(outgoing, streaming: true)
        guard let stream = received.stream else {
            return StreamedTransportResponse(
                response: OriginConnectionHandler.response(received.head),
                body: ResponseBodySource(whole: received.body),
                whole: received.body
            )
        }
        // What is kept of it to store it counts against the budget for answers held at once.
        return StreamedTransportResponse(
            response: OriginConnectionHandler.response(received.head),
            body: ResponseBodySource(next: { try await stream.next() }, cancel: { stream.cancel() }),
            budget: RetentionBudget(take: { [budget] in budget.take($0) }, give: { [budget] in budget.give($0) })
        )
    }

    /// The answer to `outgoing` on a kept connection or a new one: whole, or with `streaming`
    /// from its head on (the connection is then released when the body ended).
    private func received(_ outgoing: Exchange, streaming: Bool) async throws -> OriginConnectionHandler.Received {
        var kept = takeIdle(outgoing.authority)
        while true {
            let connection: OriginConnection
            if let kept {
                connection = kept
            } else {
                connection = try await connect(outgoing)
            }
            let received: OriginConnectionHandler.Received
            do {
                var release: (@Sendable (Bool) -> Void)?
                if streaming {
                    let authority = outgoing.authority
                    release = { [self] reusable in self.release(connection, keepAlive: reusable, authority: authority) }
                }
                received = try await connection.exchange(
                    outgoing.head,
                    body: outgoing.body,
                    bodyParts: outgoing.bodyParts,
                    interim: outgoing.interim,
                    limit: configuration.maximumBodyBytes,
                    streaming: release
                )
            } catch is OriginConnectionHandler.FailedBeforeAnswer where kept != nil && outgoing.retries {
                // The origin closed or reset it while it was kept: so, likely, the others kept with it.
                connection.close()
                dropIdle(outgoing.authority)
                kept = nil
                continue
            } catch {
                connection.close()
                throw error
            }
            if received.stream == nil {
                release(connection, keepAlive: received.reusable, authority: outgoing.authority)
            }
            return received
        }
    }

    private func connect(_ outgoing: Exchange) async throws -> OriginConnection {
        // SNI and the name checked are the host's; an IP address is checked as one, and sent as
        // no SNI (RFC 6066 §3).
        let serverName = outgoing.tls == nil || Self.isIPAddress(outgoing.host) ? nil : outgoing.host
        // On the caller's event loop when it runs on one of the group's (a listener connection's
        // task does): the exchange's reads then resume it without waking another thread.
        let loop = MultiThreadedEventLoopGroup.currentEventLoop.flatMap { current in
            group.makeIterator().contains { $0 === current } ? current : nil
        }
        return try await ClientBootstrap(group: loop ?? group)
            .connectTimeout(.nanoseconds(Int64(outgoing.connectTimeout / .nanoseconds(1))))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: outgoing.host, port: outgoing.port) { [budget] channel in
                guard let context = outgoing.tls else { return OriginConnection.setUp(channel, budget: budget) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: context, serverHostname: serverName)
                    )
                }.flatMap { OriginConnection.setUp(channel, budget: budget) }
            }
    }

    private func takeIdle(_ authority: String) -> OriginConnection? {
        let current = MultiThreadedEventLoopGroup.currentEventLoop
        return idle.withLock { idle in
            // One on the caller's event loop first, newest first.
            if let current, let kept = idle?[authority],
                let index = kept.lastIndex(where: { $0.channel.eventLoop === current && $0.channel.isActive })
            {
                return idle![authority]!.remove(at: index)
            }
            while let connection = idle?[authority]?.popLast() {
                if connection.channel.isActive { return connection }
            }
            return nil
        }
    }

    private func dropIdle(_ authority: String) {
        let dropped = idle.withLock { idle in idle?.removeValue(forKey: authority) ?? [] }
        for connection in dropped { connection.close() }
    }

    private func release(_ connection: OriginConnection, keepAlive: Bool, authority: String) {
        let limit = configuration.maximumIdleConnections
        let kept =
            keepAlive && connection.channel.isActive
            && idle.withLock { idle in
                guard idle != nil, idle![authority, default: []].count < limit else { return false }
                idle![authority, default: []].append(connection)
                return true
            }
        if !kept { connection.close() }
    }
}
#endif
