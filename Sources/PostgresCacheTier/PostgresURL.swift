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

/// Parses `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE]` into a client
/// configuration.
enum PostgresURL {
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
        let tls: PostgresClient.Configuration.TLS
        switch components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer" {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require": tls = .require(.makeClientConfiguration())
        case let mode:
            throw CacheError(code: .invalidArgument, message: "sslmode must be disable, prefer or require, not \(mode)")
        }
        return PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: user,
            password: password,
            database: database,
            tls: tls
        )
    }

    /// The URL without its password, for messages and logs.
    static func redacted(_ string: String) -> String {
        guard var components = URLComponents(string: string), components.password != nil else { return string }
        components.password = "***"
        return components.string ?? "(unparsable URL)"
    }
}
#endif
