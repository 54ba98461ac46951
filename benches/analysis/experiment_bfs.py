"""The thesis's BFS experiment (Sager, chapter 7, figures 7.7-7.8), reproduced on timely_py.

Traces ``examples/bfs.py`` on 1, 2 and 4 workers of one process and on 2 processes of 2
workers, analyses each trace's critical path (``timely_py.analysis.analyze``, one local
Spark session for all of them), and writes the critical-path profiles side by side:

* ``profiles.csv``: one row per configuration, repetition and contributor (operator or user
  activity name, else the edge type): critical-path time and share of the whole path;
* ``summary.csv``: per configuration, the medians over repetitions of the run's wall time,
  the critical path's length, and the shares of ``unknown`` and of communication edges;
* ``profiles.png``: the top contributors of every configuration, absolute (ms) and relative
  (share), medians over repetitions, as grouped bars.

Each configuration's ``analyze`` output is kept under ``OUT/CONFIG-rREP/`` for the viewer.

    .venv/bin/python benches/analysis/experiment_bfs.py --out bfs-experiment
    .venv/bin/python benches/analysis/experiment_bfs.py --nodes 20000 --edges 50000 --reps 1 --out small

It needs the ``analysis`` extra (PySpark, Java 17+, matplotlib). It only measures and
draws; the interpretation lives in ``docs/critical-path.md`` ("What the critical path says
about BFS").
"""

from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Tuple

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
BFS = ROOT / "examples" / "bfs.py"

#: (label, processes, workers per process), in the thesis's order.
CONFIGS = [("1w", 1, 1), ("2w", 1, 2), ("4w", 1, 4), ("2px2w", 2, 2)]
#: Contributors drawn per configuration (the union over configurations is shown).
TOP = 8
#: The columns of the overall profile copied into profiles.csv.
PROFILE_COLUMNS = ("contributor", "type", "critical_ns", "share")
#: Edge types that are communication on the critical path.
COMMUNICATION = ("data_message", "progress_message")


