// SPDX-License-Identifier: Apache-2.0

/// The handles through which a ``StreamedBody`` is asked for: a request's reader, and the token
/// that starts a body nobody read.
extension StreamedBody {
    /// One request's reading of the body; reading stops when it is released.
    package final class Reader: Sendable {
        private let body: StreamedBody
        private let id: Int

        init(body: StreamedBody, id: Int) {
            self.body = body
            self.id = id
        }

        deinit { body.leave(id) }

        /// The next part, or nil after the last.
        /// - Throws: the body's failure when it broke off; ``Failure/tooSlow`` when this reader
        ///   was cut off; `CancellationError` when the reading task is cancelled.
        package func next() async throws -> [UInt8]? {
            while true {
                switch body.step(id) {
                case .part(let part): return part
                case .end: return nil
                case .failed(let error): throw error
                case .wait:
                    try Task.checkCancellation()
                    await body.wait(id)
                }
            }
        }
    }

    /// Starts a pump that waits to be asked for when it is released and no reader was made by
    /// then (a reader, once made, starts it as it reads or is let go): held by every copy of the
    /// answer that carries the body, so that a body nobody took is still read, stored and its
    /// connection given back.
    package final class StartToken: Sendable {
        private let body: StreamedBody

        init(body: StreamedBody) {
            self.body = body
        }

        deinit { body.startPump(unlessRead: true) }
    }
}
