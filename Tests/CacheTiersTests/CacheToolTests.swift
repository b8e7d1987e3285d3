// SPDX-License-Identifier: Apache-2.0

#if Tools
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

    func tool(_ arguments: [String], input: [UInt8]? = nil) async throws -> Run {
        try await offThePool {
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
            return Run(
                status: process.terminationStatus,
                output: [UInt8](out),
                error: String(decoding: err, as: UTF8.self)
            )
        }
    }

    @Test func putGetListStatsVerifyRemove() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.toolPath))
        let directory = TemporaryDirectory("tool")
        defer { directory.remove() }
        let cache = directory.appending("cache")
        let json = SampleData.json(approximateBytes: 20_000)
        #expect(try await tool(["put", cache, "users"], input: json).status == 0)
        let file = directory.appending("value.bin")
        try FileSurgery.write([0, 1, 2, 255], to: file)
        #expect(try await tool(["put", cache, "binary", file]).status == 0)

        #expect(try await tool(["get", cache, "users"]).output == json)
        #expect(try await tool(["get", cache, "binary"]).output == [0, 1, 2, 255])
        let miss = try await tool(["get", cache, "absent"])
        #expect(miss.status == 1)
        #expect(miss.error.contains("miss"))

        let list = String(decoding: try await tool(["list", cache]).output, as: UTF8.self)
        #expect(list.contains("users\t\(json.count)\t"))
        let stats = String(decoding: try await tool(["stats", cache, "--json"]).output, as: UTF8.self)
        #expect(stats.contains("\"entries\":2"))
        #expect(stats.contains("\"compressionRatio\":"))
        let verify = try await tool(["verify", cache])
        #expect(verify.status == 0)
        #expect(String(decoding: verify.output, as: UTF8.self).contains("corrupt\t0"))

        #expect(try await tool(["remove", cache, "users"]).status == 0)
        #expect(try await tool(["remove", cache, "users"]).status == 1)
        #expect(try await tool(["compact", cache, "--threshold", "0.9"]).status == 0)
        #expect(try await tool(["get", cache, "binary"]).output == [0, 1, 2, 255])
    }

    @Test func verifyFailsOnCorruptionAndLockedDirectoryIsAClearError() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.toolPath))
        let directory = TemporaryDirectory("tool")
        defer { directory.remove() }
        let cache = directory.appending("cache")
        for index in 0..<3 {
            #expect(
                try await tool(["put", cache, "k\(index)"], input: SampleData.random(count: 3000, seed: UInt64(index)))
                    .status
                    == 0
            )
        }
        // The directory is in use: a clear error, not corruption.
        let holder = try DiskStore(configuration: DiskTier.Configuration(directory: cache))
        let locked = try await tool(["get", cache, "k0"])
        #expect(locked.status != 0)
        #expect(locked.error.contains("in use"))
        try holder.close()

        let segment = cache + "/" + CacheDirectory.segmentFileName(1)
        try FileSurgery.flip(segment, at: 100)
        let verify = try await tool(["verify", cache])
        #expect(verify.status == 1)
        #expect(String(decoding: verify.output, as: UTF8.self).contains("corrupt\t1"))
        #expect(try await tool(["put", cache, "bad", "--capacity", "-5"], input: [1]).status != 0)
    }

    @Test func keyFileOnEverySubcommand() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.toolPath))
        let directory = TemporaryDirectory("tool")
        defer { directory.remove() }
        let cache = directory.appending("cache")
        let keyFile = directory.appending("key")
        let newKeyFile = directory.appending("new-key")
        let shortKeyFile = directory.appending("short-key")
        try FileSurgery.write(EncryptionTests.keyA.bytes, to: keyFile)
        try FileSurgery.write(EncryptionTests.keyB.bytes, to: newKeyFile)
        try FileSurgery.write([UInt8](repeating: 1, count: 31), to: shortKeyFile)
        let value = Array("secret body \(EncryptionTests.marker)".utf8)
        let key = ["--key-file", keyFile]

        #expect(try await tool(["put", cache, "users/\(EncryptionTests.marker)"] + key, input: value).status == 0)
        #expect(try await tool(["get", cache, "users/\(EncryptionTests.marker)"] + key).output == value)
        let list = String(decoding: try await tool(["list", cache] + key).output, as: UTF8.self)
        #expect(list.contains("users/\(EncryptionTests.marker)\t\(value.count)\t"))
        #expect(
            String(decoding: try await tool(["stats", cache, "--json"] + key).output, as: UTF8.self).contains(
                "\"entries\":1"
            )
        )
        let verify = try await tool(["verify", cache] + key)
        #expect(verify.status == 0)
        #expect(String(decoding: verify.output, as: UTF8.self).contains("unauthenticated\t0"))
        #expect(try await tool(["compact", cache, "--threshold", "0.9"] + key).status == 0)

        let noKey = try await tool(["get", cache, "users/\(EncryptionTests.marker)"])
        #expect(noKey.status != 0 && noKey.error.contains("encrypted"))
        let wrongKey = try await tool(["get", cache, "users/\(EncryptionTests.marker)", "--key-file", newKeyFile])
        #expect(wrongKey.status != 0 && wrongKey.error.contains("none of the"))
        let shortKey = try await tool(["get", cache, "x", "--key-file", shortKeyFile])
        #expect(shortKey.status != 0 && shortKey.error.contains("exactly 32 raw bytes"))
        let missingKey = try await tool(["verify", cache, "--key-file", directory.appending("absent")])
        #expect(missingKey.status != 0 && missingKey.error.contains("cannot read the key file"))

        let rekey = try await tool(["rekey", cache, "--key-file", newKeyFile, "--previous-key-file", keyFile])
        #expect(rekey.status == 0, "\(rekey.error)")
        #expect(
            try await tool(["get", cache, "users/\(EncryptionTests.marker)", "--key-file", newKeyFile]).output == value
        )
        #expect(
            try await tool(["remove", cache, "users/\(EncryptionTests.marker)", "--key-file", newKeyFile]).status == 0
        )
    }
}
#endif
