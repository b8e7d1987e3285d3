# LayeredCache — build, test, benchmark.
#   make test    installs liblz4 and PostgreSQL if missing, builds with warnings as errors, runs
#                every test beside a throwaway PostgreSQL server (scripts/with-postgres.sh)
#   make bench   installs them if missing, runs the benchmark suite in release mode (beside one too)
#   make lint    swift format lint --strict over Sources, Tests, Benchmarks
#   make format  rewrites those files in the house format

SWIFT ?= swift
STRICT := -Xswiftc -warnings-as-errors
FORMAT_PATHS := Sources Tests Benchmarks
BENCH_ARGS ?=

WITH_POSTGRES := scripts/with-postgres.sh

.PHONY: all deps deps-postgres test build bench lint format clean

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
	@$(MAKE) --no-print-directory deps-postgres

# The PostgreSQL server for the shared-tier tests (Debian's postgresql package) when initdb is
# nowhere to be found; elsewhere the tests skip with a line (CI=true makes that an error).
deps-postgres:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		exit 0; \
	elif command -v apt-get >/dev/null 2>&1; then \
		SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; \
		echo "==> installing postgresql with apt-get"; \
		$$SUDO apt-get install -y -q postgresql >/dev/null 2>&1 || \
		{ $$SUDO apt-get update -q >/dev/null && $$SUDO apt-get install -y -q postgresql; }; \
	else \
		echo "note: no PostgreSQL server binaries and no apt-get: the shared-tier tests will be skipped" >&2; \
	fi

build: deps
	$(SWIFT) build $(STRICT)

test: deps
	$(SWIFT) build --build-tests $(STRICT)
	$(WITH_POSTGRES) $(SWIFT) test --skip-build

bench: deps
	$(WITH_POSTGRES) $(SWIFT) run -c release Benchmarks $(BENCH_ARGS)

lint:
	$(SWIFT) format lint --strict --recursive $(FORMAT_PATHS)

format:
	$(SWIFT) format format --in-place --recursive $(FORMAT_PATHS)

clean:
	rm -rf .build
