// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A programmable HTTP/1.1 origin on 127.0.0.1 for tests: it counts requests and answers each
/// as it is told — a status with headers and a body, a 304, a held answer released by a
/// ``Gate``, a dropped connection — and it can be stopped (connections are then refused).
public final class TestOrigin: Sendable {
    /// A request the origin received.
    public struct Request: Sendable {
        public var method: String
        public var uri: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        /// The first value of the header `name` (case-insensitive).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// How the origin answers one request.
    public indirect enum Behavior: Sendable {
        /// Answers with `status`, `headers` and `body` (a `Content-Length` is added when missing).
        case respond(status: Int, headers: [(String, String)] = [], body: [UInt8] = [])
        /// Waits until `gate` opens, then behaves as `then`.
        case hold(Gate, then: Behavior)
        /// Closes the connection without answering.
        case dropConnection
        /// Sends the head (with `Content-Length: declaredLength`) and `firstBytes` of the body,
        /// then stalls: the rest never comes, until the client or ``TestOrigin/stop()`` closes.
        case stallBody(status: Int = 200, headers: [(String, String)] = [], firstBytes: [UInt8], declaredLength: Int)

        /// Sends an interim (1xx) response with `status` and `headers`, then behaves as `then`.
        case interim(status: Int, headers: [(String, String)] = [], then: Behavior)

        /// A file server's answers: a `GET` with one `Range: bytes=first-last` (or `first-`) within
        /// `body` gets a `206` of those bytes with `Content-Range`, anything else the whole `200`;
        /// both with `headers`.
        case servesRanges(headers: [(String, String)] = [], body: [UInt8])

        /// A 200 with `body` (UTF-8) and `headers`.
        public static func ok(_ body: String, headers: [(String, String)] = []) -> Behavior {
            .respond(status: 200, headers: headers, body: Array(body.utf8))
        }
    }

    /// A latch that held answers wait on.
    public final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiters: [EventLoopPromise<Void>])>((false, []))
        public init() {}

