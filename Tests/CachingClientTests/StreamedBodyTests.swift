// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation
import HTTPCaching
import HTTPTypes
import Synchronization
import Testing

@testable import CachingClient

/// ``StreamedBody`` without sockets: a scripted source, readers at their own pace, a manual clock.
@Suite struct StreamedBodyTests {
    /// A body whose parts the test gives, counting how many the pump asked for.
    final class ScriptedSource: Sendable {
        private let parts: Mutex<[Result<[UInt8], any Error>]>
        private let asked = Atomic<Int>(0)
        private let cancelled = Atomic<Bool>(false)

        init(_ parts: [Result<[UInt8], any Error>]) {
            self.parts = Mutex(parts)
        }

        convenience init(parts: [[UInt8]]) {
            self.init(parts.map { .success($0) })
        }

        var askedCount: Int { asked.load(ordering: .relaxed) }
        var wasCancelled: Bool { cancelled.load(ordering: .relaxed) }

        var source: ResponseBodySource {
            ResponseBodySource(
                next: {
                    self.asked.add(1, ordering: .relaxed)
                    let next = self.parts.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                    guard let next else { return nil }
                    return try next.get()
                },
                cancel: { self.cancelled.store(true, ordering: .relaxed) }
            )
        }
    }

    struct BrokeOff: Error {}

    static let request = HTTPRequest(method: .get, scheme: "http", authority: "example.com", path: "/a")

    /// A store that records the body it was given and says it stored it.
    final class Store: Sendable {
        let bodies = Mutex<[[UInt8]]>([])

        func callAsFunction(_ body: [UInt8]) -> ResponseLookup? {
            bodies.withLock { $0.append(body) }
            let at = Date(timeIntervalSince1970: 1_790_000_000)
            let stored = CachedResponse(
                response: HTTPResponse(status: .ok),
                body: body,
                requestTime: at,
                responseTime: at
            )
            return ResponseLookup.answering(StreamedBodyTests.request, with: stored)
        }
    }

    static func readAll(_ reader: StreamedBody.Reader) async throws -> [UInt8] {
        var whole: [UInt8] = []
        while let part = try await reader.next() { whole += part }
        return whole
    }

    @Test func aKeptBodyReachesEveryReaderAndIsStoredWhole() async throws {
        let parts: [[UInt8]] = [[1, 2, 3], [4, 5], [6]]
        let source = ScriptedSource(parts: parts)
        let store = Store()
        let body = StreamedBody(retainingUpTo: 100)
        let first = try #require(body.reader())
        body.pump(source.source, idleTimeout: .seconds(5), clock: TestClock()) { store($0) }
        #expect(try await Self.readAll(first) == [1, 2, 3, 4, 5, 6])
        #expect(await body.settled() != nil)
        #expect(store.bodies.withLock { $0 } == [[1, 2, 3, 4, 5, 6]])
        // A reader that comes after the end reads it all from the start.
        let late = try #require(body.reader())
        #expect(try await Self.readAll(late) == [1, 2, 3, 4, 5, 6])
    }

    @Test func aBodyLongerThanTheLimitIsPassedOnAndNotStored() async throws {
        let source = ScriptedSource(parts: [[1, 2, 3], [4, 5, 6], [7, 8, 9]])
        let store = Store()
        let body = StreamedBody(retainingUpTo: 5)
        let reader = try #require(body.reader())
        body.pump(source.source, idleTimeout: .seconds(5), clock: TestClock()) { store($0) }
        #expect(try await Self.readAll(reader) == [1, 2, 3, 4, 5, 6, 7, 8, 9])
        #expect(await body.settled() == nil)
        #expect(store.bodies.withLock { $0 }.isEmpty)
        // Its start is gone: nobody can read it from the start any more.
        #expect(body.reader() == nil)
    }

