// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import HTTPTypes

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encodes everything of a ``CachedResponse`` but its body into the tier's metadata blob, and
/// back. Versioned; every read is bounds-checked, so damaged metadata is a thrown error (a miss),
/// never a crash or a wrong answer.
///
/// ```
/// u8 version (2) | u8 storage policy (0 allowed, 1 memory only)
/// i64 request time ms | i64 response time ms | i64 validated at ms
/// u16 status | string reason
/// u32 n, n × (string name, string value)    response header fields, in order
/// u32 m, m × (string name, string value)    varying request fields
/// userInfo as a dictionary value
/// i64 fetched at ms | u8 flags (1 incomplete, 2 marked stale) | u32 t, t × string   tags, sorted
/// ```
/// Version 1 (without the last line) is still read: fetched at = response time, complete, not
/// marked, no tags.
/// Strings are u32 length + UTF-8. Values are a tag byte (0 string, 1 integer, 2 double, 3 bool,
/// 4 date ms, 5 bytes, 6 array, 7 dictionary) and their payload.
package enum CachedResponseCodec {
    static let version: UInt8 = 2
    static let maximumDepth = 32

    package static func encodeMetadata(_ cached: CachedResponse) -> [UInt8] {
        var writer = BinaryWriter(capacity: 256)
        writer.write(version)
        writer.write(cached.storagePolicy == .allowedInMemoryOnly ? UInt8(1) : UInt8(0))
        writer.write(cached.requestTime.millisecondsSince1970)
        writer.write(cached.responseTime.millisecondsSince1970)
        writer.write(cached.validatedAt.millisecondsSince1970)
        writer.write(UInt16(clamping: cached.response.status.code))
        writer.write(cached.response.status.reasonPhrase)
        write(cached.response.headerFields, into: &writer)
        write(cached.varyingRequestFields, into: &writer)
        write(.dictionary(cached.userInfo), into: &writer)
        writer.write(cached.fetchedAt.millisecondsSince1970)
        writer.write(UInt8((cached.isComplete ? 0 : 1) | (cached.isMarkedStale ? 2 : 0)))
        writer.write(UInt32(cached.tags.count))
        if !cached.tags.isEmpty {
            for tag in cached.tags.sorted() { writer.write(tag) }
        }
        return writer.bytes
    }

    /// Rebuilds a cached response from its metadata and body.
    /// - Throws: ``CacheError/Code/corruptData`` for damaged or unknown metadata.
    package static func decode(metadata: [UInt8], body: [UInt8]) throws -> CachedResponse {
        var reader = BinaryReader(metadata)
        let version = try reader.readByte()
        guard version == 1 || version == Self.version else {
            throw HTTPCachingError(code: .unsupportedFormat, message: "unknown cached response format")
        }
        let policy: StoragePolicy
        switch try reader.readByte() {
        case 0: policy = .allowed
        case 1: policy = .allowedInMemoryOnly
        default: throw corrupt("storage policy")
        }
        let requestTime = Date(millisecondsSince1970: try reader.read(Int64.self))
        let responseTime = Date(millisecondsSince1970: try reader.read(Int64.self))
        let validatedAt = Date(millisecondsSince1970: try reader.read(Int64.self))
        let code = Int(try reader.read(UInt16.self))
        let reason = try reader.readString()
        guard (100...999).contains(code) else { throw corrupt("status \(code)") }
        let headerFields = try readFields(&reader)
        let varying = try readFields(&reader)
        guard case .dictionary(let userInfo) = try readValue(&reader, depth: 0) else {
            throw corrupt("userInfo")
        }
        var fetchedAt = responseTime
        var flags: UInt8 = 0
        var tags: Set<String> = []
        if version >= 2 {
            fetchedAt = Date(millisecondsSince1970: try reader.read(Int64.self))
            flags = try reader.readByte()
            guard flags & ~3 == 0 else { throw corrupt("flags") }
            let count = Int(try reader.read(UInt32.self))
            guard count <= metadata.count else { throw corrupt("tag count") }
            for _ in 0..<count { tags.insert(try reader.readString()) }
        }
        guard reader.isAtEnd else { throw corrupt("trailing bytes") }
        return CachedResponse(
            response: HTTPResponse(status: .init(code: code, reasonPhrase: reason), headerFields: headerFields),
            body: body,
            userInfo: userInfo,
            storagePolicy: policy,
            requestTime: requestTime,
            responseTime: responseTime,
            validatedAt: validatedAt,
            varyingRequestFields: varying,
            fetchedAt: fetchedAt,
            tags: tags,
            isComplete: flags & 1 == 0,
            isMarkedStale: flags & 2 != 0
        )
    }

    private static func write(_ fields: HTTPFields, into writer: inout BinaryWriter) {
        writer.write(UInt32(fields.count))
        for field in fields {
            writer.write(field.name.rawName)
            writer.write(field.value)
        }
    }

    private static func readFields(_ reader: inout BinaryReader) throws -> HTTPFields {
        let count = Int(try reader.read(UInt32.self))
        var fields = HTTPFields()
        for _ in 0..<count {
            let name = try reader.readString()
            let value = try reader.readString()
            guard let fieldName = HTTPField.Name(name) else { throw corrupt("header name") }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return fields
    }

    private static func write(_ value: UserInfoValue, into writer: inout BinaryWriter) {
        switch value {
        case .string(let string):
            writer.write(UInt8(0))
            writer.write(string)
        case .integer(let integer):
            writer.write(UInt8(1))
            writer.write(integer)
        case .double(let double):
            writer.write(UInt8(2))
            writer.write(double)
        case .bool(let bool):
            writer.write(UInt8(3))
            writer.write(bool ? UInt8(1) : UInt8(0))
        case .date(let date):
            writer.write(UInt8(4))
            writer.write(date.millisecondsSince1970)
        case .bytes(let bytes):
            writer.write(UInt8(5))
            writer.write(bytes: bytes)
        case .array(let array):
            writer.write(UInt8(6))
            writer.write(UInt32(array.count))
            for element in array { write(element, into: &writer) }
        case .dictionary(let dictionary):
            writer.write(UInt8(7))
            writer.write(UInt32(dictionary.count))
            // Sorted, so equal dictionaries encode to equal bytes.
            for (key, element) in dictionary.sorted(by: { $0.key < $1.key }) {
                writer.write(key)
                write(element, into: &writer)
            }
        }
    }

    private static func readValue(_ reader: inout BinaryReader, depth: Int) throws -> UserInfoValue {
        guard depth < maximumDepth else { throw corrupt("userInfo nested too deeply") }
        switch try reader.readByte() {
        case 0: return .string(try reader.readString())
        case 1: return .integer(try reader.read(Int64.self))
        case 2: return .double(try reader.readDouble())
        case 3:
            switch try reader.readByte() {
            case 0: return .bool(false)
            case 1: return .bool(true)
            default: throw corrupt("bool")
            }
        case 4: return .date(Date(millisecondsSince1970: try reader.read(Int64.self)))
        case 5: return .bytes(try reader.readBytes())
        case 6:
            let count = Int(try reader.read(UInt32.self))
            var array: [UserInfoValue] = []
            for _ in 0..<count { array.append(try readValue(&reader, depth: depth + 1)) }
            return .array(array)
        case 7:
            let count = Int(try reader.read(UInt32.self))
            var dictionary: [String: UserInfoValue] = [:]
            for _ in 0..<count {
                let key = try reader.readString()
                dictionary[key] = try readValue(&reader, depth: depth + 1)
            }
            return .dictionary(dictionary)
        default:
            throw corrupt("userInfo tag")
        }
    }

    private static func corrupt(_ what: String) -> HTTPCachingError {
        HTTPCachingError(code: .corruptData, message: "stored cached response is damaged: \(what)")
    }
}
