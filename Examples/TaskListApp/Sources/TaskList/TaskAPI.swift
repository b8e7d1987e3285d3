// SPDX-License-Identifier: Apache-2.0

import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// A task.
public struct TaskItem: Codable, Sendable, Identifiable, Equatable {
    public var id: Int
    public var title: String
    public var due: String
    public var time: Int

    public init(id: Int, title: String, due: String, time: Int) {
        self.id = id
        self.title = title
        self.due = due
        self.time = time
    }
}

/// The server side: `GET /tasks?due=D[&cursor=N]` lists the tasks due on D by time, `pageSize` to
/// a page (`X-Next-Cursor` names the next), with an `ETag` over the whole list (`If-None-Match`
/// with it: 304); `GET /tasks/ID` is one task with its version as `ETag`, 404 once deleted.
public final class TaskAPI: Sendable {
    struct State {
        var tasks: [Int: TaskItem]
        var versions: [Int: Int]
        var requests = 0
    }

    private let state: Mutex<State>
    private let pageSize: Int

    public init(tasks: [TaskItem], pageSize: Int = 50) {
        state = Mutex(
            State(
                tasks: Dictionary(uniqueKeysWithValues: tasks.map { ($0.id, $0) }),
                versions: Dictionary(uniqueKeysWithValues: tasks.map { ($0.id, 1) })
            )
        )
        self.pageSize = pageSize
    }

    /// The requests served so far.
    public var requestCount: Int { state.withLock { $0.requests } }

    /// Changes a task on the server.
    public func update(_ task: TaskItem) {
        state.withLock {
            $0.tasks[task.id] = task
            $0.versions[task.id, default: 0] += 1
        }
    }

    /// The Hummingbird app serving the API on `port` (0: any free port); `onServerRunning` is
    /// told the port it listens on.
    public func application(
        port: Int,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router()
        router.get("tasks") { request, _ in self.list(request) }
        router.get("tasks/:id") { request, context in self.task(request, id: context.parameters.get("id", as: Int.self))
        }
        return Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) }
        )
    }

    private func list(_ request: Request) -> Response {
        state.withLock { state in
            state.requests += 1
            let due = request.uri.queryParameters.get("due") ?? ""
            let cursor = request.uri.queryParameters.get("cursor", as: Int.self) ?? 0
            let list = state.tasks.values.filter { $0.due == due }.sorted { ($0.time, $0.id) < ($1.time, $1.id) }
            let etag = "\"" + list.map { "\($0.id).\(state.versions[$0.id] ?? 0)" }.joined(separator: "-") + "\""
            if cursor == 0, request.headers[.ifNoneMatch] == etag {
                return Response(status: .notModified, headers: [.eTag: etag])
            }
            let page = Array(list.dropFirst(cursor).prefix(pageSize))
            var headers: HTTPFields = [.eTag: etag, .contentType: "application/json"]
            if cursor + page.count < list.count {
                headers[HTTPField.Name("X-Next-Cursor")!] = "\(cursor + page.count)"
            }
            return Self.json(page, headers: headers)
        }
    }

    private func task(_ request: Request, id: Int?) -> Response {
        state.withLock { state in
            state.requests += 1
            guard let id, let task = state.tasks[id] else { return Response(status: .notFound) }
            let etag = "\"v\(state.versions[id] ?? 0)\""
            if request.headers[.ifNoneMatch] == etag { return Response(status: .notModified, headers: [.eTag: etag]) }
            return Self.json(task, headers: [.eTag: etag, .contentType: "application/json"])
        }
    }

    private static func json<Value: Encodable>(_ value: Value, headers: HTTPFields) -> Response {
        do {
            let body = try JSONEncoder().encode(value)
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
        } catch {
            return Response(status: .internalServerError)
        }
    }
}
