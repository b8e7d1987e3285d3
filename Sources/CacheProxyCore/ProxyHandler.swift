// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPCaching
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore

/// Answers one downstream request: forwards it through the caching client and writes the answer.
struct ProxyHandler: Sendable {
    let client: CachingHTTPClient
    let upstream: Upstream
    let statusHeader: HTTPField.Name?
    let maximumRequestBodyBytes: Int
    let metrics: ProxyMetrics
    let logger: Logger
    /// `PURGE` requests.
    let purger: Purger
    /// The tag fields answers lose on their way to the client (empty when they are exposed).
    let strippedFields: [HTTPField.Name]
    /// Whether a range goes upstream as asked (``CacheProxy/Configuration/forwardsRanges``).
    let forwardsRanges: Bool
    /// The spans of requests; nil without a tracer.
    let tracing: ProxyTracer?

    /// An answer: the head, the body, and how it counts.
    typealias Answer = (HTTPResponse, [UInt8], CacheStatus)
    /// An answer whose body may still be arriving: then read from the reader (the bytes are empty).
    typealias Reply = (HTTPResponse, [UInt8], CacheStatus, StreamedBody.Reader?)

    /// - Parameter channel: the connection; closed after an answer that says `Connection: close`
    ///   (HummingbirdCore keeps a connection open unless the request asked to close it).
    func respond(to request: Request, writer: consuming ResponseWriter, channel: any Channel) async throws {
        let start = logger.logLevel <= .debug ? ContinuousClock.now : nil
        let upload = upload(of: request)
        var (response, body, status, stream) =
            if let tracing {
                await tracing.serve(request.head) { await answerPassingInterim(request, upload, writer: writer) }
            } else {
                await answerPassingInterim(request, upload, writer: writer)
            }
        if let statusHeader, response.headerFields[statusHeader] == nil {
            response.headerFields[statusHeader] = status.rawValue
        }
        metrics.record(status)
        logger.debug(
            "request",
            metadata: [
                "method": "\(request.method)",
                "path": "\(request.head.path ?? "")",
                "status": "\(response.status.code)",
                "cache": "\(status.rawValue)",
                "duration": "\(start.map { ContinuousClock.now - $0 } ?? .zero)",
            ]
        )
        let responseBody: ResponseBody
        if let stream {
            // Parts go out as they come. A body that broke off throws here, and the connection
            // closes without the body's end: the client sees it cut, never a short body as whole.
            responseBody = ResponseBody { writer in
                do {
                    while let part = try await stream.next() {
                        try await writer.write(ByteBuffer(bytes: part))
                    }
                } catch {
                    // The connection closes here, before anything else can be written on it (a
                    // failure to close is a connection closed already). And the error thrown is
                    // the proxy's own: HummingbirdCore answers a responder that throws an
                    // `HTTPParserError` (what NIO's decoder of the *origin's* answer throws at an
                    // early end) as a request it could not parse, with a 400 written after the
                    // bytes already sent, which the client read as the rest of its body.
                    try? await channel.close()
                    throw BodyBrokeOff(cause: "\(error)")
                }
                try await writer.finish(nil)
            }
        } else {
            responseBody = body.isEmpty ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        }
        let closes = response.headerFields[.connection] == "close"
        do {
            try await writer.write(response: response, body: responseBody)
        } catch {
            await upload?.end(closing: channel)
            throw error
        }
        // The connection reads the next request only once the upload is over.
        await upload?.end(closing: channel)
        if closes { try? await channel.close() }
    }

    /// The longest request body read whole before it goes upstream; a longer one, or one of
    /// unknown length, goes as it is read.
    static let uploadThreshold = 256 << 10

    /// The request's body to send as it is read: for a method with a body other than `GET` and
    /// `HEAD`, declared longer than ``uploadThreshold`` or chunked; nil otherwise (read whole).
    private func upload(of request: Request) -> Upload? {
        guard request.method != .get, request.method != .head, request.method != .connect,
            request.method != Purger.method
        else { return nil }
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        if declared == nil, request.headers[.transferEncoding] == nil { return nil }
        if let declared, declared <= Self.uploadThreshold || declared > maximumRequestBodyBytes { return nil }
        return Upload(request.body, length: declared, limit: maximumRequestBodyBytes)
    }

