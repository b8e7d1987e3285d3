// SPDX-License-Identifier: Apache-2.0

public import CachingClient

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What the store knows about one stored entity.
public struct EntityMetadata: Hashable, Sendable {
    /// When its current value was stored (from the server, a change feed, or the app).
    public var fetchedAt: Date
    /// When the server last confirmed it (with its value, or unchanged), or when the app stored it.
    public var validatedAt: Date
    /// Its server version (an `ETag`, an `updatedAt`), when the store's configuration reads one.
    public var version: String?
    /// Where its value came from: `FetchResult.Source.network` (a server answer,
    /// a change feed) or `FetchResult.Source.none` (the app's own mutation, not
    /// yet confirmed).
    public var source: FetchResult.Source
}

/// What the store knows about one query's cached list.
public struct QueryMetadata: Hashable, Sendable {
    /// When the list was last fetched whole (a 200).
    public var fetchedAt: Date
    /// When the server last confirmed it (a 200 or a 304).
    public var validatedAt: Date
    /// Until when the server said it stays fresh, when it said.
    public var expiresAt: Date?
    /// The server's validator for the list (its `ETag`, a version token), for the next
    /// conditional request.
    public var validator: String?
    /// The cursor of the next page, nil when the last page is loaded.
    public var nextCursor: String?
    /// The number of pages loaded.
    public var pageCount: Int
}

/// A query's answer: its entities, how fresh, where from, and what is missing.
///
/// A list whose index names an entity the store no longer holds (evicted) is never presented as
/// complete: ``missingIDs`` names them and ``isComplete`` is false (an observation with a policy
/// that may ask the network refetches instead).
public struct QueryResult<Entity: Identifiable & Sendable>: Sendable where Entity.ID: Sendable {
    /// The query.
    public var query: EntityQuery
    /// The entities of the list the store holds, in the list's order.
    public var items: [Entity]
    /// The IDs of the list whose entities the store does not hold (evicted, damaged).
    public var missingIDs: [Entity.ID]
    /// How fresh the list is: `Freshness.missing` when no list is stored.
    public var freshness: Freshness
    /// Where the answer came from: the cache, the network (a 200), revalidated (a 304), or none.
    public var source: FetchResult.Source
    /// The list's metadata, nil when none is stored.
    public var metadata: QueryMetadata?
    /// The change token the store's entities include all changes up to
    /// (``EntityStore/apply(_:upTo:)``), when one was recorded.
    public var changeToken: String?
    /// Whether no other answer follows in this observation.
    public var isFinal: Bool
    /// The error when the network was asked and failed (the answer is then the cached list, or
    /// none).
    public var error: CachingClientError?

    /// Whether every entity of the list is in ``items``.
    public var isComplete: Bool { missingIDs.isEmpty }
    /// Whether there is a list (possibly empty).
    public var hasAnswer: Bool { metadata != nil }
    /// Whether a further page can be loaded (``EntityStore/loadNextPage(_:using:)``).
    public var hasMorePages: Bool { metadata?.nextCursor != nil }
}

/// One entity's answer.
public struct EntityResult<Entity: Sendable>: Sendable {
    /// The entity, nil when none is stored (or the server says it was deleted).
    public var entity: Entity?
    /// How fresh it is by the read's ``EntityFreshnessRule``.
    public var freshness: Freshness
    /// Where the answer came from.
    public var source: FetchResult.Source
    /// Its metadata, nil when none is stored.
    public var metadata: EntityMetadata?
    /// Whether no other answer follows.
    public var isFinal: Bool
    /// The error when the network was asked and failed.
    public var error: CachingClientError?

    /// No entity: none stored, or deleted on the server.
    static func missing(source: FetchResult.Source, error: CachingClientError? = nil) -> Self {
        Self(entity: nil, freshness: .missing, source: source, metadata: nil, isFinal: true, error: error)
    }
}

/// When a stored entity counts as fresh for a detail read: its server version matches the one
/// the app knows is current, or the server confirmed it within a time.
public struct EntityFreshnessRule: Hashable, Sendable {
    /// Fresh when validated within this long; nil: only a version match makes it fresh.
    public var validatedWithin: Duration?
    /// Fresh when its stored version is this one (from a list that carries versions, a push).
    public var currentVersion: String?

    /// Creates a rule.
    public init(validatedWithin: Duration? = nil, currentVersion: String? = nil) {
        self.validatedWithin = validatedWithin
        self.currentVersion = currentVersion
    }

    /// Fresh when validated within `duration`.
    public static func validated(within duration: Duration) -> Self { Self(validatedWithin: duration) }
}

/// A change to apply to the store: from the app (a mutation) or from the server's change feed.
public enum EntityChange<Entity: Identifiable & Sendable>: Sendable where Entity.ID: Sendable {
    /// The entity is created or updated.
    case upsert(Entity)
    /// The entity with this ID is deleted.
    case delete(Entity.ID)
}

/// A request for one page of a query's list, given to the app's fetcher.
public struct QueryRequest: Sendable {
    /// The query.
    public var query: EntityQuery
    /// The validator of the stored list (send it as `If-None-Match`, or the API's equivalent);
    /// nil for an unconditional request. Never set with a ``cursor``.
    public var validator: String?
    /// The cursor of the page asked for; nil for the first page.
    public var cursor: String?
}

/// The server's answer to a ``QueryRequest``.
public enum QueryResponse<Entity: Sendable>: Sendable {
    /// The stored list is current (a 304): it stays fresh for `freshFor` (nil: the store's
    /// default). No entity is rewritten.
    case notModified(freshFor: Duration?)
    /// A page of the list.
    case page(QueryPage<Entity>)
}

/// One page of a query's list.
public struct QueryPage<Entity: Sendable>: Sendable {
    /// The page's entities, in the list's order.
    public var entities: [Entity]
    /// The list's validator for later conditional requests.
    public var validator: String?
    /// The cursor of the page after this one, nil on the last page.
    public var nextCursor: String?
    /// How long the list stays fresh; nil: the store's default.
    public var freshFor: Duration?

    /// Creates a page.
    public init(entities: [Entity], validator: String? = nil, nextCursor: String? = nil, freshFor: Duration? = nil) {
        self.entities = entities
        self.validator = validator
        self.nextCursor = nextCursor
        self.freshFor = freshFor
    }
}

/// A request for one entity, given to the app's fetcher.
public struct EntityRequest<ID: Sendable>: Sendable {
    /// The entity's ID.
    public var id: ID
    /// The stored version, for a conditional request; nil when none is stored.
    public var version: String?
}

/// The server's answer to an ``EntityRequest``.
public enum EntityResponse<Entity: Sendable>: Sendable {
    /// The stored version is current.
    case notModified
    /// The entity's current value, with its version (an `ETag`) when the answer carried one
    /// (nil: the configuration's ``EntityStore/Configuration/version`` reads it from the entity).
    case entity(Entity, version: String? = nil)
    /// The entity no longer exists.
    case deleted
}
