#!/usr/bin/env bash
# Runs each libFuzzer target of LayeredCacheFuzz (docs/fuzzing.md) for FUZZ_SECONDS seconds over a
# working copy of its committed seed corpus (Fuzz/Corpus/TARGET), one after the other, and prints
# each one's executions and executions per second. A finding (a crash, a failed invariant, a leak,
# a timeout) stops the run with libFuzzer's report and the input saved under FUZZ_WORK/artifacts.
#   FUZZ_BIN      the fuzz executable (make fuzz builds it)
#   FUZZ_SECONDS  seconds per target (default 10)
#   FUZZ_TARGETS  the targets to run (default: every one)
#   FUZZ_WORK     where the working corpora and the findings go (default .build-fuzz/work)
#   FUZZ_FLAGS    more libFuzzer flags, e.g. -runs=10000000
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_BIN=${FUZZ_BIN:-.build-fuzz/debug/LayeredCacheFuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
FUZZ_TARGETS=${FUZZ_TARGETS:-record segment snapshot variants response directives conditions sharedrow proxy rawhead origin}
FUZZ_WORK=${FUZZ_WORK:-.build-fuzz/work}
FUZZ_FLAGS=${FUZZ_FLAGS:-}
# libFuzzer reports a crash itself: the Swift runtime's backtracer would only add noise (and trip
# ASan), so it is off here whatever the Makefile sets for the tests (FUZZ_SWIFT_BACKTRACE=… to
# choose otherwise).
export SWIFT_BACKTRACE=${FUZZ_SWIFT_BACKTRACE:-enable=no}
# libFuzzer checks every input for leaks; the check at exit would also list what the targets keep
# for the whole run (the proxy's cache), where a Swift enum's spare bits hide some pointers from
# LeakSanitizer.
export ASAN_OPTIONS=${ASAN_OPTIONS:-leak_check_at_exit=0}

mkdir -p "$FUZZ_WORK/artifacts"
for target in $FUZZ_TARGETS; do
    corpus="$FUZZ_WORK/corpus/$target"
    mkdir -p "$corpus"
    cp -n Fuzz/Corpus/"$target"/* "$corpus"/ 2>/dev/null || true
    log="$FUZZ_WORK/$target.log"
    # shellcheck disable=SC2086
    if ! "$FUZZ_BIN" "$target" "$corpus" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=4096 \
        -max_len=4096 -print_final_stats=1 -artifact_prefix="$FUZZ_WORK/artifacts/$target-" $FUZZ_FLAGS \
        >"$log" 2>&1; then
        tail -n 60 "$log"
        echo "fuzz: $target found a problem; the input is in $FUZZ_WORK/artifacts (log: $log)" >&2
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    seconds=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    echo "fuzz: $target: $runs executions, $seconds exec/s, no finding"
done
