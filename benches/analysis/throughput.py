"""Analysis throughput: the critical-path analysis of a large trace on Spark (local[2]), with
the native (Rust) kernels and with the plain-Python reference kernels, side by side.

The trace comes from the traced Rust `hello` example (`--rounds` rounds on `--workers`
worker threads, about 30 events per round on 2 workers: 350,000 rounds give 10.5 million
events); its wall-clock time is the traced run's duration. Then, alternating the kernels
run by run (`--runs` of each):

* the whole analysis (`analyze(..., views=False)`: tables, no plots), with its stages' times,
  after one analysis of a small trace with each kernel (Spark's and the JIT's first runs);
* the kernels alone: the exact tables Spark hands them (one per worker, one per slice),
  gathered once through Spark and timed in this process, kernel by kernel.

`--variants spark-pieces,rust` compares the pipeline's pieces instead: `rust` makes each
worker's pieces with the native kernel (the default), `spark-pieces` with the Spark queries
of `activities.pieces` (the path before the native pieces; both with the native wait-state
and critical-path kernels). `--no-kernels` skips timing the kernels alone. `HELLO=path`
runs another build of `hello` (a worktree's target directory, say).

Prints medians as trace events per second and as the real-time factor (the traced run's
duration divided by the analysis's: 1 or more keeps up with the run), and writes every
figure to `--json`. Needs the `hello` example built (`cargo build --release -p
timely-engine --example hello`) and Java 17+.

    .venv/bin/python benches/analysis/throughput.py --rounds 350000 --runs 3 --json /tmp/throughput.json
    .venv/bin/python benches/analysis/throughput.py --rounds 2500 --runs 3 --variants spark-pieces,rust --no-kernels
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from timely_py.analysis import activities as acts
from timely_py.analysis import analyze, get_session, pipeline
from timely_py.analysis.clocks import correct_clocks
from timely_py.analysis.critical_path import slice_critical_path
from timely_py.analysis.events import load_events
from timely_py.analysis.kernels import native_slice_critical_path, native_worker_activities
from timely_py.analysis.slicing import parse_duration, slice_activities
from timely_py.analysis.waits import piece_rows, worker_activities, worker_rows

ROOT = Path(__file__).resolve().parents[2]
HELLO = ROOT / "target" / "release" / "examples" / "hello"
KERNELS = {
    "rust": (native_worker_activities, native_slice_critical_path),
    "python": (worker_activities, slice_critical_path),
}
#: What each variant of `--variants` runs: (kernels, pieces by Spark's queries).
VARIANTS = {"rust": ("rust", False), "python": ("python", False), "spark-pieces": ("rust", True)}


@contextlib.contextmanager
def spark_pieces(on):
    """With `on`, the pipeline makes the pieces with Spark's queries (the path before the native
    pieces kernel) while keeping the native kernels."""
    native = pipeline.acts.native_rows
    if on:
        pipeline.acts.native_rows = lambda events, known: piece_rows(acts.pieces(events, known))
    try:
        yield
    finally:
        pipeline.acts.native_rows = native


def make_trace(directory, rounds, workers):
    """Traces `hello`, unless `directory` holds a trace this script made; returns the run's
    seconds and the trace's event count."""
    record = Path(f"{directory}.run.json")
    if record.exists() and Path(directory).is_dir():
        return json.loads(record.read_text())
    started = time.monotonic()
    subprocess.run([str(os.environ.get("HELLO", HELLO)), str(rounds), "-w", str(workers), "--trace", str(directory)],
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    run = {"run_s": time.monotonic() - started, "rounds": rounds, "workers": workers}
    run["events"] = ds.dataset(str(directory), format="parquet", partitioning="hive").count_rows()
    record.write_text(json.dumps(run))
    return run


def kernel_inputs(spark, trace, slice_ns, activities, scratch):
    """The tables the kernels get: one per worker (WORKER_ROWS), one per slice (SLICED, from
    the `activities` table an analysis wrote)."""
    raw, info = load_events(spark, trace)
    events = correct_clocks(raw, info.processes)
    known = acts.catalogue(events)
    rows = worker_rows(acts.pieces(events, known), acts.communications(events, info.workers_per_process))
    rows.write.mode("overwrite").parquet(str(scratch / "rows"))
    sliced = slice_activities(spark.read.parquet(str(activities)), slice_ns, known.origin)
    sliced.write.mode("overwrite").parquet(str(scratch / "sliced"))
    return split(scratch / "rows", "worker"), split(scratch / "sliced", "slice")


def split(directory, column):
    whole = ds.dataset(str(directory), format="parquet").to_table()
    return [whole.filter(pc.equal(whole[column], key)) for key in pc.unique(whole[column]).to_pylist()]


def time_kernel(kernel, tables):
    started = time.monotonic()
    rows = sum(kernel(table).num_rows for table in tables)
    return time.monotonic() - started, rows


def median(values):
    return statistics.median(values) if values else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=350_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--trace", default=os.path.join(tempfile.gettempdir(), "timely_throughput_trace"))
    parser.add_argument("--runs", type=int, default=3, help="runs of each kernel (medians are reported)")
    parser.add_argument("--analysis-runs", type=int, default=None, help="whole analyses of each kernel (default --runs)")
    parser.add_argument("--warmup-rounds", type=int, default=2_000, help="rounds of the warm-up trace (0: none)")
    parser.add_argument("--slice", default="1s")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--json", default=None, help="write every figure here too")
    parser.add_argument("--variants", default="rust,python", help="what to compare (rust, python, spark-pieces)")
    parser.add_argument("--no-kernels", action="store_true", help="time whole analyses only")
    args = parser.parse_args()
    run = make_trace(args.trace, args.rounds, args.workers)
    print(f"trace: {run['events']:,} events, traced run {run['run_s']:.2f} s ({args.rounds} rounds, -w {args.workers})")
    spark = get_session(master=args.master, conf={"spark.driver.memory": args.driver_memory})
    variants = args.variants.split(",")
    figures = {"run": run, "load_before": os.getloadavg(), "analysis": {k: [] for k in variants},
               "kernels": {k: {"waits": [], "critical_path": []} for k in KERNELS}}  # fmt: skip

    def save():
        figures["load_after"] = os.getloadavg()
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=1))

    with tempfile.TemporaryDirectory() as scratch:
        if args.warmup_rounds > 0:  # Spark's and the JIT's first runs
            warm = make_trace(Path(scratch) / "warm", args.warmup_rounds, args.workers)
            for name in variants:
                with spark_pieces(VARIANTS[name][1]):
                    analyze(Path(scratch) / "warm", out=Path(scratch) / "warm_out", spark=spark, views=False,
                            kernels=VARIANTS[name][0])  # fmt: skip
            print(f"warmed up on {warm['events']:,} events", flush=True)
        for index in range(max(1, args.runs if args.analysis_runs is None else args.analysis_runs)):
            for name in variants:
                stages = {}
                started = time.monotonic()
                with spark_pieces(VARIANTS[name][1]):
                    analyze(args.trace, out=Path(scratch) / name, slice=args.slice, spark=spark, views=False,
                            kernels=VARIANTS[name][0], progress=lambda stage, s: stages.__setitem__(stage, s))  # fmt: skip
                total = time.monotonic() - started
                figures["analysis"][name].append({"total_s": total, "stages": stages, "load": os.getloadavg()[0]})
                print(f"analysis {index + 1} {name}: {total:.1f} s "
                      + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()), flush=True)  # fmt: skip
                save()
        if args.no_kernels:
            save()
            report(figures)
            return
        started = time.monotonic()
        activities = Path(scratch) / variants[0] / "activities"
        per_worker, per_slice = kernel_inputs(spark, args.trace, parse_duration(args.slice), activities, Path(scratch))
        figures["kernel_inputs"] = {"worker_rows": sum(t.num_rows for t in per_worker),
                                    "sliced_rows": sum(t.num_rows for t in per_slice),
                                    "slices": len(per_slice), "gather_s": time.monotonic() - started}  # fmt: skip
        for index in range(args.runs):
            for name, (waits, path) in KERNELS.items():
                for stage, kernel, tables in (("waits", waits, per_worker), ("critical_path", path, per_slice)):
                    seconds, _ = time_kernel(kernel, tables)
                    figures["kernels"][name][stage].append(seconds)
                    print(f"kernel {index + 1} {name} {stage}: {seconds:.2f} s", flush=True)
                save()
    report(figures)


