// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import Testing

@testable import CacheTiers

/// `cache-tool` run as a user runs it: a real process, real files, exit codes.
@Suite struct CacheToolTests {
    struct Run {
        var status: Int32
        var output: [UInt8]
        var error: String
    }

    static var toolPath: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("cache-tool").path
    }

    func tool(_ arguments: [String], input: [UInt8]? = nil) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.toolPath)
        process.arguments = arguments
        let output = Pipe()
        let error = Pipe()
        let inputPipe = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = inputPipe
        try process.run()
        if let input { inputPipe.fileHandleForWriting.write(Data(input)) }
        try inputPipe.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, output: [UInt8](out), error: String(decoding: err, as: UTF8.self))
    }

    @Test func putGetListStatsVerifyRemove() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.toolPath))
        let directory = TemporaryDirectory("tool")
        defer { directory.remove() }
        let cache = directory.appending("cache")
        let json = SampleData.json(approximateBytes: 20_000)
        #expect(try tool(["put", cache, "users"], input: json).status == 0)
        let file = directory.appending("value.bin")
        try FileSurgery.write([0, 1, 2, 255], to: file)
        #expect(try tool(["put", cache, "binary", file]).status == 0)

        #expect(try tool(["get", cache, "users"]).output == json)
        #expect(try tool(["get", cache, "binary"]).output == [0, 1, 2, 255])
        let miss = try tool(["get", cache, "absent"])
        #expect(miss.status == 1)
        #expect(miss.error.contains("miss"))

        let list = String(decoding: try tool(["list", cache]).output, as: UTF8.self)
        #expect(list.contains("users\t\(json.count)\t"))
        let stats = String(decoding: try tool(["stats", cache, "--json"]).output, as: UTF8.self)
        #expect(stats.contains("\"entries\":2"))
        #expect(stats.contains("\"compressionRatio\":"))
        let verify = try tool(["verify", cache])
        #expect(verify.status == 0)
        #expect(String(decoding: verify.output, as: UTF8.self).contains("corrupt\t0"))

        #expect(try tool(["remove", cache, "users"]).status == 0)
        #expect(try tool(["remove", cache, "users"]).status == 1)
        #expect(try tool(["compact", cache, "--threshold", "0.9"]).status == 0)
        #expect(try tool(["get", cache, "binary"]).output == [0, 1, 2, 255])
    }

    @Test func verifyFailsOnCorruptionAndLockedDirectoryIsAClearError() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.toolPath))
        let directory = TemporaryDirectory("tool")
        defer { directory.remove() }
        let cache = directory.appending("cache")
        for index in 0..<3 {
            #expect(
                try tool(["put", cache, "k\(index)"], input: SampleData.random(count: 3000, seed: UInt64(index))).status
                    == 0
            )
        }
        // The directory is in use: a clear error, not corruption.
        let holder = try DiskStore(configuration: DiskTier.Configuration(directory: cache))
        let locked = try tool(["get", cache, "k0"])
        #expect(locked.status != 0)
        #expect(locked.error.contains("in use"))
        try holder.close()

        let segment = cache + "/" + CacheDirectory.segmentFileName(1)
        try FileSurgery.flip(segment, at: 100)
        let verify = try tool(["verify", cache])
        #expect(verify.status == 1)
        #expect(String(decoding: verify.output, as: UTF8.self).contains("corrupt\t1"))
        #expect(try tool(["put", cache, "bad", "--capacity", "-5"], input: [1]).status != 0)
    }
}
