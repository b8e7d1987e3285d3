# LayeredCache — build, test, benchmark.
#   make test    installs liblz4 and PostgreSQL if missing, builds with warnings as errors, runs
#                every test beside a throwaway PostgreSQL server (scripts/with-postgres.sh)
#   make privacy the three-door privacy property test with 3,000 sequences (PRIVACY_SEQUENCES)
#   make bench   installs them if missing, runs the benchmark suite in release mode (beside one too)
#   make bench-smoke  runs the benchmark suite in --quick mode over make test's debug build: CI's
#                check that every benchmark still builds and runs (its figures mean nothing)
#   make proxy-bench  cache-proxy against Varnish and nginx proxy_cache, one core each
#                     (installs nginx-light, varnish, wrk, h2load if missing; PROXY_BENCH_ARGS=--quick)
#   make lint    swift format lint --strict over Sources, Tests, Benchmarks, and a check that the
#                documentation's examples are extracted (make snippets; make test compiles them)
#   make format  rewrites those files in the house format
#   make docs    builds the DocC documentation of every library product, warnings as errors
#   make examples builds and tests the example apps in Examples/ (each its own package)
#   make fuzz    builds the libFuzzer targets (LAYEREDCACHE_FUZZ=1; this package's modules with
#                coverage and AddressSanitizer) and runs each for FUZZ_SECONDS (default 10) over
#                its seed corpus in Fuzz/Corpus (docs/fuzzing.md); FUZZ_BUILD=.build reuses the
#                dependencies `make test` built; `make fuzz-seeds` writes the seed corpus again

SWIFT ?= swift
# SwiftPM passes the enabled traits to the compiler in the order of a Set, which Swift seeds anew in
# each process: without this, every `swift` command (test, the DocC plugin's build) lists them in
# another order, and the next build compiles every module of this package again (about 150 s).
export SWIFT_DETERMINISTIC_HASHING := 1
# A crash prints the crashed thread's frames and no registers or images: CI shows the end of its
# output, and that end is then where the crash was, not a page of register dumps.
export SWIFT_BACKTRACE ?= enable=yes,interactive=no,threads=crashed,registers=none,images=none
STRICT := -Xswiftc -warnings-as-errors
# Every trait (README, "Traits"): the tools, the proxy and every integration are built and tested.
TRAITS := --enable-all-traits
FORMAT_PATHS := Sources Tests Benchmarks Examples Fuzz/Sources
BENCH_ARGS ?=
PROXY_BENCH_ARGS ?=

WITH_POSTGRES := scripts/with-postgres.sh

.PHONY: all deps deps-postgres deps-openssl test privacy build bench bench-smoke proxy-bench lint format snippets clean docs examples consumer-check \
	fuzz fuzz-build fuzz-seeds

all: test

# The shell commands that install the Debian packages $(1) with apt-get (through sudo unless
# root), reading the package lists again only when the first try fails.
apt-get-install = SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; \
	echo "==> installing $(1) with apt-get"; \
	$$SUDO apt-get install -y -q $(1) >/dev/null 2>&1 || \
	{ $$SUDO apt-get update -q >/dev/null && $$SUDO apt-get install -y -q $(1); }

# liblz4 through pkg-config: apt-get on Debian/Ubuntu, brew on macOS, a clear message elsewhere.
# (The OpenSSL trait needs no system library: it uses swift-crypto's BoringSSL; README, "Traits".)
deps:
	@if pkg-config --exists liblz4 2>/dev/null; then \
		exit 0; \
	elif command -v apt-get >/dev/null 2>&1; then \
		$(call apt-get-install,liblz4-dev pkg-config); \
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
	@$(MAKE) --no-print-directory deps-openssl

# The PostgreSQL server for the shared-tier tests (Debian's postgresql package) when initdb is
# nowhere to be found; elsewhere the tests skip with a line (CI=true makes that an error).
deps-postgres:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		exit 0; \
	elif command -v apt-get >/dev/null 2>&1; then \
		$(call apt-get-install,postgresql); \
	else \
		echo "note: no PostgreSQL server binaries and no apt-get: the shared-tier tests will be skipped" >&2; \
	fi

# The openssl command, with which the TLS tests (the proxy's listener, PostgreSQL) make their
# certificates.
deps-openssl:
	@if command -v openssl >/dev/null 2>&1; then \
		exit 0; \
	elif command -v apt-get >/dev/null 2>&1; then \
		$(call apt-get-install,openssl); \
	else \
		echo "error: the openssl command is required by the TLS tests" >&2; exit 1; \
	fi

build: deps
	$(SWIFT) build $(TRAITS) $(STRICT)