    @Test func aBodyThatBreaksOffFailsItsReadersAfterWhatCameAndStoresNothing() async throws {
        let source = ScriptedSource([.success([1, 2]), .failure(BrokeOff())])
        let store = Store()
        let body = StreamedBody(retainingUpTo: 100)
        let reader = try #require(body.reader())
        body.pump(source.source, idleTimeout: .seconds(5), clock: TestClock()) { store($0) }
        #expect(try await reader.next() == [1, 2])
        await #expect(throws: BrokeOff.self) { try await reader.next() }
        #expect(await body.settled() == nil)
        #expect(store.bodies.withLock { $0 }.isEmpty)
        #expect(source.wasCancelled)
    }

    @Test func aPassedOnBodyIsReadNoFurtherAheadThanTheWindow() async throws {
        // 100 parts of 4 bytes, a window of 10 bytes: the pump waits for the reader.
        let parts = (0..<100).map { index in (0..<4).map { UInt8(truncatingIfNeeded: index * 4 + $0) } }
        let source = ScriptedSource(parts: parts)
        let clock = TestClock()
        let body = StreamedBody(retainingUpTo: 0, window: 10)
        let reader = try #require(body.reader())
        body.pump(source.source, idleTimeout: .seconds(5), clock: clock) { _ in nil }
        // The pump holds three parts (12 bytes, over the window), then waits.
        await clock.waitForSleepers(1)
        #expect(source.askedCount <= 4)
        var whole: [UInt8] = []
        while let part = try await reader.next() {
            whole += part
            #expect(source.askedCount <= whole.count / 4 + 4)
        }
        let expected = parts.flatMap { $0 }
        #expect(whole == expected)
    }

