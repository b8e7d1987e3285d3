// SPDX-License-Identifier: Apache-2.0

import Foundation

/// Makes a self-signed certificate (P-256, valid one day) and its key, as PEM files, with the
/// `openssl` command (`make test` installs it where missing).
/// - Parameters:
///   - serial: the certificate's serial number, so that a test can tell two apart.
///   - names: the subject alternative names it is valid for; default `localhost` and 127.0.0.1.
/// - Throws: when `openssl` cannot be run or fails.
package func makeSelfSignedCertificate(
    certificatePath: String,
    keyPath: String,
    serial: Int? = nil,
    names: String = "DNS:localhost,IP:127.0.0.1"
) async throws {
    let status = try await offThePool {
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments =
            [
                "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", keyPath, "-out", certificatePath, "-days", "1", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=\(names)",
            ] + (serial.map { ["-set_serial", "\($0)"] } ?? [])
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        return openssl.terminationStatus
    }
    guard status == 0 else { throw SelfSignedCertificateError(status: status) }
}

/// `openssl` could not make the certificate.
package struct SelfSignedCertificateError: Error, CustomStringConvertible {
    package let status: Int32
    package var description: String { "openssl could not make the certificate (exit status \(status))" }
}
