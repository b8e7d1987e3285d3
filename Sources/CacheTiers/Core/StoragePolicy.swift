// SPDX-License-Identifier: Apache-2.0

/// Where a cache may keep an entry: URLCache's three storage policies.
public struct StoragePolicy: Hashable, Sendable, CustomStringConvertible {
    private enum Base: Hashable, Sendable {
        case allowed
        case allowedInMemoryOnly
        case notAllowed
    }

    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// Memory and disk.
    public static var allowed: Self { Self(.allowed) }
    /// Memory only: nothing is written to disk.
    public static var allowedInMemoryOnly: Self { Self(.allowedInMemoryOnly) }
    /// Not stored at all.
    public static var notAllowed: Self { Self(.notAllowed) }

    /// Whether the memory tier may keep the entry.
    public var allowsMemory: Bool { base != .notAllowed }
    /// Whether the disk tier may keep the entry.
    public var allowsDisk: Bool { base == .allowed }

    public var description: String { String(describing: base) }
}
