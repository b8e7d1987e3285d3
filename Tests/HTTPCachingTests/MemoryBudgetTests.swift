// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

/// The memory budget bounds the process's memory: a `ResponseCache` filled past its budget with a
/// proxy's kind of small responses grows the process's resident memory by at most 1.3× the
/// budget (before the decoded form was counted: 2.8× with 200-byte bodies). Measured in a child
/// process of its own (`MemoryFootprint`), so that nothing else allocates beside it.
@Suite struct MemoryBudgetTests {
    static var probePath: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("MemoryFootprint").path
    }

    @Test(arguments: [("8388608", "25000", "200"), ("8388608", "12000", "2000")])
    func residentMemoryStaysWithinTheBudgetsFactor(
        budget: String,
        urls: String,
        bodyBytes: String
    ) async throws {
        #if os(Linux)
        try #require(FileManager.default.isExecutableFile(atPath: Self.probePath))
        let (status, text) = try await offThePool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.probePath)
            process.arguments = [budget, urls, bodyBytes]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, text)
        }
        #expect(status == 0)
        let words = text.split(whereSeparator: \.isWhitespace)
        let ratio = words.firstIndex(of: "ratio").flatMap { Double(words[$0 + 1]) }
        let ratioValue = try #require(ratio, "probe said: \(text)")
        #expect(ratioValue <= 1.3, "resident memory grew \(ratioValue)x the budget: \(text)")
        #endif
    }
}
