#!/usr/bin/env python3
"""Summarizes repeated criterion runs of timely-benches: the median over runs of each
benchmark's per-run median, with the range over runs.

Each run must have been saved as a criterion baseline (`cargo bench -p timely-benches --
--save-baseline runN`, which `bench_medians.sh` does). Usage:

    python3 benches/summarize.py [CRITERION_DIR] [BASELINE_PREFIX]

CRITERION_DIR defaults to `$CARGO_TARGET_DIR/criterion` or `target/criterion`; only
baselines whose names start with BASELINE_PREFIX (default `run`) are read. Times are per
criterion iteration: one round for hello and exchange, one operation for tracker.
"""

import json
import os
import statistics
import sys
from pathlib import Path


def human_time(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def human_rate(per_s: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if per_s >= scale:
            return f"{per_s / scale:.3g} {unit}records/s"
    return f"{per_s:.3g} records/s"


def main() -> None:
    default_dir = Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "criterion"
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else default_dir
    prefix = sys.argv[2] if len(sys.argv) > 2 else "run"
    rows = []
    for bench_file in sorted(root.glob("**/benchmark.json")):
        baseline = bench_file.parent.name
        if not baseline.startswith(prefix):
            continue
        meta = json.loads(bench_file.read_text())
        estimates = json.loads((bench_file.parent / "estimates.json").read_text())
        rows.append((meta["full_id"], meta.get("throughput"), estimates["median"]["point_estimate"]))
    if not rows:
        sys.exit(f"no criterion baselines named {prefix}* under {root}")
    by_id: dict = {}
    for full_id, throughput, median_ns in rows:
        by_id.setdefault(full_id, (throughput, []))[1].append(median_ns)
    print(f"| benchmark | runs | median time/iter | range over runs | median throughput |")
    print(f"|---|---:|---:|---:|---:|")
    for full_id in sorted(by_id, key=lambda i: (i.split("/")[0], i)):
        throughput, medians = by_id[full_id]
        mid = statistics.median(medians)
        rate = ""
        if throughput and "Elements" in throughput:
            rate = human_rate(throughput["Elements"] / (mid / 1e9))
        print(
            f"| {full_id} | {len(medians)} | {human_time(mid)} | "
            f"{human_time(min(medians))} – {human_time(max(medians))} | {rate} |"
        )


if __name__ == "__main__":
    main()
