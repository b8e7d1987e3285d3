// SPDX-License-Identifier: Apache-2.0

import Testing

@Suite struct HTTPCachingPlaceholderTests {
    @Test func moduleBuilds() {
        #expect(Bool(true))
    }
}
