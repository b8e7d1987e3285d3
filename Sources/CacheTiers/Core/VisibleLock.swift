// SPDX-License-Identifier: Apache-2.0

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a pthread mutex: a lock ThreadSanitizer sees. `Synchronization.Mutex` waits on
/// a futex that ThreadSanitizer does not model, and it reports the accesses such a lock guards as
/// races. State that many tasks touch at once (a client's deadlines and flights, the shared
/// tier's write queue, the removal ledger) sits behind this lock, so that a sanitizer run can
/// tell a real race from that; an uncontended lock costs about what `Mutex`'s does.
package final class VisibleLock<Value> {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` on the value with the lock held.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

// @unchecked: `value` is only read or written between lock and unlock of `mutex`, and it is
// Sendable, so what a closure takes out of it may cross to another task.
extension VisibleLock: @unchecked Sendable where Value: Sendable {}
