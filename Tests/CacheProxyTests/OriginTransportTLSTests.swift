// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import CachingClient
import Foundation
import HTTPTypes
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// The proxy's own client to `https://` origins (issue 35, its third part): a real TLS origin
/// with a certificate the test makes, verified by name or address, its connection kept, its
/// interim answers passed on through the proxy — as over plain HTTP.
@Suite struct OriginTransportTLSTests {
    /// A TLS origin with a certificate for `names`, and the transport trusting that certificate.
    static func start(
        names: String = "DNS:localhost,IP:127.0.0.1",
        in directory: TemporaryDirectory
    ) async throws -> (TestOrigin, OriginTransport.Configuration) {
        let certificate = directory.path + "/origin.pem"
        let key = directory.path + "/origin.key"
        try await makeSelfSignedCertificate(certificatePath: certificate, keyPath: key, names: names)
        let origin = try await TestOrigin.start(tls: .init(certificatePath: certificate, keyPath: key))
        return (origin, OriginTransport.Configuration(certificateAuthorityPath: certificate))
    }

    static func get(_ host: String, _ origin: TestOrigin, _ path: String) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "https", authority: "\(host):\(origin.port)", path: path)
    }

    @Test(arguments: ["127.0.0.1", "localhost"])
    func anHTTPSOriginIsVerifiedAndItsConnectionKept(host: String) async throws {
        let directory = TemporaryDirectory("origin-tls")
        defer { directory.remove() }
        let (origin, configuration) = try await Self.start(in: directory)
        origin.setDefault(.ok("secure", headers: [("Cache-Control", "max-age=60")]), for: "/a")
        let transport = OriginTransport(configuration: configuration)
        for _ in 0..<3 {
            let answer = try await transport.send(Self.get(host, origin, "/a"), body: nil, timeout: .seconds(30))
            #expect(answer.response.status == .ok && String(decoding: answer.body, as: UTF8.self) == "secure")
        }
        #expect(origin.requestCount == 3 && origin.connectionCount == 1)
        await transport.shutdown()
        await origin.stop()
    }

    @Test func aCertificateThatDoesNotVerifyFailsWithNetworkAndSendsNothing() async throws {
        let directory = TemporaryDirectory("origin-tls")
        defer { directory.remove() }
        // Trusted, but for another name: neither 127.0.0.1 nor localhost matches it.
        let (origin, configuration) = try await Self.start(names: "DNS:other.example", in: directory)
        origin.setDefault(.ok("secure"), for: "/a")
        let trusting = OriginTransport(configuration: configuration)
        // The system's trust store: a self-signed certificate is not in it.
        let system = OriginTransport()
        for (transport, host) in [(trusting, "127.0.0.1"), (trusting, "localhost"), (system, "127.0.0.1")] {
            let error = await #expect(throws: CachingClientError.self) {
                try await transport.send(Self.get(host, origin, "/a"), body: nil, timeout: .seconds(30))
            }
            #expect(error?.code == .network)
        }
        #expect(origin.requestCount == 0)
        await trusting.shutdown()
        await system.shutdown()
        await origin.stop()
    }

    @Test func plainAndTLSConnectionsToOneAuthorityAreKeptApart() async throws {
        let directory = TemporaryDirectory("origin-tls")
        defer { directory.remove() }
        let (origin, configuration) = try await Self.start(in: directory)
        origin.setDefault(.ok("secure"), for: "/a")
        let transport = OriginTransport(configuration: configuration)
        _ = try await transport.send(Self.get("127.0.0.1", origin, "/a"), body: nil, timeout: .seconds(30))
        // The kept TLS connection must not carry a plain request (nor the reverse).
        var plain = Self.get("127.0.0.1", origin, "/a")
        plain.scheme = "http"
        await #expect(throws: CachingClientError.self) {
            try await transport.send(plain, body: nil, timeout: .seconds(5))
        }
        let again = try await transport.send(Self.get("127.0.0.1", origin, "/a"), body: nil, timeout: .seconds(30))
        #expect(String(decoding: again.body, as: UTF8.self) == "secure")
        await transport.shutdown()
        await origin.stop()
    }

    @Test func theProxyPassesAnHTTPSOriginsEarlyHintOnAndCachesItsAnswer() async throws {
        let directory = TemporaryDirectory("origin-tls")
        defer { directory.remove() }
        let (origin, configuration) = try await Self.start(in: directory)
        origin.setDefault(
            .interim(
                status: 103,
                headers: [("Link", "</s.css>; rel=preload")],
                then: .ok("fine", headers: [("Cache-Control", "max-age=60")])
            ),
            for: "/h"
        )
        let f = try await ProxyFixture.start(origin: origin, originTransport: configuration)
        let request = "GET /h HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        let miss = await RawConnection.exchange(port: f.port, request)
        let parts = miss.text.components(separatedBy: "\r\n\r\n")
        #expect(parts.count == 3 && parts[0].lowercased().hasPrefix("http/1.1 103"), "got: \(miss.text)")
        #expect(parts.last == "fine" && miss.text.contains("X-Cache: MISS"))
        let hit = await RawConnection.exchange(port: f.port, request)
        #expect(hit.text.contains("X-Cache: HIT") && hit.text.hasSuffix("fine") && !hit.text.contains("103"))
        #expect(origin.requestCount == 1)
        try await f.stop()
    }
}
#endif
