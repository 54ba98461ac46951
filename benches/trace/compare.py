"""Tracing overhead of builds side by side: each build's `wordcount` and `hello` examples run
untraced and traced (`--trace DIR`, files written), the builds and modes in turns, RUNS times;
prints the medians of wall time, of CPU time (user + system) and of the computation's own
time (as the examples print it), and the overheads.

    python benches/trace/compare.py --build old=OLD_EXAMPLES_DIR --build new=NEW_EXAMPLES_DIR \\
        [--runs 7] [--workers 2] [--only wordcount]

Build the other examples elsewhere first, for instance
`git worktree add /tmp/old main && (cd /tmp/old && CARGO_TARGET_DIR=/tmp/target-old cargo
build --release -p timely-engine --examples)`, then pass `/tmp/target-old/release/examples`
and `target/release/examples`. A build may also be a throwaway change to the tracing code (to
see where its cost goes, `docs/benchmarks.md`, "Tracing overhead"). CPU time is reported
beside wall time because on a shared machine other tenants' work stretches wall time but not
the CPU a run takes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

from timing import Timing, median, overhead, run


def workloads(workers: int) -> dict[str, list[str]]:
    """name -> the example and its arguments."""
    return {
        f"wordcount ({workers} workers, 20,000 epochs of 200 words)": ["wordcount", "20000", "200", "-w", str(workers)],
        "hello (1 worker, 200,000 rounds)": ["hello", "200000", "-w", "1", "--quiet"],
    }


def build(text: str) -> tuple[str, str]:
    """`NAME=DIRECTORY` as a pair."""
    name, _, directory = text.partition("=")
    if not name or not directory:
        raise argparse.ArgumentTypeError(f"expected NAME=EXAMPLES_DIRECTORY, found {text!r}")
    return name, directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=build, action="append", required=True, help="NAME=EXAMPLES_DIR")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2, help="wordcount's workers")
    parser.add_argument("--only", default="", help="comma-separated workload name prefixes")
    args = parser.parse_args()
    builds = dict(args.build)
    chosen = {name: command for name, command in workloads(args.workers).items()
              if not args.only or any(name.startswith(p) for p in args.only.split(","))}
    times: dict[tuple[str, str, str], list[Timing]] = {}
    scratch = tempfile.mkdtemp(prefix="trace-compare-")
    try:
        for _ in range(args.runs):
            for name, directory in builds.items():
                for workload, (program, *rest) in chosen.items():
                    command = [os.path.join(directory, program), *rest]
                    times.setdefault((name, workload, "off"), []).append(run(command))
                    trace = os.path.join(scratch, "t")
                    shutil.rmtree(trace, ignore_errors=True)
                    times.setdefault((name, workload, "traced"), []).append(run([*command, "--trace", trace]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{args.runs} runs each, medians; load average at the end {os.getloadavg()[0]:.2f}")
    print("| workload | build | wall off (s) | traced (s) | overhead | CPU off (s) | traced (s) | overhead "
          "| computation off (s) | traced (s) | overhead |")
    print("|---|---|" + "---:|" * 9)
    for workload in chosen:
        for name in builds:
            off, on = times[(name, workload, "off")], times[(name, workload, "traced")]
            cells = [cell for field in ("wall", "cpu", "computation")
                     for cell in overhead(median(off, field), median(on, field))]
            print(f"| {workload} | {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
