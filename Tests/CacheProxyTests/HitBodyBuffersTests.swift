// SPDX-License-Identifier: Apache-2.0

#if Proxy
import NIOCore
import Testing

@testable import CacheProxyCore

/// The shared buffers of whole stored bodies: found by the body's storage, never by its bytes
/// alone, and bounded.
@Suite struct HitBodyBuffersTests {
    static func storage(of buffer: ByteBuffer) -> UInt {
        buffer.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
    }

    static func body(_ byte: UInt8, count: Int = 8_192) -> [UInt8] {
        Array(repeating: byte, count: count)
    }

    @Test func theSameBodyIsWrittenFromOneBuffer() {
        let buffers = HitBodyBuffers(limitBytes: 1 << 20)
        let body = Self.body(1)
        let first = buffers.buffer(for: body, allocator: ByteBufferAllocator())
        let second = buffers.buffer(for: body, allocator: ByteBufferAllocator())
        #expect(Array(first.readableBytesView) == body && Array(second.readableBytesView) == body)
        #expect(Self.storage(of: first) == Self.storage(of: second))
        #expect(buffers.chargedBytes == 2 * body.count)
    }

    @Test func anotherBodyNeverGetsTheBufferOfAnEarlierOne() {
        let buffers = HitBodyBuffers(limitBytes: 1 << 20)
        var old: [UInt8]? = Self.body(1)
        let first = buffers.buffer(for: old!, allocator: ByteBufferAllocator())
        old = nil  // the slot keeps the old body alive: its storage cannot be reused
        let equal = Self.body(1)
        let replaced = Self.body(2)
        let second = buffers.buffer(for: replaced, allocator: ByteBufferAllocator())
        #expect(Array(second.readableBytesView) == replaced)
        let third = buffers.buffer(for: equal, allocator: ByteBufferAllocator())
        #expect(Array(third.readableBytesView) == equal && Self.storage(of: third) != Self.storage(of: first))
    }

    @Test func smallBodiesAndBodiesOverTheLimitAreCopied() {
        let buffers = HitBodyBuffers(limitBytes: 40_000)
        let small = Self.body(1, count: HitBodyBuffers.minimumBodyBytes - 1)
        let a = buffers.buffer(for: small, allocator: ByteBufferAllocator())
        let b = buffers.buffer(for: small, allocator: ByteBufferAllocator())
        #expect(Self.storage(of: a) != Self.storage(of: b) && Array(a.readableBytesView) == small)
        let large = Self.body(2, count: 20_001)
        let c = buffers.buffer(for: large, allocator: ByteBufferAllocator())
        #expect(Array(c.readableBytesView) == large && buffers.chargedBytes == 0)
    }

    @Test func theChargedBytesStayWithinTheLimit() {
        let buffers = HitBodyBuffers(limitBytes: 100_000)
        var bodies: [[UInt8]] = []
        for byte in 0..<UInt8(64) {
            let body = Self.body(byte, count: 10_000)
            bodies.append(body)
            let buffer = buffers.buffer(for: body, allocator: ByteBufferAllocator())
            #expect(Array(buffer.readableBytesView) == body)
            #expect(buffers.chargedBytes <= 100_000)
        }
        #expect(buffers.chargedBytes > 0)
        for body in bodies {
            #expect(Array(buffers.buffer(for: body, allocator: ByteBufferAllocator()).readableBytesView) == body)
        }
    }

    @Test func theLimitIsAnEighthOfTheMemoryBudget() {
        #expect(CacheProxy.hitBufferLimit(memoryCapacity: 64 << 20) == 8 << 20)
        #expect(CacheProxy.hitBufferLimit(memoryCapacity: 4 << 30) == 64 << 20)
        #expect(CacheProxy.hitBufferLimit(memoryCapacity: 0) == 0)
    }

    /// cache-proxy's memory tier holds 100,000 entries per 64 MiB of its budget, never fewer
    /// than the memory tier's default.
    @Test func theEntryCountFollowsTheMemoryBudget() {
        #expect(CacheProxy.memoryEntryLimit(memoryCapacity: 28_000_000) == 100_000)
        #expect(CacheProxy.memoryEntryLimit(memoryCapacity: 1_000_000_000) == 1_490_116)
        #expect(CacheProxy.memoryEntryLimit(memoryCapacity: .max) == Int(Int32.max))
    }
}
#endif