    /// The answer to `request`, with the interim (1xx) responses the upstream sends before it
    /// written to `writer` as they come (RFC 9110 §15.2: a proxy forwards them), without their
    /// hop-by-hop fields. They are never stored: a later hit has the final answer only.
    ///
    /// The answer is worked out in a child task while this one writes what it hands on, so that
    /// the writer, which cannot leave this task, writes every interim response before the final
    /// one. Interim responses that come after the answer (from a revalidation it started in the
    /// background) are dropped.
    private func answerPassingInterim(
        _ request: Request,
        _ upload: Upload?,
        writer: borrowing ResponseWriter
    ) async -> Reply {
        // Interim answers are advice: past 16 waiting to be written, later ones are dropped.
        let (interims, interimSink) = AsyncStream.makeStream(
            of: HTTPResponse.self,
            bufferingPolicy: .bufferingOldest(16)
        )
        let handler = InterimResponseHandler { interim in interimSink.yield(interim) }
        return await withTaskGroup(of: Reply.self) { group in
            // Immediate: the answer is worked out on this thread from the start, without waiting
            // for another thread of the pool (a miss crosses threads often enough).
            group.addImmediateTask {
                defer { interimSink.finish() }
                var request = request
                return await InterimResponseHandler.$current.withValue(handler) { await answer(&request, upload) }
            }
            for await var interim in interims {
                interim.headerFields = HopByHop.stripped(interim.headerFields)
                // A downstream gone away shows when the final answer is written.
                try? await writer.writeInformationalHead(interim)
            }
            return await group.next()!
        }
    }

    private func answer(_ request: inout Request, _ upload: Upload?) async -> Reply {
        switch await prepare(&request, upload) {
        case .answer(let (response, body, status)): (response, body, status, nil)
        case .forward(let outgoing, let body): await forward(outgoing, body: body, upload: upload)
        }
    }

    /// What a request comes to before the cache sees it.
    private enum Prepared {
        /// The proxy's own answer (a refusal, a purge).
        case answer(Answer)
        /// The request to send upstream through the cache, with its body.
        case forward(HTTPRequest, [UInt8]?)
    }

    private func prepare(_ request: inout Request, _ upload: Upload?) async -> Prepared {
        if request.method == .connect {
            // A tunnel is not a cacheable exchange; say so in a framed answer, then close.
            return .answer(Self.refusal(.notImplemented, "CONNECT (tunnelling) is not supported\n", close: true))
        }
        // RFC 9112 §3.2: exactly one Host. The first becomes the authority; any other stays a field.
        guard request.head.authority != nil, request.headers[values: Self.host].isEmpty else {
            return .answer(Self.refusal(.badRequest, "a request needs exactly one Host field\n", close: true))
        }
        guard let outgoing = ProxyMapping.upstreamRequest(for: request.head, upstream: upstream) else {
            return .answer(Self.refusal(.badRequest, "the request target must be a path or an absolute URL\n"))
        }
        if request.method == Purger.method {
            return .answer(await purger.purge(outgoing, fields: request.headers))
        }
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > maximumRequestBodyBytes {
            return .answer(
                Self.refusal(.contentTooLarge, "the request body is larger than \(maximumRequestBodyBytes) bytes\n")
            )
        }
        let body: [UInt8]?
        if upload != nil {
            // Read as it goes upstream (``forward(_:body:upload:)``).
            body = nil
        } else if request.headers[.contentLength] == nil, request.headers[.transferEncoding] == nil {
            // RFC 9112 §6.3: no framing field, no body; nothing to read (the server drains).
            body = Self.sendsBody(outgoing.method) ? [] : nil
        } else {
            let received: ByteBuffer
            do {
                received = try await request.collectBody(upTo: maximumRequestBodyBytes)
            } catch is NIOTooManyBytesError {
                return .answer(
                    Self.refusal(
                        .contentTooLarge,
                        "the request body is larger than \(maximumRequestBodyBytes) bytes\n",
                        close: true
                    )
                )
            } catch {
                // Broken framing (a malformed chunk size, say): the rest of the stream is unreadable.
                return .answer(Self.refusal(.badRequest, "the request body is malformed: \(error)\n", close: true))
            }
            body =
                received.readableBytes > 0
                ? Array(received.readableBytesView) : (Self.sendsBody(outgoing.method) ? [] : nil)
        }
        return .forward(outgoing, body)
    }

