// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import NIOSSL
import Synchronization

extension OriginTransport {
    /// The context of `https` connections: made once, with the system's trust store or the
    /// configured authorities.
    func tlsContext() throws -> NIOSSLContext {
        if let context = tls.withLock({ $0 }) { return context }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        if let path = self.configuration.certificateAuthorityPath {
            configuration.trustRoots = .file(path)
        }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            throw CachingClientError(
                code: .network,
                message: "no TLS context for https origins (certificate authorities: "
                    + "\(self.configuration.certificateAuthorityPath ?? "the system's"))",
                underlying: error
            )
        }
        tls.withLock { $0 = $0 ?? context }
        return context
    }
}
#endif
