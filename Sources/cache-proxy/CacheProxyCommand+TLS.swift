// SPDX-License-Identifier: Apache-2.0

#if Proxy
import ArgumentParser
import NIOSSL

extension CacheProxyCommand {
    /// AsyncHTTPClient's TLS settings for `--upstream-ca-file`: the file's certificates as the
    /// only trust roots. The file is read here, at start, so that one without certificates stops
    /// the start instead of failing every upstream exchange with a 502.
    static func upstreamTLS(certificateAuthorities path: String) throws -> TLSConfiguration {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw ValidationError("--upstream-ca-file: cannot read PEM certificates from \(path): \(error)")
        }
        guard !certificates.isEmpty else { throw ValidationError("--upstream-ca-file: \(path) holds no certificate") }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(certificates)
        return configuration
    }
}
#endif