def arguments(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bfs-experiment"), help="output directory")
    parser.add_argument("--nodes", type=int, default=200_000, help="graph nodes (default 200000)")
    parser.add_argument("--edges", type=int, default=500_000, help="graph edges (default 500000)")
    parser.add_argument("--reps", type=int, default=3, help="runs per configuration (default 3)")
    parser.add_argument("--slice", default="1s", help="slice length of the analysis (default 1s)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--base-port", type=int, default=33101, help="first port of the 2-process runs")
    return parser.parse_args(argv)


def traced_run(label: str, processes: int, workers: int, trace: Path, args: argparse.Namespace) -> float:
    """Runs bfs.py traced into ``trace``; returns its wall time in seconds."""
    graph = [str(args.nodes), str(args.edges)]
    if processes == 1:
        command = [sys.executable, str(BFS), *graph, "-w", str(workers), "--trace", str(trace)]
    else:
        command = [sys.executable, "-m", "timely_py.launch", "-n", str(processes), "-w", str(workers),
                   "--base-port", str(args.base_port), "--trace", str(trace), str(BFS), *graph]  # fmt: skip
    if trace.exists():
        shutil.rmtree(trace)
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    elapsed = time.monotonic() - started
    if done.returncode != 0 or "ok" not in done.stdout.split():
        raise RuntimeError(f"{label}: bfs.py failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return elapsed


def analysed(trace: Path, out: Path, args: argparse.Namespace, spark: object) -> Dict[str, object]:
    """Analyses ``trace`` into ``out``; the overall profile rows and the critical path's length."""
    from timely_py.analysis import analyze

    result = analyze(trace, out=out, slice=args.slice, spark=spark, views=False)
    rows = pq.read_table(result.tables["profile"]).to_pylist()
    return {"rows": rows, "critical_ns": result.critical_ns, "complete": result.complete_slices == result.slices}


def run_all(args: argparse.Namespace) -> Tuple[List[dict], List[dict]]:
    """Every configuration ``args.reps`` times, interleaved (so that load changes hit all alike)."""
    from timely_py.analysis import get_session
    from timely_py.analysis.events import count_events

    spark = None
    profiles, runs = [], []
    for rep in range(args.reps):
        for label, processes, workers in CONFIGS:
            name = f"{label}-r{rep}"
            trace = args.out / "traces" / name
            wall = traced_run(label, processes, workers, trace, args)
            if spark is None:
                # Set for the size of the first trace, as the console script sets its session.
                spark = get_session(master=args.master, events=count_events(trace))
            found = analysed(trace, args.out / name, args, spark)
            print(f"{name}: run {wall:.2f} s, critical path {found['critical_ns'] / 1e6:.1f} ms", flush=True)
            runs.append({"config": label, "rep": rep, "run_s": wall, "critical_ns": found["critical_ns"],
                         "complete": found["complete"]})  # fmt: skip
            for row in found["rows"]:
                profiles.append({"config": label, "rep": rep, **{k: row[k] for k in PROFILE_COLUMNS}})
    if spark is not None:
        spark.stop()
    return profiles, runs


def medians(profiles: List[dict]) -> Dict[str, Dict[Tuple[str, str], Tuple[float, float]]]:
    """config -> (contributor, type) -> (median ms, median share); absent in a run counts as 0."""
    reps = defaultdict(set)
    values: Dict[str, Dict[Tuple[str, str], List[Tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for row in profiles:
        reps[row["config"]].add(row["rep"])
        values[row["config"]][(row["contributor"], row["type"])].append((row["critical_ns"] / 1e6, row["share"]))
    result = {}
    for config, contributors in values.items():
        padded = {key: found + [(0.0, 0.0)] * (len(reps[config]) - len(found)) for key, found in contributors.items()}
        result[config] = {
            key: (statistics.median(v[0] for v in found), statistics.median(v[1] for v in found))
            for key, found in padded.items()
        }
    return result


def summary(runs: List[dict], table: Dict[str, Dict[Tuple[str, str], Tuple[float, float]]]) -> List[dict]:
    rows = []
    for label, processes, workers in CONFIGS:
        mine = [r for r in runs if r["config"] == label]
        shares = table.get(label, {})
        rows.append({
            "config": label, "processes": processes, "workers": processes * workers, "runs": len(mine),
            "run_s": round(statistics.median(r["run_s"] for r in mine), 3),
            "critical_ms": round(statistics.median(r["critical_ns"] for r in mine) / 1e6, 2),
            "complete": all(r["complete"] for r in mine),
            "unknown_share": round(sum(s for (_, kind), (_, s) in shares.items() if kind == "unknown"), 4),
            "communication_share": round(sum(s for (_, kind), (_, s) in shares.items() if kind in COMMUNICATION), 4),
        })  # fmt: skip
    return rows


def write_csv(path: Path, rows: List[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def plot(path: Path, table: Dict[str, Dict[Tuple[str, str], Tuple[float, float]]]) -> None:
    """Grouped bars of the top contributors, absolute and relative, one colour per configuration."""
    import numpy as np
    from matplotlib.figure import Figure

    labels = [label for label, _, _ in CONFIGS if label in table]
    chosen: List[str] = []
    for label in labels:
        ranked = sorted(table[label].items(), key=lambda item: -item[1][0])
        chosen += [key[0] for key, _ in ranked[:TOP] if key[0] not in chosen]
    by_name = {label: {key[0]: value for key, value in table[label].items()} for label in labels}
    figure = Figure(figsize=(12, 8), layout="constrained")
    positions, width = np.arange(len(chosen)), 0.8 / max(len(labels), 1)
    for axis, column, unit in zip(figure.subplots(2, 1), (0, 1), ("critical-path time (ms)", "share of critical path")):
        for index, label in enumerate(labels):
            heights = [by_name[label].get(name, (0.0, 0.0))[column] for name in chosen]
            axis.bar(positions + index * width, heights, width, label=label)
        axis.set_xticks(positions + width * (len(labels) - 1) / 2, chosen, rotation=30, ha="right")
        axis.set_ylabel(unit)
        axis.legend(title="configuration")
    figure.suptitle("BFS: top critical-path contributors (medians over runs)")
    figure.savefig(path, dpi=110)


def main(argv: List[str]) -> int:
    args = arguments(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    profiles, runs = run_all(args)
    table = medians(profiles)
    write_csv(args.out / "profiles.csv", profiles)
    rows = summary(runs, table)
    write_csv(args.out / "summary.csv", rows)
    plot(args.out / "profiles.png", table)
    for row in rows:
        print(row)
    print(f"wrote {args.out / 'profiles.csv'}, {args.out / 'summary.csv'}, {args.out / 'profiles.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
