// SPDX-License-Identifier: Apache-2.0

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

/// Where a ``CacheProxy`` listens: a host and a port (0 picks a free one).
public struct ListenAddress: Hashable, Sendable, CustomStringConvertible {
    /// The host or IP address to bind, such as `127.0.0.1`, `0.0.0.0` or `::1`.
    public let host: String
    /// The port; 0 picks a free one.
    public let port: Int

    /// An address from its parts.
    /// - Throws: ``CacheProxyError/Code/invalidListenAddress`` when the port is out of range or
    ///   the host empty.
    public init(host: String, port: Int) throws(CacheProxyError) {
        guard !host.isEmpty, (0...65_535).contains(port) else {
            throw CacheProxyError(code: .invalidListenAddress, message: "'\(host):\(port)' is not a host and a port")
        }
        self.init(checkedHost: host, port: port)
    }

    /// `127.0.0.1:port`.
    public static func loopback(port: Int) -> ListenAddress {
        precondition((0...65_535).contains(port), "a port is from 0 to 65535")
        return ListenAddress(checkedHost: "127.0.0.1", port: port)
    }

    private init(checkedHost host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` (`[IPv6]:PORT` for IPv6).
    /// - Throws: ``CacheProxyError/Code/invalidListenAddress`` when it is malformed.
    public init(_ text: String) throws(CacheProxyError) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else {
            throw CacheProxyError(code: .invalidListenAddress, message: "'\(text)' is not HOST:PORT")
        }
        var host = text[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        try self.init(host: String(host), port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
