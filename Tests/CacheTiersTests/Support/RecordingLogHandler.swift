// SPDX-License-Identifier: Apache-2.0

import Logging
import Synchronization

/// A log handler that keeps every message it is given, for tests that check what was reported.
final class LogRecording: Sendable {
    private let messages = Mutex<[String]>([])

    /// A logger whose messages (at every level) this recording keeps.
    func logger() -> Logger {
        var logger = Logger(label: "test") { _ in RecordingLogHandler(recording: self) }
        logger.logLevel = .trace
        return logger
    }

    /// The messages logged so far, in order.
    var all: [String] { messages.withLock { $0 } }

    fileprivate func append(_ message: String) { messages.withLock { $0.append(message) } }
}

private struct RecordingLogHandler: LogHandler {
    let recording: LogRecording
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        recording.append("\(event.message)")
    }
}
