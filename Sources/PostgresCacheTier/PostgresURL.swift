// SPDX-License-Identifier: Apache-2.0

#if PostgreSQL
import CacheTiers
import NIOSSL
import PostgresNIO

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Parses `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE[&sslrootcert=FILE]]` into a
/// client configuration.
enum PostgresURL {
    /// How the connection uses TLS, as libpq's `sslmode` names it.
    enum SSLMode: String, Hashable, Sendable {
        /// Never TLS: only when the URL says so.
        case disable
        /// TLS when the server offers it (verified as `verify-full`), else plaintext: the default
        /// for a loopback host only.
        case prefer
        /// TLS or no connection, the certificate unchecked unless `sslrootcert` names the trusted
        /// roots (then as `verify-ca`): the default for every host that is not loopback.
        case require
        /// TLS, the certificate chain checked against `sslrootcert` (or the system's roots).
        case verifyCA = "verify-ca"
        /// TLS, the chain and the host name checked against `sslrootcert` (or the system's roots).
        case verifyFull = "verify-full"
    }

    static func clientConfiguration(_ string: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: string),
            components.scheme == "postgres" || components.scheme == "postgresql",
            let host = components.host, !host.isEmpty
        else {
            throw CacheError(
                code: .invalidArgument,
                message: "not a PostgreSQL URL (postgres://USER@HOST[:PORT]/DATABASE): \(redacted(string))"
            )
        }
        let user = components.user ?? "postgres"
        let password = components.password
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let database = path.isEmpty ? nil : path
        let rootCertificate = components.queryItems?.first(where: { $0.name == "sslrootcert" })?.value
        return PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: user,
            password: password,
            database: database,
            tls: try tls(sslMode(of: components), rootCertificate: rootCertificate)
        )
    }

    /// The URL's `sslmode`, or the default for its host: `prefer` for a loopback host, `require`
    /// for any other, so that a connection across a network never falls back to plaintext unless
    /// the URL says `disable`.
    static func sslMode(of components: URLComponents) throws -> SSLMode {
        guard let written = components.queryItems?.first(where: { $0.name == "sslmode" })?.value else {
            return isLoopback(components.host ?? "") ? .prefer : .require
        }
        guard let mode = SSLMode(rawValue: written) else {
            throw CacheError(
                code: .invalidArgument,
                message: "sslmode must be disable, prefer, require, verify-ca or verify-full, not \(written)"
            )
        }
        return mode
    }

    /// Whether `host` is this machine: `localhost`, 127.0.0.0/8 or ::1.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.lowercased() == "localhost" || bare == "::1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    private static func tls(_ mode: SSLMode, rootCertificate: String?) throws -> PostgresClient.Configuration.TLS {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate {
            configuration.trustRoots = .file(rootCertificate)
        }
        switch mode {
        case .disable:
            return .disable
        case .prefer:
            return .prefer(configuration)
        case .require:
            configuration.certificateVerification = rootCertificate == nil ? .none : .noHostnameVerification
            return .require(configuration)
        case .verifyCA:
            configuration.certificateVerification = .noHostnameVerification
            return .require(configuration)
        case .verifyFull:
            configuration.certificateVerification = .fullVerification
            return .require(configuration)
        }
    }

    /// The URL without its password, for messages and logs.
    static func redacted(_ string: String) -> String {
        guard var components = URLComponents(string: string), components.password != nil else { return string }
        components.password = "***"
        return components.string ?? "(unparsable URL)"
    }
}
#endif
