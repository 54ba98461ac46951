#!/usr/bin/env bash
# Peak memory of the hello dataflow as the number of rounds grows.
#
# Builds `hello_memory` (release) and runs it for 10k, 100k and 1M rounds (override with
# ROUNDS="..."), on one worker (pass e.g. `-w 2` to use two), REPEATS times each (default
# 3), printing one table row per run. Peak RSS is VmHWM from /proc/self/status at the end
# of the run. If the engine keeps nothing per completed round, the peak stays flat as the
# rounds grow. The allocation count is the process total; its growth per round is the
# number of heap allocations per round in steady state.
#
#   bash benches/hello_memory.sh [-w WORKERS]
#   REPEATS=5 ROUNDS="0 1000000 10000000" bash benches/hello_memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p timely-benches --bin hello_memory
bin="${CARGO_TARGET_DIR:-target}/release/hello_memory"
repeats="${REPEATS:-3}"
printf '%10s %8s %4s %10s %12s %14s %12s\n' rounds workers run seconds us/round peak_rss_KiB allocations
for rounds in ${ROUNDS:-10000 100000 1000000}; do
    for run in $(seq 1 "$repeats"); do
        line="$("$bin" "$rounds" "$@")"
        field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$line"; }
        printf '%10s %8s %4s %10s %12s %14s %12s\n' \
            "$(field rounds)" "$(field workers)" "$run" "$(field seconds)" "$(field us_per_round)" \
            "$(field peak_rss_kib)" "$(field allocations)"
    done
done
