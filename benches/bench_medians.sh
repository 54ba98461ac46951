#!/usr/bin/env bash
# Runs every timely-benches benchmark RUNS times (default 5) and prints, per benchmark, the
# median over runs of criterion's per-run median (benches/summarize.py).
#
# The machine this project is measured on has 2 cores shared with other work, and two
# busy-polling workers measure the OS scheduler rather than the engine when other processes
# compete for the cores. So each benchmark (or group, for tracker) runs separately, after
# waiting up to IDLE_WAIT seconds (default 300) for the machine to be at least 85% idle,
# and each run is saved as criterion baseline runN.
#
#   bash benches/bench_medians.sh                 RUNS=3 IDLE_WAIT=0 bash benches/bench_medians.sh
#   bash benches/bench_medians.sh hello/          only benchmarks whose id starts with this
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-5}"
idle_wait="${IDLE_WAIT:-300}"
only="${1:-}"
criterion_dir="${CARGO_TARGET_DIR:-target}/criterion"

# bench file and criterion filter (an anchored regex on the benchmark id), one per line.
jobs="hello ^hello/1_worker\$
hello ^hello/2_workers\$
exchange ^exchange/1_worker/1000\$
exchange ^exchange/2_workers/1000\$
exchange ^exchange/1_worker/100000\$
exchange ^exchange/2_workers/100000\$
tracker ^tracker/
codecs ^codecs/
hash_of ^hash_of/"

# Percentage of CPU time idle over one second, from /proc/stat.
idle_percent() {
    local a b c d e f g h busy1 idle1 busy2 idle2 total
    read -r _ a b c d e f g h _ < /proc/stat
    busy1=$((a + b + c + e + f + g + h)) idle1=$d
    sleep 1
    read -r _ a b c d e f g h _ < /proc/stat
    busy2=$((a + b + c + e + f + g + h)) idle2=$d
    total=$(((busy2 - busy1) + (idle2 - idle1)))
    echo $((total > 0 ? 100 * (idle2 - idle1) / total : 100))
}

wait_for_idle() {
    local waited=0 idle
    while idle="$(idle_percent)"; [ "$idle" -lt 85 ] && [ "$waited" -lt "$idle_wait" ]; do
        waited=$((waited + 1))
    done
    echo "   (machine ${idle}% idle, waited ${waited}s)" >&2
}

cargo bench -q -p timely-benches --no-run
rm -rf "$criterion_dir"/*/*/run* "$criterion_dir"/*/*/*/run*
for i in $(seq 1 "$runs"); do
    echo "== run $i of $runs" >&2
    while read -r bench filter; do
        case "${filter#^}" in "$only"*) ;; *) continue ;; esac
        wait_for_idle
        cargo bench -q -p timely-benches --bench "$bench" -- --save-baseline "run$i" "$filter" 2>&1 |
            grep -E '^[a-z_]+/|time:|thrpt:' >&2 || true
    done <<<"$jobs"
done
python3 benches/summarize.py "$criterion_dir" run
