"""Times timely's six example programs on our engine and on timely 0.29, side by side.

    python3 benches/timely-compare/side_by_side.py [--reps 5] [--workers 1,2] [--before FILE] [PROGRAM ...]

Runs `compare-ours` and `compare-timely` (built by `cargo build --release` in
benches/timely-compare, or `bash scripts/build.sh --tests`) alternately, `--reps` times
each, with the default parameters of every program (see `compare-ours` without arguments),
checks that their summaries agree on every run, and prints the median of the seconds each
run reports (its slowest worker, from the start of the worker's program to the end of its
dataflows) and the ratio ours / timely. The machine's load (`uptime`) is printed first and
last: the figures mean little on a busy machine. `--before FILE` names a `compare-ours` built
from another commit (copy it aside before building this one): it runs alternately with the
other two, and the table gains its median and its ratio to timely's, so that a change is
shown before and after in one session.
"""

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

RELEASE = Path(__file__).resolve().parents[2] / "target" / "release"
PROGRAMS = ["pingpong", "hashjoin", "bfs", "barrier", "event_driven", "pagerank"]


def once(binary, program, workers):
    done = subprocess.run(
        [str(binary), program, "-w", str(workers)],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    seconds = float(done.stderr.split()[-1])
    return done.stdout, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--before", type=Path, help="a compare-ours of another commit, run alongside")
    parser.add_argument("programs", nargs="*", default=PROGRAMS)
    args = parser.parse_args()
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    binaries = {"ours": RELEASE / "compare-ours", "timely": RELEASE / "compare-timely"}
    if args.before:
        binaries = {"before": args.before, **binaries}
        print("| program | workers | ours before (s) | ours (s) | timely 0.29 (s) | before / timely | ours / timely |")
        print("|---|---|---|---|---|---|---|")
    else:
        print("| program | workers | ours (s) | timely 0.29 (s) | ours / timely |")
        print("|---|---|---|---|---|")
    for program in args.programs:
        for workers in map(int, args.workers.split(",")):
            times = {engine: [] for engine in binaries}
            outputs = set()
            for _ in range(args.reps):
                for engine, binary in binaries.items():
                    output, seconds = once(binary, program, workers)
                    outputs.add(output)
                    times[engine].append(seconds)
            if len(outputs) != 1:
                sys.exit(f"{program} on {workers} workers: the engines' summaries differ: {outputs}")
            median = {engine: statistics.median(seconds) for engine, seconds in times.items()}
            ours, theirs = median["ours"], median["timely"]
            if args.before:
                before = median["before"]
                row = f"{before:.3f} | {ours:.3f} | {theirs:.3f} | {before / theirs:.2f} | {ours / theirs:.2f}"
            else:
                row = f"{ours:.3f} | {theirs:.3f} | {ours / theirs:.2f}"
            print(f"| {program} | {workers} | {row} |", flush=True)
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
