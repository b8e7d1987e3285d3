// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import Foundation
import TestOriginSupport
import Testing

/// The offline cases of every client test rest on one guarantee of the test origin: once stopped,
/// a connection to its port is refused at once.
@Suite struct TestOriginTests {
    /// Starts `/bin/sleep` with `posix_spawn` and no file actions, so it inherits every descriptor
    /// not marked close-on-exec (as any process a test or an exit test spawns may), and returns its
    /// process identifier.
    static func spawnInheritingChild() throws -> pid_t {
        var pid: pid_t = 0
        let arguments: [UnsafeMutablePointer<CChar>?] = ["/bin/sleep", "60"].map { (text: String) in strdup(text) }
        defer {
            for argument in arguments { free(argument) }
        }
        let status = posix_spawn(&pid, "/bin/sleep", nil, nil, arguments + [nil], environ)
        guard status == 0 else { throw POSIXError(POSIXErrorCode(rawValue: status) ?? .EIO) }
        return pid
    }

    /// Origins stopped while a child process that was spawned after they started still runs:
    /// each stopped port refuses. When the origin's sockets were inherited (NIO does not mark them
    /// close-on-exec) and the origin only closed its descriptor, the child's copy kept the socket
    /// listening and a stopped port accepted connections: the offline cases of the client tests
    /// then saw a reset instead of a refusal, about one full test run in three.
    @Test func aStoppedOriginRefusesConnectionsWhileAChildProcessRuns() async throws {
        var origins: [TestOrigin] = []
        for _ in 0..<4 { origins.append(try await TestOrigin.start(keepAlive: false)) }
        let child = try Self.spawnInheritingChild()
        defer {
            kill(child, SIGKILL)
            var status: Int32 = 0
            waitpid(child, &status, 0)
        }
        for origin in origins {
            #expect(Socket.connectionError(port: origin.port) == 0)
            await origin.stop()
            #expect(Socket.connectionError(port: origin.port) == ECONNREFUSED)
        }
    }
}
#endif
