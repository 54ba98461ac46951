#!/usr/bin/env bash
# Runs `cargo bench -p timely-benches` RUNS times (default 5), saving each run as criterion
# baseline runN, and prints the median over runs of every benchmark (benches/summarize.py).
# Before each run it waits (up to IDLE_WAIT seconds, default 120) for the machine to be
# mostly idle, because two busy-polling workers on a shared 2-core machine measure the
# scheduler rather than the engine when other processes compete for the cores.
#
#   bash benches/bench_medians.sh                 RUNS=3 bash benches/bench_medians.sh
#   bash benches/bench_medians.sh hello           (extra arguments go to criterion: a filter)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-5}"
idle_wait="${IDLE_WAIT:-120}"
criterion_dir="${CARGO_TARGET_DIR:-target}/criterion"

# Percentage of CPU time idle over one second, from /proc/stat.
idle_percent() {
    read -r _ a b c d e f g h _ < /proc/stat
    local busy1=$((a + b + c + e + f + g + h)) idle1=$d
    sleep 1
    read -r _ a b c d e f g h _ < /proc/stat
    local busy2=$((a + b + c + e + f + g + h)) idle2=$d
    local total=$(((busy2 - busy1) + (idle2 - idle1)))
    echo $((total > 0 ? 100 * (idle2 - idle1) / total : 100))
}

wait_for_idle() {
    local waited=0 idle
    while idle="$(idle_percent)"; [ "$idle" -lt 85 ] && [ "$waited" -lt "$idle_wait" ]; do
        waited=$((waited + 1))
    done
    echo "machine ${idle}% idle before this run (waited ${waited}s)" >&2
}

cargo bench -p timely-benches --no-run
rm -rf "$criterion_dir"/*/*/run* "$criterion_dir"/*/*/*/run*
for i in $(seq 1 "$runs"); do
    wait_for_idle
    echo "== run $i of $runs" >&2
    cargo bench -q -p timely-benches -- --save-baseline "run$i" "$@" 2>&1 |
        grep -E '^[a-z_]+/|time:|thrpt:' >&2 || true
done
python3 benches/summarize.py "$criterion_dir" run
