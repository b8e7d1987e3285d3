// SPDX-License-Identifier: Apache-2.0

import HTTPTypes
import Logging
import Synchronization

/// Sending one request through the transport: whole, or streamed where the caller and the
/// transport stream.
extension CachingHTTPClient {
    /// Sends `request`: the answer whole, or with `streams` through a transport that streams,
    /// its head with the body still to read.
    func send(
        _ request: HTTPRequest,
        body: [UInt8]?,
        bodyParts: RequestBodySource?,
        streams: Bool
    ) async throws -> (HTTPTransportResponse, StreamedTransportResponse?) {
        exchanges.add(1, ordering: .relaxed)
        configuration.logger.debug(
            "network request",
            metadata: ["method": "\(request.method)", "path": "\(request.path ?? "")"]
        )
        let timeout = configuration.requestTimeout
        if streams, let streaming = streamingTransport {
            let streamed: StreamedTransportResponse
            if let tracing {
                streamed = try await tracing.exchange(request, head: \.response) { outgoing in
                    try await streaming.stream(outgoing, body: body, bodyParts: bodyParts, timeout: timeout)
                }
            } else {
                streamed = try await streaming.stream(request, body: body, bodyParts: bodyParts, timeout: timeout)
            }
            if let whole = streamed.whole {
                // A short body came whole with its head: the answer is taken as any whole one.
                return (HTTPTransportResponse(response: streamed.response, body: whole), nil)
            }
            return (HTTPTransportResponse(response: streamed.response), streamed)
        }
        // A transport that does not stream takes the body whole.
        let body = try await bodyParts?.collect() ?? body
        guard let tracing else {
            return (try await transport.send(request, body: body, timeout: timeout), nil)
        }
        return (
            try await tracing.exchange(request, head: \.response) { outgoing in
                try await transport.send(outgoing, body: body, timeout: timeout)
            }, nil
        )
    }

    /// The whole of `body`, each part within the request timeout.
    func collect(_ body: ResponseBodySource) async throws -> [UInt8] {
        var whole: [UInt8] = []
        let (timeout, clock) = (configuration.requestTimeout, configuration.clock)
        while let part = try await withExchangeDeadline(timeout, clock: clock, { try await body.next() }) {
            whole += part
        }
        return whole
    }

    /// Runs `body` in an internal span named `name` when the client is traced.
    func traced<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
        guard let tracing else { return try await body() }
        return try await tracing.span(name, body)
    }
}
