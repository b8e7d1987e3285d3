// SPDX-License-Identifier: Apache-2.0

// HTTPCaching: RFC 9111 rules as pure values and a URLCache-shaped ResponseCache (in progress).
