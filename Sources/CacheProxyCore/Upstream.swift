// SPDX-License-Identifier: Apache-2.0

#if Proxy
/// The origin a ``CacheProxy`` forwards to: a scheme, an authority and an optional path prefix,
/// parsed from a URL such as `http://127.0.0.1:8000` or `https://api.example.com/v1`.
public struct Upstream: Hashable, Sendable, CustomStringConvertible {
    /// `http` or `https`.
    public let scheme: String
    /// `host[:port]`, as given.
    public let authority: String
    /// A path prefix put before every forwarded path, without a trailing `/`; empty for none.
    public let pathPrefix: String

    /// Parses `url`.
    /// - Throws: ``CacheProxyError/Code/invalidUpstream`` when it is not an absolute `http` or
    ///   `https` URL with a host, or has a query or fragment.
    public init(_ url: String) throws(CacheProxyError) {
        let lowered = url.lowercased()
        let scheme: String
        if lowered.hasPrefix("http://") {
            scheme = "http"
        } else if lowered.hasPrefix("https://") {
            scheme = "https"
        } else {
            throw CacheProxyError(code: .invalidUpstream, message: "'\(url)' is not an http:// or https:// URL")
        }
        let rest = url.dropFirst(scheme.count + 3)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = String(rest[..<slash])
        var prefix = String(rest[slash...])
        while prefix.hasSuffix("/") { prefix.removeLast() }
        let forbidden: Set<Character> = ["?", "#", "@", " "]
        guard !authority.isEmpty, !authority.hasPrefix(":"), !url.contains(where: forbidden.contains) else {
            throw CacheProxyError(
                code: .invalidUpstream,
                message: "'\(url)' needs a host, and no user info, query or fragment"
            )
        }
        self.scheme = scheme
        self.authority = authority
        self.pathPrefix = prefix
    }

    public var description: String { "\(scheme)://\(authority)\(pathPrefix)" }
}
#endif
