// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import Foundation
import NIOCore
import NIOSSL
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// TLS on the listener (issue 35, first part) over real connections: a real origin, the proxy
/// with a certificate the test makes with `openssl`, and a swift-nio-ssl client that reports the
/// certificate it was shown.
@Suite struct CacheProxyTLSTests {
    static let fresh: [(String, String)] = [("Cache-Control", "max-age=60")]

    /// A proxy whose listener speaks TLS with `certificate`, configured further by `configure`.
    static func start(
        _ certificate: TestCertificate,
        configure: (inout CacheProxy.Configuration) -> Void = { _ in }
    ) async throws -> ProxyFixture {
        try await ProxyFixture.start { configuration in
            configuration.tls = .init(
                certificateChainPath: certificate.certificatePath,
                privateKeyPath: certificate.keyPath
            )
            configure(&configuration)
        }
    }

    @Test func missesAndHitsAreAnsweredOverTLSOnOneConnection() async throws {
        let directory = TemporaryDirectory("tls")
        defer { directory.remove() }
        let certificate = try await TestCertificate.make(in: directory.path, serial: 1)
        let f = try await Self.start(certificate)
        f.origin.setDefault(.ok("over tls", headers: Self.fresh), for: "/a")
        let client = try await TLSClient.connect(port: f.port, trusting: [try certificate.certificate()])
        #expect(client.session.serial == 1 && client.session.applicationProtocol == "http/1.1")
        #expect(client.session.version == .tlsv13)
        let miss = try await client.get("/a")
        #expect(miss.status == 200 && miss.body == "over tls" && miss.field("X-Cache") == "MISS")
        // The second is a fresh memory hit: the event loop's encoded answer, written under TLS.
        for _ in 0..<3 {
            let hit = try await client.get("/a")
            #expect(hit.status == 200 && hit.body == "over tls" && hit.field("X-Cache") == "HIT")
        }
        #expect(f.origin.requestCount == 1)
        await client.close()
        try await f.stop()
    }

    @Test func plainHTTPAndTLSBelow1_2AreRefused() async throws {
        let directory = TemporaryDirectory("tls")
        defer { directory.remove() }
        let certificate = try await TestCertificate.make(in: directory.path, serial: 2)
        let f = try await Self.start(certificate)
        f.origin.setDefault(.ok("secret", headers: Self.fresh), for: "/a")
        let plain = await RawConnection.exchange(port: f.port, "GET /a HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(!plain.text.contains("secret") && !plain.text.contains("HTTP/1.1 200"))
        await #expect(throws: (any Error).self) {
            try await TLSClient.connect(
                port: f.port,
                trusting: [try certificate.certificate()],
                maximumVersion: .tlsv11
            )
        }
        let tls12 = try await TLSClient.connect(
            port: f.port,
            trusting: [try certificate.certificate()],
            maximumVersion: .tlsv12
        )
        #expect(tls12.session.version == .tlsv12)
        await tls12.close()
        #expect(f.origin.requestCount == 0)
        try await f.stop()
    }

    @Test func aReloadServesNewConnectionsTheNewCertificateAndKeepsOpenOnes() async throws {
        let directory = TemporaryDirectory("tls")
        defer { directory.remove() }
        let first = try await TestCertificate.make(in: directory.path, serial: 10)
        let trusted = [try first.certificate()]
        let f = try await Self.start(first)
        f.origin.setDefault(.ok("body", headers: Self.fresh), for: "/a")
        let open = try await TLSClient.connect(port: f.port, trusting: trusted)
        #expect(try await open.get("/a").body == "body")

        // The same paths, new files: what an operator's certificate renewal does.
        let second = try await TestCertificate.make(in: directory.path, serial: 11)
        try f.proxy.reloadCertificates()
        let renewed = try await TLSClient.connect(port: f.port, trusting: trusted + [try second.certificate()])
        #expect(renewed.session.serial == 11)
        #expect(try await renewed.get("/a").field("X-Cache") == "HIT")
        // The connection opened before the reload was not dropped, and keeps its certificate.
        #expect(open.session.serial == 10)
        #expect(try await open.get("/a").field("X-Cache") == "HIT")
        // A client that trusts only the old certificate is refused on a new connection.
        await #expect(throws: (any Error).self) { try await TLSClient.connect(port: f.port, trusting: trusted) }
        await open.close()
        await renewed.close()
        try await f.stop()
    }

    @Test func aReloadOfBadFilesFailsClearlyAndKeepsTheCertificate() async throws {
        let directory = TemporaryDirectory("tls")
        defer { directory.remove() }
        let certificate = try await TestCertificate.make(in: directory.path, serial: 20)
        let other = try await TestCertificate.make(in: directory.path, name: "other", serial: 21)
        let f = try await Self.start(certificate)
        f.origin.setDefault(.ok("body", headers: Self.fresh), for: "/a")
        let trusted = [try certificate.certificate()]

        // A key that belongs to another certificate.
        let certificateKey = try Data(contentsOf: URL(fileURLWithPath: certificate.keyPath))
        try Data(contentsOf: URL(fileURLWithPath: other.keyPath)).write(to: URL(fileURLWithPath: certificate.keyPath))
        #expect(Self.reloadFailure(f.proxy)?.code == .invalidCertificate)
        // A chain file that is not PEM, and a missing key file.
        try certificateKey.write(to: URL(fileURLWithPath: certificate.keyPath))
        let chain = try Data(contentsOf: URL(fileURLWithPath: certificate.certificatePath))
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: certificate.certificatePath))
        let notPEM = Self.reloadFailure(f.proxy)
        #expect(notPEM?.code == .invalidCertificate && notPEM?.message.contains(certificate.certificatePath) == true)
        try chain.write(to: URL(fileURLWithPath: certificate.certificatePath))
        try FileManager.default.removeItem(atPath: certificate.keyPath)
        let missing = Self.reloadFailure(f.proxy)
        #expect(missing?.code == .invalidCertificate && missing?.message.contains(certificate.keyPath) == true)

        // Through all of it, new connections got the certificate the proxy started with.
        let client = try await TLSClient.connect(port: f.port, trusting: trusted)
        #expect(client.session.serial == 20)
        #expect(try await client.get("/a").body == "body")
        await client.close()
        try await f.stop()
    }

    @Test func aProxyWithoutItsCertificateDoesNotStart() async throws {
        let directory = TemporaryDirectory("tls")
        defer { directory.remove() }
        let configuration = CacheProxy.Configuration(
            upstream: try Upstream("http://127.0.0.1:9"),
            tls: .init(certificateChainPath: directory.path + "/none.pem", privateKeyPath: directory.path + "/none.key")
        )
        let error = #expect(throws: CacheProxyError.self) {
            try CacheProxy(configuration: configuration, transport: OriginTransport())
        }
        #expect(error?.code == .invalidCertificate)
        let plain = try CacheProxy(
            configuration: .init(upstream: try Upstream("http://127.0.0.1:9")),
            transport: OriginTransport()
        )
        #expect(Self.reloadFailure(plain)?.code == .invalidArgument)
    }

    /// The error a reload throws, nil when it succeeds.
    static func reloadFailure(_ proxy: CacheProxy) -> CacheProxyError? {
        do {
            try proxy.reloadCertificates()
            return nil
        } catch {
            return error
        }
    }
}
#endif
