// SPDX-License-Identifier: Apache-2.0

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libFuzzer target: what it does with each input, and its seeds made from real values.
struct FuzzTarget: Sendable {
    let name: String
    let run: @Sendable (UnsafeRawBufferPointer) -> Void
    let seeds: @Sendable () throws -> [[UInt8]]

    static let all: [FuzzTarget] = [
        FuzzTarget(name: "record", run: RecordTarget.run, seeds: RecordTarget.seeds),
        FuzzTarget(name: "segment", run: SegmentTarget.run, seeds: SegmentTarget.seeds),
        FuzzTarget(name: "snapshot", run: SnapshotTarget.run, seeds: SnapshotTarget.seeds),
        FuzzTarget(name: "variants", run: VariantIndexTarget.run, seeds: VariantIndexTarget.seeds),
        FuzzTarget(name: "response", run: ResponseCodecTarget.run, seeds: ResponseCodecTarget.seeds),
        FuzzTarget(name: "directives", run: DirectivesTarget.run, seeds: DirectivesTarget.seeds),
        FuzzTarget(name: "conditions", run: ConditionsTarget.run, seeds: ConditionsTarget.seeds),
        FuzzTarget(name: "sharedrow", run: SharedRowTarget.run, seeds: SharedRowTarget.seeds),
        FuzzTarget(name: "proxy", run: ProxyTarget.run, seeds: ProxyTarget.seeds),
        FuzzTarget(name: "rawhead", run: RawHeadTarget.run, seeds: RawHeadTarget.seeds),
        FuzzTarget(name: "origin", run: OriginTarget.run, seeds: OriginTarget.seeds),
    ]

    static let environmentName = "LAYEREDCACHE_FUZZ_TARGET"

    static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }

    /// The target the environment names, read once.
    static let selected: FuzzTarget? = getenv(environmentName).flatMap { named(String(cString: $0)) }
}

/// Stops the run with `message` when an invariant does not hold: libFuzzer keeps the input.
func check(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #file, line: UInt = #line) {
    if !condition { fatalError("invariant: \(message())", file: file, line: line) }
}

/// Reads the fuzzer's bytes as the values a target needs; past the end, every read is zero or
/// empty, so that any input is a valid program.
struct FuzzInput {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = Array(bytes)
    }

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { position >= bytes.count }

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T {
        var value: T = 0
        for index in 0..<MemoryLayout<T>.size {
            value |= T(truncatingIfNeeded: byte()) << (8 * index)
        }
        return value
    }

    /// A number in `0..<bound`.
    mutating func number(below bound: Int) -> Int {
        guard bound > 1 else { return 0 }
        return Int(integer(UInt32.self) % UInt32(clamping: bound))
    }

    /// A length byte (0...maximum) and that many bytes.
    mutating func bytes(upTo maximum: Int) -> [UInt8] {
        let count = min(Int(byte()), maximum)
        return take(count)
    }

    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, position + count)
        defer { position = max(position, end) }
        return position < end ? Array(bytes[position..<end]) : []
    }

    mutating func string(upTo maximum: Int) -> String {
        String(decoding: bytes(upTo: maximum), as: UTF8.self)
    }

    /// What is left.
    mutating func rest() -> [UInt8] {
        take(bytes.count - position)
    }
}

/// Bytes that do not compress: `count` of them from a small seed (xorshift).
func incompressible(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}

/// libFuzzer's entry point, for a process started by its own `main` (the runtime's archive holds
/// one): the selected target. This executable's `main` calls the driver with the same function.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.selected?.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
