"""Convergence of the live autoscaler over rate steps (issue 27's first experiment, on one
machine): worker 0 offers BASE records/s, then FACTOR x BASE, then BASE again, to a map
that sleeps SLEEP s per record (a simulated remote call: on a 2-core machine only work that
waits scales with processes); process 0's autoscaler adds and removes processes through the
launcher. Prints the timeline (every decision that is not a wait, every change of the
workers present, in seconds since feeding began) and per phase: when the first decision
after the step came, which count it chose, when the cluster had it, how many changes
the phase saw (more than one is oscillation) and its records' latency (p50, p99; from the
time a record was offered to the time it was mapped). Every record is checked to be mapped
exactly once. `--plot FILE` draws the offered rate, the latency p99 per second, the
processes alive and each decision over time.

    python benches/autoscale/convergence.py [--base 100] [--factor 3] [--phases 8,12,12]
        [--sleep 0.005] [--min 1] [--max 3] [--observed] [--json FILE] [--plot FILE]

The workload is `stepped_job.py` under `python -m timely_py.launch -n 2` (1 worker per
process; `stepped.py` runs it and measures it). By default it tells the autoscaler the rate
it offers (`Autoscaler.offer`); `--observed` makes it observe the input's rate instead,
which an overloaded worker 0 holds down (docs/autoscaling.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import stepped  # noqa: E402


def phases_of(events: List[Dict[str, Any]], starts: List[float], initial: int) -> List[Dict[str, Any]]:
    """Per phase: the first decision after its start, the count it chose, when the workers
    present reached it, and how many count changes the phase had."""
    result = []
    processes = initial
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else float("inf")
        inside = [e for e in events if start <= e["seconds"] < end]
        decisions = [e for e in inside if e["kind"] == "decision"]
        changes = [e for e in decisions if e["action"] != "stay"]
        first = decisions[0] if decisions else None
        chosen = changes[-1]["to"] if changes else processes
        reached = None
        if changes:
            for e in inside:
                if e["kind"] == "members" and e["seconds"] >= changes[-1]["seconds"] and len(e["workers"]) == chosen:
                    reached = e["seconds"]
                    break
        result.append({
            "phase": index, "start": start, "processes_before": processes,
            "first_decision": None if first is None else {"seconds": first["seconds"], "action": first["action"],
                                                        "to": first["to"]},
            "count": chosen, "count_changes": len(changes),
            "reached": reached,
        })
        processes = chosen
    return result


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=float, default=100.0)
    parser.add_argument("--factor", type=float, default=3.0)
    parser.add_argument("--phases", default="8,12,12", help="seconds of each phase: BASE, FACTOR x BASE, BASE")
    parser.add_argument("--sleep", type=float, default=0.005)
    parser.add_argument("--min", type=int, default=1)
    parser.add_argument("--max", type=int, default=3)
    parser.add_argument("--base-port", type=int, default=24500)
    parser.add_argument("--observed", action="store_true")
    parser.add_argument("--target-latency", type=float, default=0.5)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--plot", metavar="FILE")
    options = parser.parse_args(argv)
    seconds = [float(s) for s in options.phases.split(",")]
    rates = [options.base, options.base * options.factor, options.base][: len(seconds)]
    spec = ",".join(f"{rate:g}:{length:g}" for rate, length in zip(rates, seconds))
    out = Path(tempfile.mkdtemp(prefix="autoscale-convergence-"))
    try:
        result = stepped.run_plain(out, 2, "auto", spec=spec, sleep=options.sleep, low=options.min, high=options.max,
                                   base_port=options.base_port, observed=options.observed)
        measured = stepped.measure(out, spec, result, options.target_latency)  # checks exactly once
    finally:
        shutil.rmtree(out, ignore_errors=True)
    events = measured["events"]
    starts = [sum(seconds[:i]) for i in range(len(seconds))]
    phases = phases_of(events, starts, 2)
    for phase, latency in zip(phases, measured["phases"]):
        phase["latency_p50"], phase["latency_p99"] = latency["p50"], latency["p99"]
    print(f"rates {', '.join(f'{r:g}' for r in rates)} records/s for {', '.join(f'{s:g}' for s in seconds)} s; "
          f"map sleeps {options.sleep * 1000:g} ms per record; {'observed' if options.observed else 'offered'} rates")
    print("timeline (seconds since feeding began):")
    for e in events:
        if e["kind"] == "decision":
            print(f"  {e['seconds']:6.1f}  {e['action']:9} {e['from']} -> {e['to']}: {e['reason']}")
        else:
            print(f"  {e['seconds']:6.1f}  workers present {e['workers']}")
    print("phases:")
    for p in phases:
        first = p["first_decision"]
        said = "no decision" if first is None else f"first decision +{first['seconds'] - p['start']:.1f} s ({first['action']} to {first['to']})"
        reached = "" if p["reached"] is None else f", cluster at {p['count']} +{p['reached'] - p['start']:.1f} s"
        print(f"  {p['phase']} at {p['start']:4.0f} s: {p['processes_before']} -> {p['count']} processes, {said}"
              f"{reached}, {p['count_changes']} change(s), latency p50 {p['latency_p50']:.2f} s, "
              f"p99 {p['latency_p99']:.2f} s")
    result = {"rates": rates, "seconds": seconds, "sleep": options.sleep, "offered": not options.observed,
              "events": events, "phases": phases, "p99_per_second": measured["p99_per_second"],
              "processes": measured["processes"], "process_seconds": measured["process_seconds"]}
    if options.plot:
        plot(result, options.plot)
    if options.json:
        Path(options.json).write_text(json.dumps(result, indent=1))
    return result


def plot(result: Dict[str, Any], path: str) -> None:
    """Offered rate, latency p99 per second of offered time, processes alive and decisions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (rate_ax, latency_ax, count_ax) = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    bounds = [sum(result["seconds"][:i]) for i in range(len(result["seconds"]) + 1)]
    rate_ax.step(bounds, result["rates"] + result["rates"][-1:], where="post")
    rate_ax.set_ylabel("offered (records/s)")
    seconds = [s + 0.5 for s, v in enumerate(result["p99_per_second"]) if v is not None]
    latency_ax.plot(seconds, [v for v in result["p99_per_second"] if v is not None], marker=".")
    latency_ax.set_yscale("log")
    latency_ax.set_ylabel("latency p99 (s)")
    points = result["processes"]
    count_ax.step([p[0] for p in points], [p[1] for p in points], where="post", label="processes alive")
    for e in result["events"]:
        if e["kind"] == "decision" and e["action"] != "stay":
            for ax in (rate_ax, latency_ax, count_ax):
                ax.axvline(e["seconds"], color="red", linewidth=0.8, linestyle=":")
            count_ax.annotate(f"{e['from']}->{e['to']}", (e["seconds"], e["to"]), fontsize=8, color="red")
    count_ax.set_ylabel("processes")
    count_ax.set_xlabel("seconds since feeding began (dotted: decisions to scale)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
