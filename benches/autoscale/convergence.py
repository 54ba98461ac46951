"""Convergence of the live autoscaler over rate steps (issue 27's first experiment, on one
machine): worker 0 offers BASE records/s, then FACTOR x BASE, then BASE again, to a map
that sleeps SLEEP s per record (a simulated remote call: on a 2-core machine only work that
waits scales with processes); process 0's autoscaler adds and removes processes through the
launcher. Prints the timeline (every decision that is not a wait, every change of the
workers present, in seconds since feeding began) and per phase: when the first decision
after the step came, which count it chose, when the cluster had it, and how many changes
the phase saw (more than one is oscillation). Every record is checked to be mapped exactly
once.

    python benches/autoscale/convergence.py [--base 100] [--factor 3] [--phases 8,12,12]
        [--sleep 0.005] [--min 1] [--max 3] [--observed] [--json FILE]

The workload is `tests/autoscale/scripts/sleepy_autoscaled.py` under
`python -m timely_py.launch -n 2` (1 worker per process). By default it tells the
autoscaler the rate it offers (`Autoscaler.offer`); `--observed` makes it observe the
input's rate instead, which an overloaded worker 0 holds down (docs/autoscaling.md).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "autoscale" / "scripts" / "sleepy_autoscaled.py"


def parse(out: str) -> Dict[str, Any]:
    """The decisions and membership changes of worker 0's output, in order."""
    events: List[Dict[str, Any]] = []
    pending: Optional[Dict[str, Any]] = None
    for line in out.splitlines():
        decision = re.match(r"^\[0\] autoscale: (scale out|scale in|stay) (?:from (\d+) to (\d+)|at (\d+)) processes"
                            r".*?: (.*)$", line)
        if decision:
            action, before, after, stay, reason = decision.groups()
            pending = {"kind": "decision", "action": action.replace(" ", "_"),
                       "from": int(before or stay), "to": int(after or stay), "reason": reason}
            continue
        stamp = re.match(r"^\[0\] worker 0: epoch (\d+), decided at ([\d.]+) s$", line)
        if stamp and pending is not None:
            pending["seconds"] = float(stamp.group(2))
            events.append(pending)
            pending = None
            continue
        present = re.match(r"^\[0\] worker 0: epoch (\d+), workers present \[([\d, ]*)\], ([\d.]+) s$", line)
        if present:
            workers = [int(w) for w in present.group(2).split(",") if w.strip()]
            events.append({"kind": "members", "workers": workers, "seconds": float(present.group(3))})
    return {"events": events}


def check_exact(out: str, records: int) -> None:
    found = re.findall(r"^\[\d+\] worker \d+: seen (\d+) -> (\d+)$", out, re.MULTILINE)
    xs = sorted(int(x) for x, _ in found)
    assert xs == list(range(records)), "a record was lost or mapped twice"
    assert all(int(y) == 3 * int(x) + 1 for x, y in found), "a record was mapped wrongly"


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
    parser.add_argument("--json", metavar="FILE")
    options = parser.parse_args(argv)
    seconds = [float(s) for s in options.phases.split(",")]
    rates = [options.base, options.base * options.factor, options.base][: len(seconds)]
    steps = [f"step={rate:g}:{length:g}" for rate, length in zip(rates[1:], seconds[1:])]
    command = [sys.executable, "-m", "timely_py.launch", "-n", "2", "--base-port", str(options.base_port),
               "--max-processes", str(options.max + 2), str(SCRIPT), f"{rates[0]:g}", f"{seconds[0]:g}",
               str(options.sleep), str(options.min), str(options.max)]
    if not options.observed:
        command.append("offer")
    command += steps
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"the run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    records = sum(int(rate * 0.1) * int(length / 0.1) for rate, length in zip(rates, seconds))
    check_exact(done.stdout, records)
    events = parse(done.stdout)["events"]
    starts = [sum(seconds[:i]) for i in range(len(seconds))]
    phases = phases_of(events, starts, 2)
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
              f"{reached}, {p['count_changes']} change(s)")
    result = {"rates": rates, "seconds": seconds, "sleep": options.sleep, "offered": not options.observed,
              "events": events, "phases": phases}
    if options.json:
        Path(options.json).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
