// SPDX-License-Identifier: Apache-2.0

import App
import Hummingbird

// swift run AppMain [cache-directory]
let directory = CommandLine.arguments.dropFirst().first
let app = try buildApplication(AppOptions(cacheDirectory: directory))
try await app.runService()