        /// Releases every answer held on this gate, and those that come later.
        public func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.succeed() }
        }

        func wait(on loop: any EventLoop) -> EventLoopFuture<Void> {
            let promise = loop.makePromise(of: Void.self)
            let isOpen = state.withLock { state in
                if !state.open { state.waiters.append(promise) }
                return state.open
            }
            if isOpen { promise.succeed() }
            return promise.futureResult
        }
    }

    struct State {
        var scripts: [String: [Behavior]] = [:]
        var defaults: [String: Behavior] = [:]
        var fallback: Behavior?
        var received: [Request] = []
        var children: [ObjectIdentifier: any Channel] = [:]
        var accepted = 0
    }
    let state = Mutex(State())
    /// The requests received, for ``waitForRequests(_:)``.
    private let receivedCount = Tally()
    /// The request body bytes received so far, over every request, counted as they arrive.
    let bodyBytes = Tally()
    private let channel: Mutex<(any Channel)?>
    /// The listening socket (owned by the server channel, which closes it).
    private let listener: Int32
    /// A socket bound to ``port`` without listening, once the origin stops.
    private let reservation = Mutex<Int32>(-1)
    /// The port the origin listens on.
    public let port: Int

    /// Whether connections stay open after an answer.
    public let keepAlive: Bool
    /// Whether the origin speaks TLS.
    public let isTLS: Bool

    private init(channel: any Channel, listener: Int32, port: Int, keepAlive: Bool, isTLS: Bool) {
        self.channel = Mutex(channel)
        self.listener = listener
        self.port = port
        self.keepAlive = keepAlive
        self.isTLS = isTLS
    }

    /// TLS for an origin: a PEM certificate chain and its key.
    public struct TLSFiles: Sendable {
        public var certificatePath: String
        public var keyPath: String

        public init(certificatePath: String, keyPath: String) {
            self.certificatePath = certificatePath
            self.keyPath = keyPath
        }
    }

    /// Starts an origin on 127.0.0.1 on a free port.
    /// - Parameter keepAlive: whether connections stay open after an answer; false answers with
    ///   `Connection: close`, so that a client never reuses a connection the origin later drops
    ///   (a stopped origin then refuses every new request).
    /// - Parameter tls: the certificate and key to speak TLS with (1.2 or 1.3); nil: plain HTTP.
    public static func start(keepAlive: Bool = true, tls: TLSFiles? = nil) async throws -> TestOrigin {
        let context = try tls.map { files in
            try NIOSSLContext(
                configuration: .makeServerConfiguration(
                    certificateChain: try NIOSSLCertificate.fromPEMFile(files.certificatePath).map { .certificate($0) },
                    privateKey: .privateKey(try NIOSSLPrivateKey(file: files.keyPath, format: .pem))
                )
            )
        }
        let box = Mutex<TestOrigin?>(nil)
        let listener = try Socket.makeListener()
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { channel in
                    guard let origin = box.withLock({ $0 }) else { return channel.close() }
                    origin.state.withLock { state in
                        state.children[ObjectIdentifier(channel)] = channel
                        state.accepted += 1
                    }
                    channel.closeFuture.whenComplete { _ in
                        _ = origin.state.withLock { $0.children.removeValue(forKey: ObjectIdentifier(channel)) }
                    }
                    return channel.eventLoop.makeCompletedFuture {
                        if let context {
                            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                        }
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(OriginHandler(origin: origin))
                    }
                }
                .withBoundSocket(listener)
                .get()
        } catch {
            close(listener)
            throw error
        }
        let origin = TestOrigin(
            channel: channel,
            listener: listener,
            port: channel.localAddress?.port ?? 0,
            keepAlive: keepAlive,
            isTLS: tls != nil
        )
        box.withLock { $0 = origin }
        return origin
    }

    /// `http://127.0.0.1:PORT`, or `https://` for an origin that speaks TLS.
    public var baseURL: String { "\(isTLS ? "https" : "http")://127.0.0.1:\(port)" }
    /// `127.0.0.1:PORT`.
    public var authority: String { "127.0.0.1:\(port)" }

    /// Answers the next request for `path` (path and query) with `behavior`; several calls queue
    /// answers in order.
    public func enqueue(_ behavior: Behavior, for path: String) {
        state.withLock { $0.scripts[path, default: []].append(behavior) }
    }

    /// Answers requests for `path` with `behavior` when nothing is queued for it.
    public func setDefault(_ behavior: Behavior, for path: String) {
        state.withLock { $0.defaults[path] = behavior }
    }

    /// Answers requests for any path that has nothing queued and no default with `behavior`
    /// (instead of a 404).
    public func setFallback(_ behavior: Behavior) {
        state.withLock { $0.fallback = behavior }
    }

    /// Every request received so far, in order.
    public var requests: [Request] { state.withLock { $0.received } }
    /// How many requests were received.
    public var requestCount: Int { state.withLock { $0.received.count } }

    /// How many connections the origin has accepted.
    public var connectionCount: Int { state.withLock { $0.accepted } }

    /// Closes every open connection and goes on listening: a client that kept one finds it closed.
    public func dropConnections() async {
        let children = state.withLock { Array($0.children.values) }
        for child in children { try? await child.close() }
    }

    /// Returns once at least `count` bytes of request bodies have arrived (before their requests
    /// ended, for a body sent in parts).
    public func waitForBodyBytes(_ count: Int) async {
        await bodyBytes.wait(for: count)
    }

    /// Returns once at least `count` requests have been received.
    public func waitForRequests(_ count: Int) async {
        await receivedCount.wait(for: count)
    }

    /// Stops listening and closes every open connection: later requests are refused.
    public func stop() async {
        let server = channel.withLock { channel in
            defer { channel = nil }
            return channel
        }
        guard let server else { return }
        // The port is held before the listener goes, so it is never free: were it free for a
        // moment, the kernel could hand it to another test's connection as its local port, or a
        // later origin could listen on it and answer in this one's place.
        // Should that fail (no descriptor left, say), the origin still stops, without the hold:
        // a trap here would end every test of the run.
        let reserved = Socket.open(port: port, listening: false)
        reservation.withLock { $0 = reserved }
        // `shutdown` stops the listening socket itself; `close` would only drop this process's
        // descriptor, and a child process spawned meanwhile (an exit test re-runs this binary)
        // holds a copy until it execs, so the socket would go on accepting connections.
        _ = shutdown(listener, Int32(SHUT_RDWR))
        try? await server.close()
        let children = state.withLock { Array($0.children.values) }
        for child in children { try? await child.close() }
    }

    deinit {
        let descriptor = reservation.withLock { $0 }
        if descriptor >= 0 { close(descriptor) }
    }

    /// Records `request` and returns how to answer it (404 when nothing was set for its path).
    func behavior(for request: Request) -> Behavior {
        let behavior = state.withLock { state in
            state.received.append(request)
            let behavior: Behavior
            if var queue = state.scripts[request.uri], !queue.isEmpty {
                behavior = queue.removeFirst()
                state.scripts[request.uri] = queue
            } else {
                behavior =
                    state.defaults[request.uri] ?? state.fallback
                    ?? .respond(status: 404, body: Array("no script".utf8))
            }
            return behavior
        }
        receivedCount.increment()
        if case .servesRanges(let headers, let body) = behavior {
            return Self.ranged(request, headers: headers, body: body)
        }
        return behavior
    }

    /// ``Behavior/servesRanges(headers:body:)``'s answer to `request`.
    private static func ranged(_ request: Request, headers: [(String, String)], body: [UInt8]) -> Behavior {
        guard request.method == "GET", let range = request.header("Range"), range.hasPrefix("bytes="),
            !range.contains(",")
        else { return .respond(status: 200, headers: headers, body: body) }
        let bounds = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int(bounds[0]), first < body.count else {
            return .respond(status: 200, headers: headers, body: body)
        }
        let last = min(Int(bounds[1]) ?? (body.count - 1), body.count - 1)
        guard last >= first else { return .respond(status: 200, headers: headers, body: body) }
        return .respond(
            status: 206,
            headers: headers + [("Content-Range", "bytes \(first)-\(last)/\(body.count)")],
            body: Array(body[first...last])
        )
    }
}
#endif
