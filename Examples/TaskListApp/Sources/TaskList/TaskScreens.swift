// SPDX-License-Identifier: Apache-2.0

import AsyncHTTPClientTransport
import CacheTiers
import CachingClient
import EntityCaching
import Foundation
import HTTPTypes

/// The app side: a list screen and a detail screen over an `EntityStore` of tasks, which asks
/// the API through the client's transport.
public struct TaskScreens: Sendable {
    public let store: EntityStore<TaskItem>
    private let authority: String
    private let transport = HTTPClientTransport()

    /// - Parameters:
    ///   - authority: the API's `host:port`.
    ///   - cache: the tiers the store keeps its entities and lists in.
    public init(authority: String, cache: TieredCache) throws {
        self.authority = authority
        store = try EntityStore(kind: "task", cache: cache)
    }

    /// The list of the tasks due on `due`.
    public static func dueOn(_ due: String) -> EntityQuery { EntityQuery("tasks", parameters: ["due": due]) }

    /// The list screen's answers: the cached list at once when there is one, then the refreshed.
    public func list(due: String, policy: CachePolicy = .staleWhileRevalidate) -> AsyncStream<QueryResult<TaskItem>> {
        store.observe(Self.dueOn(due), policy: policy, using: fetchList)
    }

    /// The next page of the list.
    public func nextPage(due: String) async throws -> QueryResult<TaskItem> {
        try await store.loadNextPage(Self.dueOn(due), using: fetchList)
    }

    /// The detail screen's answer: under `cacheFirst`, the stored task when the server confirmed it
    /// within 30 seconds; `networkFirst` asks the server first (pull to refresh).
    public func detail(_ id: Int, policy: CachePolicy = .cacheFirst) async -> EntityResult<TaskItem> {
        await store.entity(id, policy: policy, rule: .validated(within: .seconds(30)), using: fetchTask)
    }

    private func get(_ path: String, ifNoneMatch: String?) async throws -> HTTPTransportResponse {
        var request = HTTPRequest(method: .get, scheme: "http", authority: authority, path: path)
        if let ifNoneMatch { request.headerFields[.ifNoneMatch] = ifNoneMatch }
        return try await transport.send(request, body: nil, timeout: .seconds(30))
    }

    var fetchList: EntityStore<TaskItem>.QueryFetcher {
        { request in
            var path = "/tasks?due=\(request.query.parameters["due"] ?? "")"
            if let cursor = request.cursor { path += "&cursor=\(cursor)" }
            let answer = try await get(path, ifNoneMatch: request.validator)
            switch answer.response.status.code {
            case 304:
                return .notModified(freshFor: .seconds(60))
            case 200:
                return .page(
                    QueryPage(
                        entities: try JSONDecoder().decode([TaskItem].self, from: Data(answer.body)),
                        validator: answer.response.headerFields[.eTag],
                        nextCursor: answer.response.headerFields[HTTPField.Name("X-Next-Cursor")!],
                        freshFor: .seconds(60)
                    )
                )
            default:
                throw CachingClientError(code: .server, message: "tasks: \(answer.response.status)")
            }
        }
    }

    var fetchTask: EntityStore<TaskItem>.EntityFetcher {
        { request in
            let answer = try await get("/tasks/\(request.id)", ifNoneMatch: request.version)
            switch answer.response.status.code {
            case 304: return .notModified
            case 404: return .deleted
            case 200:
                let task = try JSONDecoder().decode(TaskItem.self, from: Data(answer.body))
                return .entity(task, version: answer.response.headerFields[.eTag])
            default:
                throw CachingClientError(code: .server, message: "task: \(answer.response.status)")
            }
        }
    }
}
