// SPDX-License-Identifier: Apache-2.0

import CacheTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real, small filesystem that tests can fill: a tmpfs mounted on a fresh directory. Mounting
/// needs root (CI runs as root); elsewhere ``mount(bytes:)`` says why it cannot.
struct FullFilesystem {
    let directory: TemporaryDirectory
    var path: String { directory.path }

    /// Mounts a tmpfs of `bytes`, or returns why it cannot.
    static func mount(bytes: Int) -> Result<FullFilesystem, MountRefusal> {
        #if os(Linux)
        guard geteuid() == 0 else { return .failure(MountRefusal(reason: "not root: cannot mount a tmpfs")) }
        let directory = TemporaryDirectory("tmpfs")
        let status = run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(bytes),mode=0700", "tmpfs", directory.path])
        guard status == 0 else {
            directory.remove()
            return .failure(MountRefusal(reason: "mount -t tmpfs failed with status \(status)"))
        }
        return .success(FullFilesystem(directory: directory))
        #else
        return .failure(MountRefusal(reason: "tmpfs is Linux only"))
        #endif
    }

    struct MountRefusal: Error { var reason: String }

    /// Fills the filesystem until a write fails with ENOSPC; returns the filler's path.
    @discardableResult
    func fill() -> String {
        let filler = path + "/filler"
        guard FileManager.default.createFile(atPath: filler, contents: nil) else { return filler }
        guard let handle = FileHandle(forWritingAtPath: filler) else { return filler }
        let chunk = Data(count: 4096)
        while (try? handle.write(contentsOf: chunk)) != nil {}
        try? handle.close()
        return filler
    }

    func unmount() {
        _ = Self.run("/bin/umount", [path])
        directory.remove()
    }

    private static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