def report(figures):
    events, run_s = figures["run"]["events"], figures["run"]["run_s"]
    if "kernel_inputs" not in figures:
        print(f"\n{events:,} events, traced run {run_s:.2f} s")
        for name, runs in figures["analysis"].items():
            total = median([r["total_s"] for r in runs])
            print(f"{name:13} {total:8.1f} s (median of {len(runs)}) {events / total:11,.0f} events/s")
            for run in runs:
                print(f"  {name} stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in run["stages"].items()))
        print(f"load average before {figures['load_before']}, after {figures['load_after']}")
        return
    print(f"\n{events:,} events, traced run {run_s:.2f} s; kernel inputs {figures['kernel_inputs']}")
    print(f"{'kernels':8} {'analysis s':>11} {'events/s':>11} {'real-time':>10} "
          f"{'waits s':>9} {'path s':>9} {'kernels events/s':>17}")  # fmt: skip
    for name in KERNELS:
        total = median([r["total_s"] for r in figures["analysis"].get(name, [])])
        waits, path = (median(figures["kernels"][name][k]) for k in ("waits", "critical_path"))
        line = f"{name:8} {total or float('nan'):11.1f} {events / total if total else float('nan'):11,.0f} "
        line += f"{run_s / total if total else float('nan'):10.4f} {waits:9.2f} {path:9.2f} {events / (waits + path):17,.0f}"
        print(line)
    for name in KERNELS:
        for run in figures["analysis"].get(name, []):
            print(f"  {name} stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in run["stages"].items()))
    print(f"load average before {figures['load_before']}, after {figures['load_after']}")


if __name__ == "__main__":
    sys.exit(main())
