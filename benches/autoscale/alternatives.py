"""The live autoscaler against the alternatives (issue 27's second experiment, on one
machine): the workload of `convergence.py` (worker 0 offers BASE, then 3 x BASE, then BASE
records/s, 10 epochs a second on the wall clock; a map sleeps 5 ms per record, a simulated
remote call: on a 2-core machine only work that waits scales with processes), run once per
way of sizing the cluster:

* `autoscaled`: the live autoscaler (joins and leaves, no restart), starting at 2 processes;
* `fixed-peak` and `fixed-average`: a fixed cluster sized for the peak rate and for the
  average rate (``ceil(rate x sleep / 0.7)`` processes of 1 worker);
* `stop-restart`: the same policy in metrics-only mode; at each decision to change the count
  the run is killed and a new one started with the new count, replaying from the first
  epoch the killed run had not delivered completely (`stepped.run_restart`).

Prints one table (time latency was above the target, process-seconds, records delayed,
latency p99 per phase, restarts; with `--runs N`, medians of N runs per strategy) and checks that every record was delivered exactly once;
`--plot FILE` draws (for each strategy's median run) latency p99 per second of offered time and the processes alive, per
strategy; `--json FILE` keeps everything.

    python benches/autoscale/alternatives.py [--schedule 100:8,300:12,100:12] [--sleep 0.005]
        [--target-latency 0.5] [--only autoscaled,fixed-peak,...] [--runs N] [--plot FILE] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import stepped  # noqa: E402

STRATEGIES = ["autoscaled", "fixed-peak", "fixed-average", "stop-restart"]


def run(name: str, out: Path, options: argparse.Namespace, port: int) -> Dict[str, Any]:
    job = dict(spec=options.schedule, sleep=options.sleep, low=options.min, high=options.max, base_port=port)
    sizes = stepped.strategies(options.schedule, options.sleep)
    if name == "autoscaled":
        result = stepped.run_plain(out, 2, "auto", **job)
    elif name == "fixed-peak":
        result = stepped.run_plain(out, sizes["peak"], "fixed", **job)
    elif name == "fixed-average":
        result = stepped.run_plain(out, sizes["average"], "fixed", **job)
    else:
        result = stepped.run_restart(out, 2, **job)
    measured = stepped.measure(out, options.schedule, result, options.target_latency)
    measured["strategy"] = name
    measured["runs"] = result["runs"]
    return measured


def table(rows: List[Dict[str, Any]], target: float) -> str:
    phases = len(rows[0]["phases"])
    head = (f"{'strategy':14} {'above ' + format(target, 'g') + ' s':>11} {'proc-s':>7} {'delayed':>8} "
            + " ".join(f"{'p99 ph' + str(i):>9}" for i in range(phases)) + f" {'restarts':>8} {'records':>7}")
    lines = [head]
    for r in rows:
        lines.append(f"{r['strategy']:14} {r['above_target_s']:10.1f}s {r['process_seconds']:7.1f} {r['delayed']:8.0f} "
                     + " ".join(f"{p['p99']:8.2f}s" for p in r["phases"]) + f" {r['restarts']:8.0f} {r['records']:7d}")
    return "\n".join(lines)


def plot(rows: List[Dict[str, Any]], spec: str, target: float, path: str,
         title: str = "Rate steps 1x -> 3x -> 1x; shaded: stop-and-restart outages",
         xlabel: str = "seconds since the schedule began (rate steps at the black lines)") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    for r in rows:
        seconds = [s + 0.5 for s, v in enumerate(r["p99_per_second"]) if v is not None]
        values = [v for v in r["p99_per_second"] if v is not None]
        line, = top.plot(seconds, values, marker=".", label=r["strategy"])
        points = r["processes"]
        bottom.step([p[0] for p in points], [p[1] for p in points], where="post", color=line.get_color(),
                    label=r["strategy"])
        for start, stop in r["outages"]:
            top.axvspan(start, stop, color=line.get_color(), alpha=0.12)
    top.axhline(target, color="grey", linestyle="--", linewidth=1, label=f"target {target:g} s")
    for bound in stepped.phase_bounds(spec)[1:-1]:
        top.axvline(bound, color="black", linewidth=0.8)
        bottom.axvline(bound, color="black", linewidth=0.8)
    top.set_yscale("log")
    top.set_ylabel("latency p99 (s), per second offered")
    top.legend(fontsize=8)
    bottom.set_ylabel("processes alive")
    bottom.set_xlabel(xlabel)
    top.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedule", default="100:8,300:12,100:12")
    parser.add_argument("--sleep", type=float, default=0.005)
    parser.add_argument("--min", type=int, default=1)
    parser.add_argument("--max", type=int, default=3)
    parser.add_argument("--target-latency", type=float, default=0.5)
    parser.add_argument("--only", default=",".join(STRATEGIES))
    parser.add_argument("--runs", type=int, default=1, help="runs per strategy (medians)")
    parser.add_argument("--base-port", type=int, default=0, help="first port of the runs (default: the launcher's choice)")
    parser.add_argument("--keep", metavar="DIR", help="keep the runs' files here")
    parser.add_argument("--plot", metavar="FILE")
    parser.add_argument("--json", metavar="FILE")
    options = parser.parse_args(argv)
    names = options.only.split(",")
    unknown = set(names) - set(STRATEGIES)
    if unknown:
        parser.error(f"unknown strategies {sorted(unknown)}; choose among {STRATEGIES}")
    work = Path(options.keep) if options.keep else Path(tempfile.mkdtemp(prefix="autoscale-alternatives-"))
    every: Dict[str, List[Dict[str, Any]]] = {name: [] for name in names}
    try:
        for repetition in range(options.runs):  # the strategies in turn, so that load drifts hit all alike
            for index, name in enumerate(names):
                out = work / f"{name}-{repetition}"
                shutil.rmtree(out, ignore_errors=True)
                every[name].append(run(name, out, options, options.base_port + 100 * index if options.base_port else 0))
    finally:
        if not options.keep:
            shutil.rmtree(work, ignore_errors=True)
    sizes = stepped.strategies(options.schedule, options.sleep)
    print(f"schedule {options.schedule} (records/s:seconds), map sleeps {options.sleep * 1000:g} ms per record, "
          f"target latency {options.target_latency:g} s; fixed-peak {sizes['peak']}, fixed-average "
          f"{sizes['average']} processes; load {os.getloadavg()[0]:.1f}")
    rows = [median_row(every[name]) for name in names]
    print(f"medians of {options.runs} run(s) per strategy" if options.runs > 1 else "one run per strategy")
    print(table(rows, options.target_latency))
    if options.plot:  # the runs whose time above target is the median, one per strategy
        plot(rows, options.schedule, options.target_latency, options.plot)
    if options.json:
        Path(options.json).write_text(json.dumps({"medians": rows, "runs": every}, indent=1))
    return rows


def median_row(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The run whose time above target is the median, with every table figure replaced by
    its median over `runs`."""
    ordered = sorted(runs, key=lambda r: r["above_target_s"])
    row = dict(ordered[len(ordered) // 2])
    for key in ("above_target_s", "process_seconds", "delayed", "restarts"):
        row[key] = statistics.median(r[key] for r in runs)
    row["phases"] = [dict(p, p99=statistics.median(r["phases"][i]["p99"] for r in runs))
                     for i, p in enumerate(row["phases"])]
    row["records"] = min(r["records"] for r in runs)
    return row


if __name__ == "__main__":
    main()
