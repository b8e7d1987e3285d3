// SPDX-License-Identifier: Apache-2.0

import HTTPTypes

@testable import HTTPCaching

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `Cache-Control`, `CDN-Cache-Control` (RFC 9213) and `Vary` over arbitrary field values: the
/// directive scanner's items survive being written out and scanned again; every delta-seconds
/// directive is in range and, given twice, the most restrictive wins (RFC 9111 §4.2.1); a shared
/// cache obeys a valid targeted field (an RFC 8941 Dictionary, known directives well typed) in
/// place of `Cache-Control`, and an invalid one not at all; `Accept-Language` weights read without
/// a crash and a plain tag is its own first choice; the `Accept-*` fast path
/// agrees with the general one whenever it answers.
enum DirectivesTarget {
    static func run(_ data: UnsafeRawBufferPointer) {
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
        let value = lines.first ?? ""
        let targeted = lines.count > 1 ? lines[1] : ""
        let vary = lines.count > 2 ? lines[2] : ""

        var items: [Item] = []
        DirectiveScanner.scan(value) { items.append(Item(name: $0, argument: $1)) }
        var again: [Item] = []
        DirectiveScanner.scan(items.map(\.serialized).joined(separator: ", ")) {
            again.append(Item(name: $0, argument: $1))
        }
        check(again == items, "scan(write(scan(x))) == scan(x)")

        let directives = CacheControl(parsing: value)
        for seconds in [
            directives.maxAge, directives.sharedMaxAge, directives.minFresh, directives.staleWhileRevalidate,
            directives.staleIfError,
        ] {
            if let seconds { check((0...CacheControl.maximumDeltaSeconds).contains(seconds), "delta-seconds range") }
        }
        let maxAges = items.filter { $0.name == "max-age" }.map { CacheControl.seconds($0.argument) ?? 0 }
        check(directives.maxAge == maxAges.min(), "max-age: the most restrictive wins")
        let sharedMaxAges = items.filter { $0.name == "s-maxage" }.map { CacheControl.seconds($0.argument) ?? 0 }
        check(directives.sharedMaxAge == sharedMaxAges.min(), "s-maxage: the most restrictive wins")
        check(directives.noStore == items.contains { $0.name == "no-store" }, "no-store")

        var fields = HTTPFields()
        fields[.cacheControl] = value
        fields[.cdnCacheControl] = targeted
        fields[.vary] = vary
        let shared = CacheRules(mode: .shared).responseDirectives(fields)
        let privateDirectives = CacheRules(mode: .private).responseDirectives(fields)
        check(privateDirectives == CacheControl(fields), "a private cache reads Cache-Control")
        let targetedLines = fields[values: .cdnCacheControl]
        if !targetedLines.isEmpty, let obeyed = CacheRules.targetedDirectives(parsing: targetedLines) {
            check(shared == obeyed, "a shared cache obeys a valid CDN-Cache-Control")
        } else {
            check(shared == CacheControl(fields), "without a valid targeted field, Cache-Control")
        }
        let response = HTTPResponse(status: .ok, headerFields: fields)
        let request = HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/")
        for rules in [CacheRules(mode: .shared), CacheRules(mode: .private)] {
            if rules.isStorable(response, for: request) {
                check(
                    !rules.responseDirectives(fields).noStore || rules.responseDirectives(fields).mustUnderstand,
                    "no-store stored"
                )
            }
            let lifetime = rules.freshnessLifetime(of: response, responseTime: Date(timeIntervalSince1970: 0))
            check(lifetime >= 0 && lifetime.isFinite, "a freshness lifetime of \(lifetime)")
        }

        if let names = VaryRule.fieldNames(in: fields) {
            check(names == Array(Set(names)).sorted(), "Vary names sorted and distinct")
            _ = VaryRule.normalizedValues(of: names, in: fields)
        }
        for list in [value, targeted, vary] {
            if let fast = VaryRule.acceptedSetOfPlainTokens(list) {
                let general = VaryRule.acceptedSet(list.split(separator: ",", omittingEmptySubsequences: false))
                check(fast == general, "Accept-* fast path \(fast.debugDescription) != \(general.debugDescription)")
            }
        }

        // Accept-Language by weight: any list reads without a crash; a plain tag is its own
        // request's first choice.
        _ = LanguagePreference.isFirstChoice(vary, for: [value, targeted])
        if !vary.isEmpty, vary.unicodeScalars.allSatisfy({ $0 == "-" || ($0.isASCII && $0.properties.isAlphabetic) }) {
            check(LanguagePreference.isFirstChoice(vary, for: [vary]), "\(vary) is not the first choice of \(vary)")
        }
    }

    struct Item: Equatable {
        var name: String
        var argument: String?

        /// The item as a sender writes it, its argument always quoted. Escaped scalar by scalar:
        /// by `Character`, a backslash before a combining mark is one grapheme with it and went
        /// unescaped (the directives target's own finding, 2026-11-26; the scanner reads bytes).
        var serialized: String {
            guard let argument else { return name }
            var quoted = "\""
            for scalar in argument.unicodeScalars {
                if scalar == "\"" || scalar == "\\" { quoted.unicodeScalars.append("\\") }
                quoted.unicodeScalars.append(scalar)
            }
            return name + "=" + quoted + "\""
        }
    }

    static func seeds() throws -> [[UInt8]] {
        [
            "public, max-age=3600, s-maxage=60, stale-while-revalidate=30\nmax-age=10\naccept-encoding",
            "no-cache=\"set-cookie, x-a\", private=\"x-b\", max-age=3600, max-age=0\n\nAccept-Language, *",
            "s-maxage=-5, must-revalidate, no-store\n  \ngzip, br;q=0, GZIP",
            "max-stale, min-fresh=5, only-if-cached, immutable\nno-store, max-age=99999999999\nbr, deflate",
        ].map { Array($0.utf8) }
    }
}
