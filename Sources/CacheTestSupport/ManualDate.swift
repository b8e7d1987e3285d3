// SPDX-License-Identifier: Apache-2.0

package import Foundation
import Synchronization

/// A wall clock that moves only when a test advances it: pass ``now`` where a configuration
/// takes a `now` source.
package final class ManualDate: Sendable {
    private let date: Mutex<Date>

    package init(_ start: Date = Date(timeIntervalSince1970: 1_790_000_000)) {
        date = Mutex(start)
    }

    /// The date now.
    package var current: Date { date.withLock { $0 } }

    /// A `now` source reading this clock.
    package var now: @Sendable () -> Date { { self.current } }

    /// Moves the clock forward by `seconds`.
    package func advance(by seconds: TimeInterval) {
        date.withLock { $0 += seconds }
    }
}
