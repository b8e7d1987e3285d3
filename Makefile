# LayeredCache — build, test, benchmark.
#   make test    installs liblz4 if missing, builds with warnings as errors, runs every test
#   make bench   installs liblz4 if missing, runs the benchmark suite in release mode
#   make proxy-bench  cache-proxy against Varnish and nginx proxy_cache, one core each
#                     (installs nginx-light, varnish, wrk if missing; PROXY_BENCH_ARGS=--quick)
#   make lint    swift format lint --strict over Sources, Tests, Benchmarks
#   make format  rewrites those files in the house format

SWIFT ?= swift
STRICT := -Xswiftc -warnings-as-errors
FORMAT_PATHS := Sources Tests Benchmarks
BENCH_ARGS ?=
PROXY_BENCH_ARGS ?=

.PHONY: all deps test build bench proxy-bench lint format clean

all: test

# liblz4 through pkg-config: apt-get on Debian/Ubuntu, brew on macOS, a clear message elsewhere.
deps:
	@if pkg-config --exists liblz4 2>/dev/null; then \
		exit 0; \
	elif command -v apt-get >/dev/null 2>&1; then \
		SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; \
		echo "==> installing liblz4-dev and pkg-config with apt-get"; \
		$$SUDO apt-get install -y -q liblz4-dev pkg-config >/dev/null 2>&1 || \
		{ $$SUDO apt-get update -q >/dev/null && $$SUDO apt-get install -y -q liblz4-dev pkg-config; }; \
	elif [ "$$(uname -s)" = "Darwin" ] && command -v brew >/dev/null 2>&1; then \
		echo "==> installing lz4 and pkg-config with brew"; \
		brew install lz4 pkg-config; \
	else \
		echo "error: liblz4 (with its pkg-config file liblz4.pc) is required." >&2; \
		echo "Install it with your package manager (Debian/Ubuntu: liblz4-dev, Fedora: lz4-devel," >&2; \
		echo "Alpine: lz4-dev, macOS: brew install lz4) and run make again." >&2; \
		exit 1; \
	fi
	@pkg-config --exists liblz4 || { echo "error: liblz4 is still not visible to pkg-config" >&2; exit 1; }

build: deps
	$(SWIFT) build $(STRICT)

test: deps
	$(SWIFT) build --build-tests $(STRICT)
	$(SWIFT) test --skip-build

bench: deps
	$(SWIFT) run -c release Benchmarks $(BENCH_ARGS)

proxy-bench: deps
	scripts/proxy-bench.sh $(PROXY_BENCH_ARGS)

lint:
	$(SWIFT) format lint --strict --recursive $(FORMAT_PATHS)

format:
	$(SWIFT) format format --in-place --recursive $(FORMAT_PATHS)

clean:
	rm -rf .build
