// SPDX-License-Identifier: Apache-2.0

import Testing

@testable import HTTPCaching

@Suite struct CacheControlTests {
    /// OWS is spaces and tabs (RFC 9110 §5.6.3), trimmed scalar by scalar: a space before a
    /// combining mark goes too (found by the `directives` fuzz target: trimmed by `Character`, the
    /// space stayed, as one grapheme with the mark, so a directive scanned from its own written
    /// form came back with another name).
    @Test func owsIsTrimmedBeforeACombiningMark() {
        #expect(" \u{0612}x ".trimmingOWS() == "\u{0612}x")
        #expect("\t \u{301}".trimmingOWS() == "\u{301}")
        #expect(" \t max-age \t".trimmingOWS() == "max-age")
        var names: [String] = []
        DirectiveScanner.scan("a, \u{0612}b=1") { name, _ in names.append(name) }
        #expect(names == ["a", "\u{0612}b"])
    }

    /// A quoted-string's escapes are read byte by byte: a backslash before a combining mark
    /// escapes the mark's first byte, and a backslash that is one grapheme with a mark is still a
    /// backslash (the `directives` fuzz target's harness escaped by `Character` and missed it).
    @Test func aBackslashBeforeACombiningMarkIsAnEscape() {
        var arguments: [String?] = []
        DirectiveScanner.scan("a=\"x\\\\\u{059C}y\", b=\"\\\u{059C}\"") { _, argument in arguments.append(argument) }
        #expect(arguments == ["x\\\u{059C}y", "\u{059C}"])
    }
}
