// SPDX-License-Identifier: Apache-2.0

import Metrics
import Synchronization

/// A metrics backend that counts, handed to one tier at a time so tests need no global
/// `MetricsSystem` bootstrap.
final class CountingMetricsFactory: MetricsFactory {
    final class CountingCounter: CounterHandler {
        let value = Atomic<Int64>(0)

        func increment(by amount: Int64) {
            value.add(amount, ordering: .relaxed)
        }

        func reset() {
            value.store(0, ordering: .relaxed)
        }
    }

    private let counters = Mutex<[String: CountingCounter]>([:])

    /// The value of the counter labelled `label`, or nil when none was made.
    func value(_ label: String) -> Int? {
        counters.withLock { $0[label] }.map { Int($0.value.load(ordering: .relaxed)) }
    }

    /// The labels of the counters made.
    var labels: Set<String> { counters.withLock { Set($0.keys) } }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        counters.withLock { counters in
            if let counter = counters[label] { return counter }
            let counter = CountingCounter()
            counters[label] = counter
            return counter
        }
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        NOOPMetricsHandler.instance
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        NOOPMetricsHandler.instance
    }

    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
