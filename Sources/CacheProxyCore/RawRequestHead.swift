// SPDX-License-Identifier: Apache-2.0

#if Proxy
import HTTPTypes
import NIOCore

/// A plain HTTP/1.1 `GET` read straight from the connection's bytes, for ``RawHitHandler``:
/// only the strictest form, which every conforming parser frames the same way (its head ends at
/// the first empty line, and it has no body). Anything else is left to NIO's decoder.
///
/// Taken: `GET <origin-form> HTTP/1.1`, CRLF line ends, at most ``maxFields`` fields and
/// ``maxHeadBytes`` bytes, token names, values of visible ASCII, space and tab, exactly one
/// `Host`, no `Connection` but `Connection: keep-alive` (left out of the request: HTTP/1.1's
/// default), and none of `Content-Length`, `Transfer-Encoding`, `Upgrade` or `Expect` (a body,
/// or a connection rule, is the decoder's to read). A bare LF, a folded line,
/// a space before a colon, a byte outside those sets or a request target with a fragment or
/// outside `/...` visible ASCII makes it ``Parse/other``.
enum RawRequestHead {
    /// At most this many fields: far below NIO's decoder limits, so that a head the decoder
    /// would refuse is never answered here.
    static let maxFields = 64
    /// At most this many bytes in the head.
    static let maxHeadBytes = 8 << 10

    enum Parse: Equatable {
        /// A whole request head of `length` bytes, as HummingbirdCore's HTTP/1 codec would make
        /// it (scheme `http`, the `Host` field as the authority and out of the fields), without
        /// its `Connection: keep-alive` fields.
        case request(HTTPRequest, length: Int)
        /// The bytes so far begin such a request, but its head has not ended.
        case incomplete
        /// Not a request this reader takes.
        case other
    }

    /// Reads the request head at the start of `bytes`.
    static func parse(_ bytes: ByteBuffer) -> Parse {
        bytes.withUnsafeReadableBytes { parse($0) }
    }

