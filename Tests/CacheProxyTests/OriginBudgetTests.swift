// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPTypes
import TestOriginSupport
import Testing

@testable import CacheProxyCore

/// What an ``OriginTransport``'s exchanges hold at once is bounded over every connection: bodies
/// that would take more fail with `overloaded`, and what they took is given back.
@Suite struct OriginBudgetTests {
    /// Four origins' bodies of 300 KiB stall in flight under a budget of 1 MiB: at least one
    /// exchange fails with `overloaded`, the peak stays within the budget, and once the rest end
    /// nothing is held.
    @Test(.timeLimit(.minutes(3)))
    func bodiesInFlightStayWithinTheBudget() async throws {
        let origin = try await TestOrigin.start()
        let budget = 1 << 20
        let transport = OriginTransport(
            configuration: .init(maximumBodyBytes: 512 << 10, maximumBufferedBytes: budget)
        )
        // No Content-Length is taken up front beyond what fits: the body arrives and stalls.
        origin.setDefault(
            .stallBody(firstBytes: [UInt8](repeating: 120, count: 300 << 10), declaredLength: 400 << 10),
            for: "/big"
        )
        let request = HTTPRequest(method: .get, scheme: "http", authority: origin.authority, path: "/big")
        let codes = await withTaskGroup(of: CachingClientError.Code?.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    do {
                        _ = try await transport.send(request, body: nil, timeout: .seconds(60))
                        return nil
                    } catch {
                        return (error as? CachingClientError)?.code
                    }
                }
            }
            // The first to end is one the budget cut (the others stall); then the origin goes.
            var codes = [await group.next() ?? nil]
            #expect(transport.budget.peak <= budget)
            await origin.stop()
            for await code in group { codes.append(code) }
            return codes
        }
        #expect(codes.first == .overloaded)
        #expect(codes.allSatisfy { $0 != nil })
        #expect(transport.budget.peak <= budget && transport.budget.peak >= 600 << 10)
        #expect(transport.budget.bytesInUse == 0)
        await transport.shutdown()
    }

    /// A budget that holds every answer changes nothing, and gives everything back.
    @Test func answersWithinTheBudgetGiveBackWhatTheyTook() async throws {
        let origin = try await TestOrigin.start()
        let transport = OriginTransport(configuration: .init(maximumBufferedBytes: 1 << 20))
        origin.setDefault(.ok(String(repeating: "x", count: 100_000)), for: "/ok")
        let request = HTTPRequest(method: .get, scheme: "http", authority: origin.authority, path: "/ok")
        // The deadline is not what this test checks: a whole test run holds both cores for its
        // first 20-30 seconds, and a 30-second deadline was once missed there.
        for _ in 0..<20 {
            let answer = try await transport.send(request, body: nil, timeout: .seconds(120))
            #expect(answer.body.count == 100_000)
        }
        #expect(transport.budget.bytesInUse == 0 && transport.budget.peak >= 100_000)
        await transport.shutdown()
        await origin.stop()
    }
}
#endif
