// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import Foundation
import TestOriginSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `cache-proxy --tls-certificate … --tls-key …` run as an operator runs it: a real process, a
/// renewed certificate written over the files, and a real `SIGHUP`.
@Suite struct CacheProxyTLSReloadTests {
    static var proxyPath: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("cache-proxy").path
    }

    @Test func sighupReloadsTheCertificate() async throws {
        let directory = TemporaryDirectory("tls-reload")
        defer { directory.remove() }
        let origin = try await TestOrigin.start()
        origin.setDefault(.ok("body", headers: [("Cache-Control", "max-age=60")]), for: "/a")
        let first = try await TestCertificate.make(in: directory.path, serial: 30)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.proxyPath)
        process.arguments = [
            "--upstream", origin.baseURL, "--listen", "127.0.0.1:0",
            "--tls-certificate", first.certificatePath, "--tls-key", first.keyPath,
        ]
        let log = Pipe()
        process.standardError = log
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let lines = Self.lines(of: log.fileHandleForReading)
        var reader = lines.makeAsyncIterator()
        let port = try #require(await Self.port(from: &reader))

        let client = try await TLSClient.connect(port: port, trusting: [try first.certificate()])
        #expect(client.session.serial == 30)
        #expect(try await client.get("/a").body == "body")

        let second = try await TestCertificate.make(in: directory.path, serial: 31)
        kill(process.processIdentifier, SIGHUP)
        var reloaded = false
        while let line = await reader.next() {
            if line.contains("reloaded the listener's certificate") {
                reloaded = true
                break
            }
        }
        #expect(reloaded)
        let renewed = try await TLSClient.connect(port: port, trusting: [try second.certificate()])
        #expect(renewed.session.serial == 31)
        #expect(try await renewed.get("/a").body == "body")
        // The connection from before the signal is still served.
        #expect(try await client.get("/a").body == "body")
        await client.close()
        await renewed.close()

        kill(process.processIdentifier, SIGTERM)
        let status = try await offThePool {
            process.waitUntilExit()
            return process.terminationStatus
        }
        #expect(status == 0)
        await origin.stop()
    }

    @Test(arguments: [
        ["--upstream-ca-file", "/nonexistent/ca.pem"],
        ["--tls-certificate", "/nonexistent/chain.pem", "--tls-key", "/nonexistent/key.pem"],
        ["--tls-certificate", "/nonexistent/chain.pem"],
    ])
    func filesThatCannotBeReadStopTheStart(arguments: [String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.proxyPath)
        process.arguments = ["--upstream", "https://127.0.0.1:9", "--listen", "127.0.0.1:0"] + arguments
        let log = Pipe()
        process.standardError = log
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let (status, text) = try await offThePool {
            let text = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, text)
        }
        #expect(status != 0)
        #expect(text.contains(arguments[1]) || text.contains("go together"), "got: \(text)")
    }

    /// The port in the proxy's "listening" log line (`address=127.0.0.1:PORT`).
    static func port(from reader: inout AsyncStream<String>.Iterator) async -> Int? {
        while let line = await reader.next() {
            guard line.contains("listening"), let range = line.range(of: "127.0.0.1:") else { continue }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        return nil
    }

    /// The lines `handle` delivers, read on a thread of its own, until it ends.
    static func lines(of handle: FileHandle) -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        Thread.detachNewThread {
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending += chunk
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    continuation.yield(String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
            }
            continuation.finish()
        }
        return stream
    }
}
#endif
