// SPDX-License-Identifier: Apache-2.0

import ArgumentParser

/// `cache-tool`: inspect and maintain a LayeredCache disk directory.
@main
struct CacheTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache-tool",
        abstract: "Inspect and maintain a LayeredCache disk directory."
    )
}
