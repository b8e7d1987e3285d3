// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Plain sockets on 127.0.0.1. The origin's own are close-on-exec, so a process the tests spawn
/// does not inherit them, and set `SO_REUSEPORT`, so a stopped origin can hold its port with a
/// second socket before its listener closes.
package enum Socket {
    /// Raises this process's soft limit of open files to its hard limit, once. The tests run in
    /// parallel in one process, and their servers' and clients' sockets together (two for each
    /// connection over loopback) peaked at about 1,400 descriptors in one run: past the soft limit
    /// of 1,024 that many systems set (the hard limit is usually far higher), a test met `EMFILE`.
    package static let openFileLimitRaised: Void = {
        var limit = rlimit()
        guard getrlimit(resourceOpenFiles, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(resourceOpenFiles, &limit)
    }()

    #if canImport(Glibc)
    private static let resourceOpenFiles = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resourceOpenFiles = RLIMIT_NOFILE
    #endif

    /// A listening, non-blocking socket on a free port.
    static func makeListener() throws -> Int32 {
        openFileLimitRaised
        let descriptor = open(port: 0, listening: true)
        guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "binding the test origin") }
        return descriptor
    }

    /// A socket bound to 127.0.0.1:`port` (0: a free port), listening when `listening` is true; -1
    /// on failure, with `errno` set.
    static func open(port: Int, listening: Bool) -> Int32 {
        let descriptor = makeSocket()
        guard descriptor >= 0 else { return -1 }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withLoopbackAddress(port: port) { bind(descriptor, $0, $1) }
        if bound != 0 || (listening && listen(descriptor, 256) != 0) {
            let failure = errno
            close(descriptor)
            errno = failure
            return -1
        }
        return descriptor
    }

    /// Connects a blocking socket to 127.0.0.1:`port` and closes it: 0 when the connection was
    /// made, else the errno (`ECONNREFUSED` for a stopped origin).
    package static func connectionError(port: Int) -> Int32 {
        let descriptor = connected(port: port)
        guard descriptor >= 0 else { return errno }
        close(descriptor)
        return 0
    }

    /// A blocking, close-on-exec socket connected to 127.0.0.1:`port`, which the caller closes;
    /// -1 on failure, with `errno` set.
    /// - Parameter receiveBufferBytes: the socket's receive buffer (`SO_RCVBUF`, set before the
    ///   connection so that the window it offers is small too); the system's default when nil.
    package static func connected(port: Int, receiveBufferBytes: Int32? = nil) -> Int32 {
        openFileLimitRaised
        let descriptor = makeSocket()
        guard descriptor >= 0 else { return -1 }
        if var size = receiveBufferBytes,
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) != 0
        {
            let failure = errno
            close(descriptor)
            errno = failure
            return -1
        }
        guard withLoopbackAddress(port: port, { connect(descriptor, $0, $1) }) == 0 else {
            let failure = errno
            close(descriptor)
            errno = failure
            return -1
        }
        return descriptor
    }

    /// A close-on-exec TCP socket (atomically where the system allows it), or -1.
    private static func makeSocket() -> Int32 {
        #if canImport(Glibc)
        return socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        if descriptor >= 0 { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        return descriptor
        #endif
    }

    /// Calls `body` with 127.0.0.1:`port` as a `sockaddr` and its length.
    private static func withLoopbackAddress(
        port: Int,
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}
#endif
