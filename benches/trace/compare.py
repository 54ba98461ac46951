"""Tracing overhead of two builds side by side: each build's `wordcount` and `hello` examples
run untraced and traced (`--trace DIR`, files written), the builds and modes in turns, RUNS
times; prints the medians of wall time and of CPU time (user + system) and the overheads.

    python benches/trace/compare.py OLD_EXAMPLES_DIR NEW_EXAMPLES_DIR [--runs 7]

Build the old examples elsewhere first, for instance
`git worktree add /tmp/old main && (cd /tmp/old && CARGO_TARGET_DIR=/tmp/target-old cargo
build --release -p timely-engine --examples)`, then pass `/tmp/target-old/release/examples`
and `target/release/examples`. CPU time is reported beside wall time because on a shared
machine other tenants' work stretches wall time but not the CPU a run takes.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time

WORKLOADS = {
    "wordcount (2 workers, 20,000 epochs of 200 words)": ["wordcount", "20000", "200", "-w", "2"],
    "hello (1 worker, 200,000 rounds)": ["hello", "200000", "-w", "1", "--quiet"],
}


def run(command: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of `command` (CPU: user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    builds = {"old": args.old, "new": args.new}
    times: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    scratch = tempfile.mkdtemp(prefix="trace-compare-")
    try:
        for _ in range(args.runs):
            for build, directory in builds.items():
                for workload, (program, *rest) in WORKLOADS.items():
                    command = [os.path.join(directory, program), *rest]
                    times.setdefault((build, workload, "off"), []).append(run(command))
                    trace = os.path.join(scratch, "t")
                    shutil.rmtree(trace, ignore_errors=True)
                    times.setdefault((build, workload, "traced"), []).append(run([*command, "--trace", trace]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{args.runs} runs each, medians; load average at the end {os.getloadavg()[0]:.2f}")
    print("| workload | build | wall off / traced (s) | overhead | CPU off / traced (s) | overhead |")
    print("|---|---|---:|---:|---:|---:|")
    for workload in WORKLOADS:
        for build in builds:
            off, on = times[(build, workload, "off")], times[(build, workload, "traced")]
            wall = [statistics.median(t[0] for t in runs) for runs in (off, on)]
            cpu = [statistics.median(t[1] for t in runs) for runs in (off, on)]
            print(f"| {workload} | {build} | {wall[0]:.3f} / {wall[1]:.3f} | {wall[1] / wall[0] - 1:+.1%} "
                  f"| {cpu[0]:.3f} / {cpu[1]:.3f} | {cpu[1] / cpu[0] - 1:+.1%} |")


if __name__ == "__main__":
    main()
