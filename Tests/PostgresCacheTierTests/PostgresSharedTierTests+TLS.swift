// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTestSupport
import CacheTiers
import Foundation
import PostgresNIO
import Testing

@testable import PostgresCacheTier

/// TLS to PostgreSQL (issue 30, item 6): never plaintext to another host unless the URL says
/// `disable`, and a real server with a certificate the test makes. In the serialized suite: it
/// turns TLS on for the server that every test uses (reloaded, then turned off again).
extension PostgresSharedTierTests {
    @Test(arguments: [
        ("postgres://u@db.internal/app", PostgresURL.SSLMode.require),
        ("postgres://u@10.0.0.7:5432/app", .require),
        ("postgres://u@[2001:db8::1]/app", .require),
        ("postgres://u@127.0.0.1/app", .prefer),
        ("postgres://u@localhost/app", .prefer),
        ("postgres://u@[::1]/app", .prefer),
        ("postgres://u@db.internal/app?sslmode=disable", .disable),
        ("postgres://u@127.0.0.1/app?sslmode=verify-full", .verifyFull),
        ("postgres://u@db.internal/app?sslmode=verify-ca", .verifyCA),
    ])
    func aHostThatIsNotLoopbackGetsTLSUnlessTheURLSaysDisable(url: String, mode: PostgresURL.SSLMode) throws {
        let components = try #require(URLComponents(string: url))
        #expect(try PostgresURL.sslMode(of: components) == mode)
    }

    @Test func aServerWithAGeneratedCertificateIsReachedOverTLSAndVerified() async throws {
        let url = try TestDatabase.requireURL()
        let directory = TemporaryDirectory("tls")
        defer { directory.remove() }
        let certificate = directory.path + "/server.crt"
        let key = directory.path + "/server.key"
        try await Self.makeSelfSignedCertificate(certificate: certificate, key: key, directory: directory.path)
        let admin = try PostgresSharedTier(configuration: .init(url: url, table: TestDatabase.uniqueTable()))
        let plain = url.replacingOccurrences(of: "?sslmode=disable", with: "")
        try await Self.running(admin) {
            try await Self.setServerTLS(on: true, certificate: certificate, key: key, through: admin)
            do {
                // require: encrypted (the certificate is not checked without sslrootcert).
                #expect(try await Self.connectionUsesTLS(plain + "?sslmode=require") == true)
                // verify-full against the generated root: checked, and encrypted.
                #expect(
                    try await Self.connectionUsesTLS(plain + "?sslmode=verify-full&sslrootcert=\(certificate)") == true
                )
                // verify-full against the system's roots: a self-signed certificate is refused.
                #expect(try await Self.connectionUsesTLS(plain + "?sslmode=verify-full", within: .seconds(5)) == nil)
            } catch {
                try await Self.setServerTLS(on: false, certificate: certificate, key: key, through: admin)
                throw error
            }
            try await Self.setServerTLS(on: false, certificate: certificate, key: key, through: admin)
        }
    }

    // MARK: - Helpers

    /// Runs `body` while `tier` runs (its pool serves queries only then).
    static func running(_ tier: PostgresSharedTier, _ body: () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await tier.run { _ in } }
            do {
                try await body()
            } catch {
                group.cancelAll()
                throw error
            }
            group.cancelAll()
        }
    }

    /// Whether a tier connected with `url` reaches the server over TLS (pg_stat_ssl), or nil when
    /// it cannot connect within `deadline` (30 s: under the full suite a connection queues for the
    /// two-thread pool; a connection that must fail gets less).
    static func connectionUsesTLS(_ url: String, within deadline: Duration = .seconds(30)) async throws -> Bool? {
        let tier = try PostgresSharedTier(
            configuration: .init(url: url, table: TestDatabase.uniqueTable(), connectTimeout: .seconds(10))
        )
        var usesTLS: Bool?
        try await running(tier) {
            let rows = try? await withDeadline(deadline) {
                try await tier.client.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                    .collect()
            }
            for row in rows ?? [] {
                usesTLS = try row.decode(Bool.self)
            }
        }
        return usesTLS
    }

    /// Turns the server's TLS on with the files, or off, and waits until the server says so.
    static func setServerTLS(on: Bool, certificate: String, key: String, through tier: PostgresSharedTier) async throws
    {
        let statements =
            on
            ? [
                "ALTER SYSTEM SET ssl_cert_file = '\(certificate)'", "ALTER SYSTEM SET ssl_key_file = '\(key)'",
                "ALTER SYSTEM SET ssl = on",
            ]
            : ["ALTER SYSTEM RESET ssl", "ALTER SYSTEM RESET ssl_cert_file", "ALTER SYSTEM RESET ssl_key_file"]
        for statement in statements {
            try await tier.client.query(PostgresQuery(unsafeSQL: statement)).drain()
        }
        try await tier.client.query("SELECT pg_reload_conf()").drain()
        try await waitUntil {
            // A new connection sees the reloaded setting.
            let rows = try? await tier.client.query("SHOW ssl").collect()
            return (try? rows?.first?.decode(String.self)) == (on ? "on" : "off")
        }
    }

    /// Writes a self-signed certificate for 127.0.0.1 and localhost, and its key, readable by the
    /// server (owned by its `postgres` user when the tests run as root, as scripts/with-postgres.sh
    /// then runs the server as that user).
    static func makeSelfSignedCertificate(certificate: String, key: String, directory: String) async throws {
        try await CacheTestSupport.makeSelfSignedCertificate(certificatePath: certificate, keyPath: key)
        chmod(key, 0o600)
        chmod(directory, 0o755)
        if getuid() == 0, let postgres = getpwnam("postgres") {
            for path in [certificate, key] {
                chown(path, postgres.pointee.pw_uid, postgres.pointee.pw_gid)
            }
        }
    }
}
#endif