    @Test
    func aReaderThatStopsIsCutOffAndTheOthersGoOn() async throws {
        let source = ScriptedSource(parts: (0..<10).map { [UInt8](repeating: UInt8($0), count: 4) })
        let clock = TestClock()
        let body = StreamedBody(retainingUpTo: 0, window: 8)
        let fast = try #require(body.reader())
        let stopped = try #require(body.reader())
        body.pump(source.source, idleTimeout: .seconds(5), clock: clock) { _ in nil }
        // The fast reader is ahead; the pump waits on the stopped one until 5 s have passed.
        var whole = try #require(try await fast.next())
        whole += try #require(try await fast.next())
        let reading = Task { try await Self.readAll(fast) }
        // Time moves only while someone sleeps. Not `waitForSleepers(1)`: once the pump is woken
        // and cuts the stopped reader, it may read the rest without sleeping again, and a wait
        // for a sleeper would then never end (this test hung so once). A sleeper seen here may
        // also be a part's deadline, which a source that answers at once never reaches.
        while body.readerCount == 2 {
            if clock.sleeperCount > 0 { clock.advance(by: .seconds(5)) }
            await Task.yield()
        }
        whole += try await reading.value
        let expected: [UInt8] = (0..<10).flatMap { [UInt8](repeating: UInt8($0), count: 4) }
        #expect(whole == expected)
        await #expect(throws: StreamedBody.Failure.tooSlow) {
            while try await stopped.next() != nil {}
        }
        #expect(await body.settled() == nil)
    }

    @Test func aPassedOnBodyWhoseReadersAllLeftIsGivenUp() async throws {
        let source = ScriptedSource(parts: (0..<100).map { [UInt8](repeating: UInt8($0), count: 4) })
        let clock = TestClock()
        let body = StreamedBody(retainingUpTo: 0, window: 8)
        var reader = body.reader()
        body.pump(source.source, idleTimeout: .seconds(5), clock: clock) { _ in nil }
        #expect(try await reader?.next() != nil)
        reader = nil
        #expect(await body.settled() == nil)
        #expect(source.wasCancelled)
        #expect(source.askedCount < 100)
    }

    @Test func aBodyTheBudgetCannotKeepIsPassedOnAndItsBytesGoBack() async throws {
        let held = Mutex(0)
        let budget = RetentionBudget(
            take: { count in
                held.withLock { held in
                    guard held + count <= 5 else { return false }
                    held += count
                    return true
                }
            },
            give: { count in held.withLock { $0 -= count } }
        )
        let source = ScriptedSource(parts: [[1, 2, 3], [4, 5, 6], [7]])
        let store = Store()
        var body: StreamedBody? = StreamedBody(retainingUpTo: 100, budget: budget)
        let reader = try #require(body?.reader())
        body?.pump(source.source, idleTimeout: .seconds(5), clock: TestClock()) { store($0) }
        #expect(try await Self.readAll(reader) == [1, 2, 3, 4, 5, 6, 7])
        #expect(await body?.settled() == nil)
        #expect(store.bodies.withLock { $0 }.isEmpty)
        #expect(held.withLock { $0 } == 0)
        body = nil
        #expect(held.withLock { $0 } == 0)
    }

    @Test func aKeptBodyGivesItsBytesBackWhenLetGo() async throws {
        let held = Mutex(0)
        let budget = RetentionBudget(
            take: { count in
                held.withLock { $0 += count }
                return true
            },
            give: { count in held.withLock { $0 -= count } }
        )
        let source = ScriptedSource(parts: [[1, 2], [3]])
        let store = Store()
        var body: StreamedBody? = StreamedBody(retainingUpTo: 100, budget: budget)
        body?.pump(source.source, idleTimeout: .seconds(5), clock: TestClock()) { store($0) }
        #expect(await body?.settled() != nil)
        #expect(held.withLock { $0 } == 3)
        body = nil
        // The pump's task lets go of the body once it settled; then the bytes are back.
        while held.withLock({ $0 }) != 0 { await Task.yield() }
        #expect(held.withLock { $0 } == 0)
    }

    @Test func aKeptBodyIsStoredWhenItsReaderLeft() async throws {
        let source = ScriptedSource(parts: [[1], [2], [3]])
        let store = Store()
        let body = StreamedBody(retainingUpTo: 100)
        var reader = body.reader()
        _ = reader
        reader = nil
        body.pump(source.source, idleTimeout: .seconds(5), clock: TestClock()) { store($0) }
        #expect(await body.settled() != nil)
        #expect(store.bodies.withLock { $0 } == [[1, 2, 3]])
    }

    /// How a test asks for a body whose pump starts on demand.
    enum Ask: String, CaseIterable, Sendable {
        case read, readerLetGo, settled, tokenLetGoUnread
    }

    /// A pump that starts on demand reads nothing until the body is asked for (no task exists
    /// before), then all of it and stores it, whichever way it is asked for; a token let go
    /// while a reader exists leaves the start to the reader.
    @Test(.timeLimit(.minutes(1)), arguments: Ask.allCases)
    func aPumpThatStartsOnDemandReadsNothingUntilAskedFor(_ ask: Ask) async throws {
        let source = ScriptedSource(parts: [[1, 2], [3]])
        let store = Store()
        let (settledSignal, signal) = AsyncStream.makeStream(of: Void.self)
        let body = StreamedBody(retainingUpTo: 100)
        var reader = ask == .tokenLetGoUnread ? nil : body.reader()
        var token = body.pump(
            source.source,
            startsOnDemand: true,
            idleTimeout: .seconds(5),
            clock: TestClock(),
            store: { store($0) },
            whenSettled: { signal.finish() }
        )
        #expect(token != nil)
        if reader != nil {
            token = nil
            #expect(source.askedCount == 0)
        }
        #expect(source.askedCount == 0)
        switch ask {
        case .read: #expect(try await Self.readAll(try #require(reader)) == [1, 2, 3])
        case .readerLetGo: reader = nil
        case .settled: #expect(await body.settled() != nil)
        case .tokenLetGoUnread: token = nil
        }
        for await _ in settledSignal {}
        #expect(source.askedCount == 3)
        #expect(store.bodies.withLock { $0 } == [[1, 2, 3]])
        _ = (reader, token)
    }
}
