// SPDX-License-Identifier: Apache-2.0

import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The crash tests' child: runs `writer` with `arguments` until it has written `afterAcks` lines
/// that start with "A" (or exited on its own), kills it with SIGKILL, and returns all it wrote.
/// Off the pool: the reads block.
package func runUntilKilled(_ writer: String, _ arguments: [String], afterAcks: Int) async throws -> [UInt8] {
    try await offThePool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: writer)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        var buffer = [UInt8]()
        var acks = 0
        let reader = pipe.fileHandleForReading
        while acks < afterAcks {
            let data = reader.availableData
            if data.isEmpty { break }  // the writer exited on its own
            // Only the new bytes are looked at: a line starts after a newline.
            let start = buffer.count
            buffer += data
            for index in start..<buffer.count where buffer[index] == UInt8(ascii: "A") {
                if index == 0 || buffer[index - 1] == UInt8(ascii: "\n") { acks += 1 }
            }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return buffer + reader.readDataToEndOfFile()
    }
}
