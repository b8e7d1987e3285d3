// SPDX-License-Identifier: Apache-2.0

import CacheTiers
import HTTPTypes

/// Partial content a cache holds ([RFC 9111 §3.3–3.4](https://www.rfc-editor.org/rfc/rfc9111#section-3.3),
/// [RFC 9110 §14](https://www.rfc-editor.org/rfc/rfc9110#section-14)): byte ranges of one
/// representation, with the head of the newest `206` that brought some of them.
///
/// Its stored form (``stored``) is a `206` whose head lists one `Content-Range` line per range
/// held, in order, and whose body is those ranges' bytes one after another. It is never an answer
/// as it is: a `GET` for one range it holds is answered by ``answer(to:)`` with a `206` of exactly
/// that range; any other request finds nothing. Ranges combine only when both responses carry the
/// same strong entity tag and the same complete length (§3.4); once they cover the whole
/// representation, ``complete()`` is the `200` to store in its place.
struct PartialContent: Sendable {
    /// The stored form.
    private(set) var stored: CachedResponse
    /// The ranges held: sorted, disjoint and not adjacent (adjacent ones are merged).
    private(set) var ranges: [ClosedRange<Int>]
    /// The representation's complete length (the `/length` of `Content-Range`).
    let completeLength: Int

    /// The most ranges one stored partial response keeps: a client asking for scattered ranges
    /// cannot make its head grow without bound (a range beyond it is not stored).
    static let maximumRanges = 64

    /// A `206` as the origin sent it: one `Content-Range: bytes first-last/length` with a known
    /// complete length, and exactly those bytes in the body; nil otherwise (a multipart answer, an
    /// unknown length, a body of another size).
    init?(received response: CachedResponse) {
        guard response.response.status.code == 206 else { return nil }
        let lines = response.response.headerFields[values: .contentRange]
        guard lines.count == 1, let (range, length) = Self.parseContentRange(lines[0]),
            response.body.count == range.count
        else { return nil }
        var stored = response
        stored.response.headerFields[.contentLength] = nil
        self.stored = stored
        self.ranges = [range]
        self.completeLength = length
    }

    /// The stored form read back; nil when its ranges and body do not agree (the record is then
    /// dropped as any that does not decode).
    init?(stored: CachedResponse) {
        guard stored.response.status.code == 206 else { return nil }
        let lines = stored.response.headerFields[values: .contentRange]
        guard !lines.isEmpty, lines.count <= Self.maximumRanges else { return nil }
        var ranges: [ClosedRange<Int>] = []
        var length: Int?
        for line in lines {
            guard let (range, complete) = Self.parseContentRange(line), length == nil || length == complete,
                ranges.last.map({ $0.upperBound + 1 < range.lowerBound }) ?? true
            else { return nil }
            length = complete
            ranges.append(range)
        }
        guard let length, ranges.reduce(0, { $0 + $1.count }) == stored.body.count else { return nil }
        self.stored = stored
        self.ranges = ranges
        self.completeLength = length
    }

    /// A whole stored `200` seen as partial content that holds every byte, to combine a `206`
    /// with (§3.4); nil for an empty body.
    init?(complete response: CachedResponse) {
        guard response.response.status.code == 200, !response.body.isEmpty else { return nil }
        var stored = response
        stored.response.status = .partialContent
        stored.response.headerFields[.contentLength] = nil
        stored.response.headerFields[.contentRange] = "bytes 0-\(response.body.count - 1)/\(response.body.count)"
        self.stored = stored
        self.ranges = [0...(response.body.count - 1)]
        self.completeLength = response.body.count
    }

    /// The response's strong entity tag (RFC 9110 §8.8.3); nil without one.
    static func strongValidator(of response: HTTPResponse) -> String? {
        guard let value = response.headerFields[.eTag], let tag = CacheRules.entityTags(value).first,
            tag != "*", !tag.hasPrefix("W/")
        else { return nil }
        return tag
    }

    /// Whether every byte of the representation is held.
    var isComplete: Bool { ranges == [0...(completeLength - 1)] }