# TEST_PRIVACY_SEQUENCES: how many sequences the three-door privacy property test runs within the
# suite (100; `make privacy` runs 3,000 on their own).
TEST_PRIVACY_SEQUENCES ?= 100
test: deps
	$(SWIFT) build $(TRAITS) --build-tests $(STRICT)
	PRIVACY_SEQUENCES=$(TEST_PRIVACY_SEQUENCES) $(WITH_POSTGRES) $(SWIFT) test $(TRAITS) --skip-build

# The three-door privacy property test with thousands of sequences (make test runs 100), on its
# own beside a throwaway PostgreSQL server; PRIVACY_SEED=… replays a failure.
PRIVACY_SEQUENCES ?= 3000
privacy: deps
	$(SWIFT) build $(TRAITS) --build-tests $(STRICT)
	PRIVACY_SEQUENCES=$(PRIVACY_SEQUENCES) $(WITH_POSTGRES) $(SWIFT) test $(TRAITS) --skip-build --filter PrivacyPropertyTests

bench: deps
	$(WITH_POSTGRES) $(SWIFT) run $(TRAITS) -c release Benchmarks $(BENCH_ARGS)

# The same flags as `make test`, so that over its build nothing is compiled again.
bench-smoke: deps
	$(SWIFT) run $(TRAITS) $(STRICT) Benchmarks --quick --allow-debug

proxy-bench: deps
	scripts/proxy-bench.sh $(PROXY_BENCH_ARGS)

lint:
	$(SWIFT) format lint --strict --recursive $(FORMAT_PATHS)
	python3 scripts/snippets.py --check

# What an app that depends on the core products resolves, with the default traits and with none.
consumer-check:
	scripts/consumer-check.sh

# Extracts every ```swift block of README.md and docs/*.md into Tests/DocSnippetsTests.
snippets:
	python3 scripts/snippets.py

format:
	$(SWIFT) format format --in-place --recursive $(FORMAT_PATHS)

# DocC through swift-docc-plugin, with the same compiler flags as `make test` so that the symbol
# graphs come from the build that is already there: one invocation for every target (each one
# plans the package's build again), which writes .build/docs/<Target>.doccarchive. DOCS_TARGETS=X
# builds one, to the same place (for one target the plugin would write into the output folder
# itself, after removing it).
DOCS_TARGETS ?= HummingbirdLayeredCache VaporLayeredCache CacheTiers HTTPCaching CachingClient EntityCaching AsyncHTTPClientTransport
DOCS_OUTPUT := .build/docs
docs: deps
	@mkdir -p $(DOCS_OUTPUT)
	$(SWIFT) package $(TRAITS) $(STRICT) --allow-writing-to-directory $(DOCS_OUTPUT) generate-documentation \
		$(foreach target,$(DOCS_TARGETS),--target $(target)) --warnings-as-errors --disable-indexing \
		--transform-for-static-hosting \
		--output-path $(if $(word 2,$(DOCS_TARGETS)),$(DOCS_OUTPUT),$(DOCS_OUTPUT)/$(DOCS_TARGETS).doccarchive)

# Each example app is its own package that builds against this one by path. It shares this
# package's build folder, so that only the example's own modules (and what only it depends on:
# swift-otel for VaporApp) are compiled, not a second copy of every dependency;
# `cd Examples/VaporApp && swift build` works on its own as well.
EXAMPLES := HummingbirdApp VaporApp TaskListApp
examples: deps
	@for example in $(EXAMPLES); do \
		echo "==> Examples/$$example"; \
		$(SWIFT) build --package-path Examples/$$example --scratch-path .build --build-tests $(STRICT) || exit 1; \
		$(SWIFT) test --package-path Examples/$$example --scratch-path .build --skip-build || exit 1; \
	done

# The libFuzzer targets (docs/fuzzing.md). The same traits and flags as `make test`, so that over
# its build folder (FUZZ_BUILD=.build, as CI does) only this package's modules are compiled again.
# FUZZ_MODE=unoptimized builds the targets without -O (CI: half the build time, for 3 s a target).
FUZZ_SECONDS ?= 10
FUZZ_MODE ?= 1
FUZZ_BUILD ?= .build-fuzz
FUZZ_BIN = $(FUZZ_BUILD)/debug/LayeredCacheFuzz
fuzz-build: deps
	LAYEREDCACHE_FUZZ=$(FUZZ_MODE) $(SWIFT) build $(TRAITS) $(STRICT) --scratch-path $(FUZZ_BUILD) --product LayeredCacheFuzz

fuzz: fuzz-build
	FUZZ_BIN=$(FUZZ_BIN) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_WORK=$(FUZZ_BUILD)/fuzz scripts/fuzz.sh

fuzz-seeds: fuzz-build
	$(FUZZ_BIN) --write-seeds Fuzz/Corpus

clean:
	rm -rf .build
