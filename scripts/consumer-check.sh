#!/usr/bin/env bash
# Shows what an app that depends on LayeredCache's core products resolves: a throwaway package
# that depends on this repository by path, once with the default traits and once with none.
# Prints the packages SwiftPM resolved and fails when a package only the tools, the proxy or an
# integration need reaches it.
#   scripts/consumer-check.sh        (make consumer-check)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Never needed by the core products, whatever the traits.
tools_only="swift-argument-parser hdrhistogram-swift hummingbird postgres-nio swift-docc-plugin vapor"
# Needed only by the AsyncHTTPClient trait (on by default).
transport_only="async-http-client swift-nio"

check() {
    local label="$1" traits="$2" forbidden="$3"
    local dir="$work/$label"
    mkdir -p "$dir/Sources/App"
    cat > "$dir/Package.swift" <<MANIFEST
// swift-tools-version:6.1
import PackageDescription
let package = Package(
    name: "App",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "LayeredCache", path: "$root"$traits)],
    targets: [
        .executableTarget(
            name: "App",
            dependencies: [
                .product(name: "CacheTiers", package: "LayeredCache"),
                .product(name: "HTTPCaching", package: "LayeredCache"),
                .product(name: "CachingClient", package: "LayeredCache"),
            ]
        )
    ]
)
MANIFEST
    echo 'import CachingClient' > "$dir/Sources/App/main.swift"
    (cd "$dir" && swift package resolve >/dev/null 2>&1)
    local resolved
    resolved="$(cd "$dir" && swift package show-dependencies --format flatlist 2>/dev/null | sed 's/^ *//' | sort -u)"
    echo "== a consumer of the core products, $label: resolved"
    echo "$resolved" | sed 's/^/   /'
    local failed=0
    for package in $forbidden; do
        if echo "$resolved" | grep -qx "$package"; then
            echo "error: $package reached a consumer ($label)" >&2
            failed=1
        fi
    done
    return $failed
}

check "default traits" "" "$tools_only"
check "no traits" ", traits: []" "$tools_only $transport_only"
echo "consumer check: passed"