    /// `newer`'s ranges added to these (RFC 9111 §3.4): only when both carry the same strong
    /// entity tag and complete length; nil otherwise (the newer one then replaces this). The head
    /// is `newer`'s (its fields replace the stored ones); where the bytes may be kept is the more
    /// restrictive of the two; the tags are both's. Nil too when the result would hold more than
    /// ``maximumRanges`` ranges.
    func combined(with newer: PartialContent) -> PartialContent? {
        guard completeLength == newer.completeLength,
            let tag = Self.strongValidator(of: stored.response), tag == Self.strongValidator(of: newer.stored.response)
        else { return nil }
        var segments = zip(newer.ranges, newer.slices()).map { ($0, $1) }
        // The newer bytes come first where both hold a range (the same tag: the same bytes).
        segments.append(contentsOf: zip(ranges, slices()).map { ($0, $1) })
        segments.sort { $0.0.lowerBound < $1.0.lowerBound }
        var merged: [(range: ClosedRange<Int>, bytes: [UInt8])] = []
        for (range, bytes) in segments {
            if let last = merged.last, range.lowerBound <= last.range.upperBound + 1 {
                guard range.upperBound > last.range.upperBound else { continue }
                let skip = last.range.upperBound + 1 - range.lowerBound
                merged[merged.count - 1].bytes.append(contentsOf: bytes.dropFirst(skip))
                merged[merged.count - 1].range = last.range.lowerBound...range.upperBound
            } else {
                merged.append((range, Array(bytes)))
            }
        }
        guard merged.count <= Self.maximumRanges else { return nil }
        var result = newer.stored
        result.response.headerFields[.contentRange] = nil
        for segment in merged {
            result.response.headerFields.append(
                HTTPField(
                    name: .contentRange,
                    value: "bytes \(segment.range.lowerBound)-\(segment.range.upperBound)/\(completeLength)"
                )
            )
        }
        result.body = merged.flatMap(\.bytes)
        if stored.storagePolicy != .allowed { result.storagePolicy = stored.storagePolicy }
        result.tags.formUnion(stored.tags)
        return PartialContent(stored: result)
    }

    /// The whole representation as a `200`, once ``isComplete``.
    func complete() -> CachedResponse {
        var whole = stored
        whole.response.status = .ok
        whole.response.headerFields[.contentRange] = nil
        whole.response.headerFields[.contentLength] = String(completeLength)
        return whole
    }

    /// The answer to `request` from what is held: a `206` of the one byte range it asks for, when
    /// that range is held whole and `If-Range`, if any, names this representation (RFC 9110
    /// §13.1.5); nil otherwise — a request without `Range`, several ranges, a range not held or
    /// not satisfiable, a method other than `GET` — which the origin answers.
    func answer(to request: HTTPRequest) -> CachedResponse? {
        guard request.method == .get,
            let wanted = RangeRule.requestedBytes(request, fields: stored.response.headerFields, length: completeLength)
        else { return nil }
        var offset = 0
        for range in ranges {
            if range.contains(wanted.lowerBound) {
                guard range.contains(wanted.upperBound) else { return nil }
                let start = offset + (wanted.lowerBound - range.lowerBound)
                var answer = stored
                answer.response.headerFields[.contentRange] =
                    "bytes \(wanted.lowerBound)-\(wanted.upperBound)/\(completeLength)"
                answer.response.headerFields[.contentLength] = String(wanted.count)
                answer.body = Array(stored.body[start..<(start + wanted.count)])
                return answer
            }
            offset += range.count
        }
        return nil
    }

    /// The body's bytes of each of ``ranges``.
    private func slices() -> [ArraySlice<UInt8>] {
        var offset = 0
        return ranges.map { range in
            defer { offset += range.count }
            return stored.body[offset..<(offset + range.count)]
        }
    }

    /// `bytes first-last/length` with a known length and `first ≤ last < length`; nil for
    /// anything else (`bytes */length`, `bytes first-last/*`, another unit).
    static func parseContentRange(_ value: String) -> (ClosedRange<Int>, Int)? {
        let trimmed = value.trimmingOWS()
        guard trimmed.hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6)
        guard let dash = spec.firstIndex(of: "-"), let slash = spec.firstIndex(of: "/"), dash < slash,
            let first = RangeRule.position(spec[..<dash]),
            let last = RangeRule.position(spec[spec.index(after: dash)..<slash]),
            let length = RangeRule.position(spec[spec.index(after: slash)...]),
            first <= last, last < length
        else { return nil }
        return (first...last, length)
    }
}
