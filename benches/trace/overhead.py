"""The cost of tracing (Sager's thesis, section 7.1): each workload runs with tracing off
and with `--trace DIR` (files written), alternating, RUNS times; prints the medians side by
side, the overhead, events per second per worker and bytes per event on disk, and how many
of the recorded schedule events were of operators that did nothing.

    python benches/trace/overhead.py [--runs 7] [--only wordcount,bfs]

Needs the Rust examples built (`cargo build --release -p timely-engine --examples`) and
timely_py with pyarrow installed in the interpreter that runs it (`bash scripts/build.sh`,
then `.venv/bin/python benches/trace/overhead.py`). Wall time of the whole program is
measured, start-up included, so the fast workloads run long enough (seconds) to dwarf it.
The Rust examples also print how long their dataflow ran, without start-up or the example's
own check of its results (wordcount counts every epoch again, sequentially, which takes about
as long as the dataflow): the "computation" columns give those times and their overhead, the
figure the thesis reports.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
from timing import median, overhead, run

ROOT = Path(__file__).resolve().parents[2]
RUST = ROOT / "target" / "release" / "examples"
PY = sys.executable
LAUNCH = [PY, "-m", "timely_py.launch", "--base-port", "24601"]

#: name -> (command, workers in total)
WORKLOADS = {
    "wordcount (Rust, 2 workers, 20,000 epochs of 200 words)":
        ([str(RUST / "wordcount"), "20000", "200", "-w", "2"], 2),
    "wordcount (Rust, 1 worker, 20,000 epochs of 200 words)":
        ([str(RUST / "wordcount"), "20000", "200", "-w", "1"], 1),
    "hello (Rust, 1 worker, 200,000 rounds)":
        ([str(RUST / "hello"), "200000", "-w", "1", "--quiet"], 1),
    "exchange (Rust, 2 workers, 10 rounds of 1,000,000)":
        ([str(RUST / "exchange"), "1000000", "10", "-w", "2"], 2),
    "bfs (Python, 2 workers, 200,000 nodes)":
        ([PY, str(ROOT / "examples" / "bfs.py"), "200000", "600000", "7", "-w", "2"], 2),
    "bfs (Python, 2 processes x 2 workers, 200,000 nodes)":
        ([*LAUNCH, "-n", "2", "-w", "2", str(ROOT / "examples" / "bfs.py"), "200000", "600000", "7"], 4),
}


def traced(command: list[str], directory: str) -> list[str]:
    """`command` with tracing into `directory` (the launcher takes it as its own option)."""
    if command[:3] == LAUNCH[:3]:
        return [*command[:len(LAUNCH)], "--trace", directory, *command[len(LAUNCH):]]
    return [*command, "--trace", directory]


def trace_figures(directory: str) -> dict[str, float]:
    files = [p for p in Path(directory).rglob("*.parquet") if not p.name.startswith(".")]
    table = ds.dataset(directory, format="parquet", partitioning="hive").to_table(
        columns=["time_ns", "kind", "useful", "worker"])
    stops = table.filter(pc.equal(table["kind"], "schedule_stop"))
    idle = stops.filter(pc.invert(stops["useful"])).num_rows
    return {
        "events": table.num_rows,
        "bytes": sum(p.stat().st_size for p in files),
        "span_s": (pc.max(table["time_ns"]).as_py() - pc.min(table["time_ns"]).as_py()) / 1e9,
        "idle_share": idle / max(stops.num_rows, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", default="", help="comma-separated name prefixes")
    options = parser.parse_args()
    prefixes = [p for p in options.only.split(",") if p]
    rows = []
    for name, (command, workers) in WORKLOADS.items():
        if prefixes and not any(name.startswith(p) for p in prefixes):
            continue
        off, on, figures = [], [], None
        for _ in range(options.runs):
            off.append(run(command, cwd=ROOT))
            with tempfile.TemporaryDirectory() as directory:
                on.append(run(traced(command, directory), cwd=ROOT))
                figures = trace_figures(directory)
        rate = figures["events"] / figures["span_s"] / workers
        cells = [*overhead(median(off, "wall"), median(on, "wall")),
                 *overhead(median(off, "computation"), median(on, "computation"))]
        rows.append([name, *cells, f"{rate:,.0f}", f"{figures['bytes'] / figures['events']:.1f}",
                     f"{figures['idle_share']:.0%}", f"{figures['events']:,}"])
        print(f"done: {name}", file=sys.stderr)
    print(f"load average at the end: {os.getloadavg()[0]:.2f} ({options.runs} runs each, medians)\n")
    print("| workload | off (s) | traced (s) | overhead | computation off (s) | traced (s) | overhead "
          "| events/s per worker | bytes/event | idle schedules | events |")
    print("|---|" + "---:|" * 10)
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
