// SPDX-License-Identifier: Apache-2.0

import HTTPCaching

extension StreamedBody {
    /// Bodies kept longer than this are stored on the global concurrent executor.
    static let largeStore = 1 << 20

    /// Stores a kept body with `store`: one longer than ``largeStore`` on the global concurrent
    /// executor when the request prefers another (``RequestTasks``), whose other work (an event
    /// loop's connections) would otherwise wait while its bytes are copied into an entry.
    static func store(
        _ whole: [UInt8],
        with store: @Sendable ([UInt8]) async -> ResponseLookup?
    ) async -> ResponseLookup? {
        guard whole.count > largeStore, RequestTasks.executor != nil else { return await store(whole) }
        return await withTaskExecutorPreference(globalConcurrentExecutor) { await store(whole) }
    }
}
