// SPDX-License-Identifier: Apache-2.0

#if Proxy
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
#endif
