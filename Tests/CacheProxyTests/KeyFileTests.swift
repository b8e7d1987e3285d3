// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CacheTestSupport
import CacheTiers
import Foundation
import Testing

@testable import cache_proxy

/// `cache-proxy --key-file`: the key that seals the disk tier and the shared tier's rows comes
/// from a file only its owner can read, never from the command line.
@Suite struct KeyFileTests {
    static let bytes = (0..<32).map { UInt8($0 * 7 & 0xff) }

    func write(_ contents: [UInt8], mode: Int, in directory: TemporaryDirectory) throws -> String {
        let path = directory.path + "/key"
        try Data(contents).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    @Test func aKeyFileHoldsRawBytesOrHexDigits() throws {
        let directory = TemporaryDirectory("key-file")
        defer { directory.remove() }
        let expected = try EncryptionKey(bytes: Self.bytes).description
        let raw = try write(Self.bytes, mode: 0o600, in: directory)
        #expect(try CacheProxyCommand.encryptionKey(file: raw).description == expected)
        let hex = Self.bytes.map { String(format: "%02x", $0) }.joined() + "\n"
        let text = try write(Array(hex.utf8), mode: 0o400, in: directory)
        #expect(try CacheProxyCommand.encryptionKey(file: text).description == expected)
    }

    @Test func aKeyFileOthersMayReadOrOfAnotherSizeIsRefused() throws {
        let directory = TemporaryDirectory("key-file")
        defer { directory.remove() }
        let open = try write(Self.bytes, mode: 0o644, in: directory)
        #expect(throws: CacheProxyCommand.KeyFileError.self) { try CacheProxyCommand.encryptionKey(file: open) }
        let short = try write(Array(Self.bytes.prefix(31)), mode: 0o600, in: directory)
        #expect(throws: CacheProxyCommand.KeyFileError.self) { try CacheProxyCommand.encryptionKey(file: short) }
        let notHex = try write(Array(String(repeating: "zz", count: 32).utf8), mode: 0o600, in: directory)
        #expect(throws: CacheProxyCommand.KeyFileError.self) { try CacheProxyCommand.encryptionKey(file: notHex) }
        #expect(throws: CacheProxyCommand.KeyFileError.self) {
            try CacheProxyCommand.encryptionKey(file: directory.path + "/missing")
        }
    }
}
#endif
