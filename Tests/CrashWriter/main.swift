// SPDX-License-Identifier: Apache-2.0

// Placeholder; the crash writer arrives with the disk tier.
print("crash writer")