    /// The answer to `outgoing` through the cache. A response whose body the upstream streams
    /// comes as its head arrives, the body read as it comes (a range is cut from a whole body:
    /// such a request is answered whole).
    private func forward(_ outgoing: HTTPRequest, body: [UInt8]?, upload: Upload?) async -> Reply {
        // A range is cut from the whole response, from the cache or fetched whole; or, forwarded,
        // answered from stored partial content or by the origin's 206.
        let whole = forwardsRanges ? outgoing : ProxyMapping.wholeRequest(for: outgoing)
        let streams = outgoing.headerFields[.range] == nil || upload != nil
        let result =
            streams
            ? await client.fetchStreaming(whole, body: body, bodyParts: upload?.source)
            : await client.fetch(whole, body: body, policy: .useProtocolCachePolicy)
        if let error = upload?.readFailure {
            // Broken framing (a malformed chunk size, say): the rest of the stream is unreadable.
            return Self.reply(Self.refusal(.badRequest, "the request body is malformed: \(error)\n", close: true))
        }
        if let upload, upload.isOverLimit {
            return Self.reply(
                Self.refusal(
                    .contentTooLarge,
                    "the request body is larger than \(maximumRequestBodyBytes) bytes\n",
                    close: true
                )
            )
        }
        var answer = ProxyMapping.answer(for: result, to: whole, statusHeader: statusHeader)
        answer.response.headerFields = SurrogateKeys.stripped(answer.response.headerFields, names: strippedFields)
        if answer.status == .error, let error = result.error {
            logger.debug("no answer from the upstream", metadata: ["error": "\(error)"])
        }
        if let stream = result.bodyStream {
            // No body goes with a HEAD's answer or a status without one: the reader is let go.
            let code = answer.response.status.code
            let hasBody = outgoing.method != .head && code >= 200 && code != 204 && code != 304
            return (answer.response, answer.body, answer.status, hasBody ? stream : nil)
        }
        let (response, bytes, status) = ProxyMapping.ranged(answer, for: outgoing)
        return (response, bytes, status, nil)
    }

    /// `answer` with no body still arriving.
    private static func reply(_ answer: Answer) -> Reply {
        (answer.0, answer.1, answer.2, nil)
    }

    /// An answer the proxy gives itself, counted as `cacheStatus` (a refusal is an error; an
    /// authorized purge is not); `close` ends the connection after it (when what follows on the
    /// connection cannot be trusted to be framed).
    static func refusal(
        _ status: HTTPResponse.Status,
        _ message: String,
        close: Bool = false,
        status cacheStatus: CacheStatus = .error
    ) -> (HTTPResponse, [UInt8], CacheStatus) {
        let body = Array(message.utf8)
        var fields: HTTPFields = [.contentType: "text/plain; charset=utf-8", .contentLength: String(body.count)]
        if close { fields[.connection] = "close" }
        return (HTTPResponse(status: status, headerFields: fields), body, cacheStatus)
    }

    /// Whether an empty body of `method` is sent as an empty body rather than none.
    private static func sendsBody(_ method: HTTPRequest.Method) -> Bool {
        switch method {
        case .get, .head, .options, .trace, .delete: false
        default: true
        }
    }

    private static let host = HTTPField.Name("Host")!
}

/// A streamed body that broke off, as the responder throws it: never the transport's own error,
/// which HummingbirdCore could take for one of the client's request.
struct BodyBrokeOff: Error, CustomStringConvertible {
    var cause: String
    var description: String { "the upstream's body broke off: \(cause)" }
}
#endif
