// SPDX-License-Identifier: Apache-2.0

#if Proxy
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

extension CacheProxy {
    /// TLS on the listener: the certificate chain and private key, read from PEM files when the
    /// proxy is created and again on ``CacheProxy/reloadCertificates()`` (cache-proxy does that
    /// on `SIGHUP`).
    ///
    /// Only TLS 1.2 and 1.3 are offered. ALPN offers `h2` and `http/1.1`, or `http/1.1` alone
    /// when ``CacheProxy/Configuration/http2`` is nil.
    public struct ListenerTLS: Sendable, Hashable {
        /// The PEM file with the server's certificate first, then its intermediates.
        public var certificateChainPath: String
        /// The PEM file with the certificate's private key.
        public var privateKeyPath: String

        /// Creates the listener's TLS settings.
        public init(certificateChainPath: String, privateKeyPath: String) {
            self.certificateChainPath = certificateChainPath
            self.privateKeyPath = privateKeyPath
        }
    }
}

/// The listener's TLS context: built from the files at start, replaced whole by a reload. Each
/// accepted connection takes the context current at that moment, so a reload changes what new
/// connections are offered and leaves the open ones as they are.
final class ListenerCertificates: Sendable {
    let files: CacheProxy.ListenerTLS
    /// The protocols ALPN offers, the preferred first.
    let protocols: [String]
    private let context: NIOLockedValueBox<NIOSSLContext>

    /// Reads the files.
    /// - Throws: ``CacheProxyError/Code/invalidCertificate`` naming what was wrong.
    init(_ files: CacheProxy.ListenerTLS, offersHTTP2: Bool) throws(CacheProxyError) {
        self.files = files
        self.protocols = offersHTTP2 ? ["h2", "http/1.1"] : ["http/1.1"]
        self.context = NIOLockedValueBox(try Self.context(files, protocols: protocols))
    }

    /// The context for a connection accepted now.
    var current: NIOSSLContext { context.withLockedValue { $0 } }

    /// Reads the files again and, when they make a context, uses it for every later connection.
    /// - Throws: ``CacheProxyError/Code/invalidCertificate``; the context in use then stays.
    func reload() throws(CacheProxyError) {
        let fresh = try Self.context(files, protocols: protocols)
        context.withLockedValue { $0 = fresh }
    }

    private static func context(
        _ files: CacheProxy.ListenerTLS,
        protocols: [String]
    ) throws(CacheProxyError) -> NIOSSLContext {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificateChainPath)
        } catch {
            throw CacheProxyError(
                code: .invalidCertificate,
                message: "cannot read a PEM certificate chain from \(files.certificateChainPath): \(error)"
            )
        }
        guard !chain.isEmpty else {
            throw CacheProxyError(
                code: .invalidCertificate,
                message: "\(files.certificateChainPath) holds no certificate"
            )
        }
        do {
            key = try NIOSSLPrivateKey(file: files.privateKeyPath, format: .pem)
        } catch {
            throw CacheProxyError(
                code: .invalidCertificate,
                message: "cannot read a PEM private key from \(files.privateKeyPath): \(error)"
            )
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        configuration.minimumTLSVersion = .tlsv12
        configuration.maximumTLSVersion = .tlsv13
        configuration.applicationProtocols = protocols
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw CacheProxyError(
                code: .invalidCertificate,
                message:
                    "the certificate in \(files.certificateChainPath) and the key in \(files.privateKeyPath) "
                    + "do not make a TLS context (does the key belong to the certificate?): \(error)"
            )
        }
    }
}
#endif