    static func parse(_ bytes: UnsafeRawBufferPointer) -> Parse {
        var reader = Reader(bytes: bytes)
        return reader.read()
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        mutating func read() -> Parse {
            // "GET " then an origin-form target up to a space.
            if let refused = expect("GET /") { return refused }
            let targetStart = index - 1
            while true {
                guard index < bytes.count else { return incompleteOrTooLong() }
                let byte = bytes[index]
                if byte == UInt8(ascii: " ") { break }
                guard RawRequestHead.isTargetByte(byte) else { return .other }
                index += 1
            }
            let path = string(targetStart..<index)
            index += 1
            if let refused = expect("HTTP/1.1\r\n") { return refused }
            var fields = HTTPFields()
            var host: String?
            while true {
                guard index < bytes.count else { return incompleteOrTooLong() }
                if bytes[index] == UInt8(ascii: "\r") {
                    guard index + 1 < bytes.count else { return incompleteOrTooLong() }
                    guard bytes[index + 1] == UInt8(ascii: "\n") else { return .other }
                    index += 2
                    break
                }
                guard fields.count < RawRequestHead.maxFields else { return .other }
                switch field() {
                case .incomplete: return incompleteOrTooLong()
                case .other: return .other
                case .field(let name, let value):
                    switch kind(of: name) {
                    case .refused:
                        return .other
                    case .connection:
                        // `keep-alive` alone, which HTTP/1.1 assumes anyway, changes nothing: the
                        // field is left out. Any other option (close, a field it names, an
                        // upgrade) is the decoder's.
                        guard equals(value, "keep-alive") else { return .other }
                    case .host:
                        // Trailing whitespace would stay in the codec's authority (NIO's decoder
                        // keeps it; other fields' values lose it as HTTPTypes makes them).
                        guard host == nil, bytes[value.upperBound] == UInt8(ascii: "\r") else { return .other }
                        host = string(value)
                    case .plain:
                        guard let name = HTTPField.Name(string(name)) else { return .other }
                        fields.append(HTTPField(name: name, value: string(value)))
                    }
                }
            }
            guard index <= RawRequestHead.maxHeadBytes, let host else { return .other }
            let request = HTTPRequest(method: .get, scheme: "http", authority: host, path: path, headerFields: fields)
            return .request(request, length: index)
        }

        /// Reads `literal`'s bytes: nil when they are there, else what the request is.
        private mutating func expect(_ literal: StaticString) -> Parse? {
            let expected = UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
            for byte in expected {
                guard index < bytes.count else { return incompleteOrTooLong() }
                guard bytes[index] == byte else { return .other }
                index += 1
            }
            return nil
        }

        private func incompleteOrTooLong() -> Parse {
            bytes.count >= RawRequestHead.maxHeadBytes ? .other : .incomplete
        }

        private enum Field {
            case field(name: Range<Int>, value: Range<Int>)
            case incomplete
            case other
        }

        /// One field line, `name:` OWS value OWS CRLF.
        private mutating func field() -> Field {
            let nameStart = index
            while true {
                guard index < bytes.count else { return .incomplete }
                let byte = bytes[index]
                if byte == UInt8(ascii: ":") { break }
                guard RawRequestHead.isTokenByte(byte) else { return .other }
                index += 1
            }
            let name = nameStart..<index
            guard !name.isEmpty else { return .other }
            index += 1
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") {
                index += 1
            }
            let valueStart = index
            var valueEnd = index
            while true {
                guard index < bytes.count else { return .incomplete }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\r") { break }
                if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                    index += 1
                    continue
                }
                guard byte > 0x20, byte < 0x7F else { return .other }
                index += 1
                valueEnd = index
            }
            guard index + 1 < bytes.count else { return .incomplete }
            guard bytes[index + 1] == UInt8(ascii: "\n") else { return .other }
            index += 2
            return .field(name: name, value: valueStart..<valueEnd)
        }

        private func string(_ range: Range<Int>) -> String {
            String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }

        private enum Kind {
            case plain
            case host
            /// A field that takes the request out of this reader's hands.
            case refused
            /// `Connection`.
            case connection
        }

        private func kind(of name: Range<Int>) -> Kind {
            switch name.count {
            case 4: return equals(name, "host") ? .host : .plain
            case 6: return equals(name, "expect") ? .refused : .plain
            case 7: return equals(name, "upgrade") ? .refused : .plain
            case 10: return equals(name, "connection") ? .connection : .plain
            case 14: return equals(name, "content-length") ? .refused : .plain
            case 17: return equals(name, "transfer-encoding") ? .refused : .plain
            default: return .plain
            }
        }

        /// Whether the bytes in `range` are `lowercased`, ignoring ASCII case.
        private func equals(_ range: Range<Int>, _ lowercased: StaticString) -> Bool {
            let expected = UnsafeRawBufferPointer(start: lowercased.utf8Start, count: lowercased.utf8CodeUnitCount)
            guard expected.count == range.count else { return false }
            for (offset, byte) in zip(range, expected) {
                let actual = bytes[offset]
                guard (actual &- UInt8(ascii: "A") < 26 ? actual | 0x20 : actual) == byte else { return false }
            }
            return true
        }
    }

    /// Whether `byte` may be in an origin-form target (RFC 3986: unreserved, sub-delims, `:`,
    /// `@`, `/`, `?` and `%`); no fragment.
    static func isTargetByte(_ byte: UInt8) -> Bool { targetBytes[Int(byte)] }

    /// Whether `byte` may be in a field name (RFC 9110 §5.6.2 `tchar`).
    static func isTokenByte(_ byte: UInt8) -> Bool { tokenBytes[Int(byte)] }

    private static let targetBytes = alphanumerics(and: "-._~!$&'()*+,;=:@/?%")
    private static let tokenBytes = alphanumerics(and: "!#$%&'*+-.^_`|~")

    /// A table of the 256 byte values: true for ASCII letters and digits and for `others`.
    private static func alphanumerics(and others: String) -> [Bool] {
        (0...255).map { (value: Int) -> Bool in
            let byte = UInt8(value)
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return others.utf8.contains(byte)
            }
        }
    }
}
#endif
