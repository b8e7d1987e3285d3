// SPDX-License-Identifier: Apache-2.0

#if Proxy
import Foundation
import TestOriginSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One raw TCP exchange with a server on loopback: writes bytes exactly as given (no client
/// library fixes the framing up) and reads until the server closes the connection, or gives up
/// after `limitSeconds` of silence (a bound on a hang, not a wait for time to pass).
enum RawConnection {
    struct Outcome {
        /// Everything the server sent.
        var bytes: [UInt8]
        /// Everything the server sent, as text.
        var text: String { String(decoding: bytes, as: UTF8.self) }
        /// Whether the server closed the connection (false: the read gave up on silence).
        var closed: Bool
        /// The errno of a failed connection or read, 0 when none failed.
        var readError: Int32 = 0
    }

    /// The exchange, on a thread of its own: blocking socket calls must not hold one of the few
    /// threads the servers under test run their async work on.
    static func exchange(port: Int, _ request: String, limitSeconds: Int = 30) async -> Outcome {
        await exchange(port: port, parts: [request], limitSeconds: limitSeconds)
    }

    /// The exchange with the request written in `parts`, one `write` each (the server may still
    /// read them together).
    /// - Parameter receiveBufferBytes: the client's receive buffer (`SO_RCVBUF`): a small one makes
    ///   a reader slower than the server, whose writes then wait (backpressure).
    static func exchange(
        port: Int,
        parts: [String],
        receiveBufferBytes: Int32? = nil,
        limitSeconds: Int = 30
    ) async -> Outcome {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    returning: blockingExchange(
                        port: port,
                        parts,
                        receiveBufferBytes: receiveBufferBytes,
                        limitSeconds: limitSeconds
                    )
                )
            }
        }
    }

    private static func blockingExchange(
        port: Int,
        _ parts: [String],
        receiveBufferBytes: Int32?,
        limitSeconds: Int
    ) -> Outcome {
        // A failed connection is the test's failure (nothing read, not closed), not a trap that
        // would end every test of the run.
        let descriptor = Socket.connected(port: port, receiveBufferBytes: receiveBufferBytes)
        guard descriptor >= 0 else { return Outcome(bytes: [], closed: false, readError: errno) }
        defer { close(descriptor) }
        for part in parts {
            let bytes = Array(part.utf8)
            var sent = 0
            while sent < bytes.count {
                let written = bytes[sent...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { break }
                sent += written
            }
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, Int32(limitSeconds * 1000))
            if polled < 0, errno == EINTR { continue }
            guard polled > 0 else {
                return Outcome(bytes: received, closed: false)
            }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                received += buffer[..<count]
            } else if count < 0, errno == EINTR {
                continue
            } else {
                return Outcome(
                    bytes: received,
                    closed: count == 0,
                    readError: count < 0 ? errno : 0
                )
            }
        }
    }
}
#endif
