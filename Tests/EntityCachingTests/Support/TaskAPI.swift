// SPDX-License-Identifier: Apache-2.0

#if AsyncHTTPClient
import AsyncHTTPClientTransport
import CachingClient
import EntityCaching
import Foundation
import HTTPTypes
import Synchronization
import TestOriginSupport

/// A task of the loopback API.
struct TaskItem: Codable, Sendable, Identifiable, Hashable {
    var id: Int
    var title: String
    var due: String
    var time: Int
}

/// A small JSON API on a real loopback socket: `GET /tasks?due=D` lists the tasks due on D
/// sorted by time, two to a page with `&cursor=N` (the next cursor in `X-Next-Cursor`), with an
/// `ETag` over the list; `If-None-Match` with the current one gets a 304. `GET /tasks/ID` is one
/// task (`ETag`: its version), 404 when deleted. It counts its requests and the 304s it sent.
final class TaskAPI: Sendable {
    struct State {
        var tasks: [Int: TaskItem] = [:]
        var versions: [Int: Int] = [:]
        var requests: [String] = []
        var notModified = 0
        var failing = false
        var pageSize = 100
    }

    let state: Mutex<State>
    private let origin: Mutex<RawOrigin?> = Mutex(nil)

    init(tasks: [TaskItem]) {
        var state = State()
        for task in tasks {
            state.tasks[task.id] = task
            state.versions[task.id] = 1
        }
        self.state = Mutex(state)
    }

    func start() async throws {
        let started = try await RawOrigin.start(answeringHeads: { [self] method, path, head in
            answer(method: method, path: path, head: head)
        })
        origin.withLock { $0 = started }
    }

    func stop() async {
        await origin.withLock { $0 }?.stop()
    }

    var baseURL: String { origin.withLock { $0?.baseURL ?? "" } }
    var requests: [String] { state.withLock { $0.requests } }
    var notModifiedCount: Int { state.withLock { $0.notModified } }

    func update(_ task: TaskItem) {
        state.withLock { state in
            state.tasks[task.id] = task
            state.versions[task.id, default: 0] += 1
        }
    }

    func setFailing(_ failing: Bool) { state.withLock { $0.failing = failing } }
    func setPageSize(_ size: Int) { state.withLock { $0.pageSize = size } }

    private func answer(method: String, path: String, head: String) -> [UInt8] {
        let ifNoneMatch = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("if-none-match:") }
            .map { String($0.dropFirst("if-none-match:".count)).trimmingCharacters(in: .whitespaces) }
        return state.withLock { state -> [UInt8] in
            state.requests.append(path)
            if state.failing { return Self.response(status: "503 Service Unavailable", headers: [], body: []) }
            let components = URLComponents(string: path)
            let items = Dictionary(
                (components?.queryItems ?? []).map { ($0.name, $0.value ?? "") },
                uniquingKeysWith: { $1 }
            )
            let route = components?.path ?? path
            if route.hasPrefix("/tasks/"), let id = Int(route.dropFirst("/tasks/".count)) {
                guard let task = state.tasks[id] else {
                    return Self.response(status: "404 Not Found", headers: [], body: [])
                }
                let etag = "\"v\(state.versions[id] ?? 0)\""
                if ifNoneMatch == etag {
                    state.notModified += 1
                    return Self.response(status: "304 Not Modified", headers: [("ETag", etag)], body: [])
                }
                return Self.response(status: "200 OK", headers: [("ETag", etag)], body: Self.json(task))
            }
            let list = state.tasks.values.filter { $0.due == items["due"] }.sorted {
                ($0.time, $0.id) < ($1.time, $1.id)
            }
            let etag = "\"" + list.map { "\($0.id).\(state.versions[$0.id] ?? 0)" }.joined(separator: "-") + "\""
            let start = Int(items["cursor"] ?? "0") ?? 0
            if start == 0, ifNoneMatch == etag {
                state.notModified += 1
                return Self.response(status: "304 Not Modified", headers: [("ETag", etag)], body: [])
            }
            let page = Array(list.dropFirst(start).prefix(state.pageSize))
            var headers = [("ETag", etag), ("Cache-Control", "max-age=60")]
            if start + page.count < list.count { headers.append(("X-Next-Cursor", "\(start + page.count)")) }
            return Self.response(status: "200 OK", headers: headers, body: Self.json(page))
        }
    }

    private static func json<Value: Encodable>(_ value: Value) -> [UInt8] {
        do {
            return Array(try JSONEncoder().encode(value))
        } catch {
            // A bug of the test: the empty body fails to decode, visibly.
            return []
        }
    }

    private static func response(status: String, headers: [(String, String)], body: [UInt8]) -> [UInt8] {
        var head = "HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        return Array((head + "\r\n").utf8) + body
    }
}

/// The app's side: fetchers that speak to the API through the client's transport.
struct TaskFetchers: Sendable {
    let baseURL: String
    let transport = HTTPClientTransport()

    private func get(_ path: String, ifNoneMatch: String?) async throws -> HTTPTransportResponse {
        var request = HTTPRequest(method: .get, scheme: "http", authority: String(baseURL.dropFirst(7)), path: path)
        if let ifNoneMatch { request.headerFields[.ifNoneMatch] = ifNoneMatch }
        // The deadline runs on the real clock; nothing here waits on it.
        return try await transport.send(request, body: nil, timeout: .seconds(600))
    }

    var query: EntityStore<TaskItem>.QueryFetcher {
        { request in
            var path = "/tasks?due=\(request.query.parameters["due"] ?? "")"
            if let cursor = request.cursor { path += "&cursor=\(cursor)" }
            let answer = try await get(path, ifNoneMatch: request.validator)
            switch answer.response.status.code {
            case 304:
                return .notModified(freshFor: .seconds(60))
            case 200:
                let tasks = try JSONDecoder().decode([TaskItem].self, from: Data(answer.body))
                return .page(
                    QueryPage(
                        entities: tasks,
                        validator: answer.response.headerFields[.eTag],
                        nextCursor: answer.response.headerFields[HTTPField.Name("X-Next-Cursor")!],
                        freshFor: .seconds(60)
                    )
                )
            default:
                throw CachingClientError(code: .server, message: "status \(answer.response.status.code)")
            }
        }
    }

    var entity: EntityStore<TaskItem>.EntityFetcher {
        { request in
            let answer = try await get("/tasks/\(request.id)", ifNoneMatch: request.version)
            switch answer.response.status.code {
            case 304: return .notModified
            case 404: return .deleted
            case 200:
                let task = try JSONDecoder().decode(TaskItem.self, from: Data(answer.body))
                return .entity(task, version: answer.response.headerFields[.eTag])
            default: throw CachingClientError(code: .server, message: "status \(answer.response.status.code)")
            }
        }
    }
}
#endif
