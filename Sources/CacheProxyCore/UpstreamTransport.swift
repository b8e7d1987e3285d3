// SPDX-License-Identifier: Apache-2.0

#if Proxy
import CachingClient
import HTTPTypes

/// The proxy's transport: the one it was given, with the hop-by-hop fields of every response removed
/// before the cache sees it, so that they are neither stored nor replayed.
struct UpstreamTransport: HTTPTransport {
    let base: any HTTPTransport

    func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse {
        var answer = try await base.send(request, body: body, timeout: timeout)
        answer.response.headerFields = HopByHop.stripped(answer.response.headerFields)
        return answer
    }
}
#endif
