"""The live autoscaler under skew (issue 27's third experiment, on one machine): a
Megaphone `state_machine` over 16 bins whose fold waits 5 ms per record (a remote call made
per key, which only the bin's owner can make; on a 2-core machine only work that waits
scales with processes) is offered RATE records/s, SHARE of them with keys of one bin (bin
1, on worker 1 of the 2 processes the run starts with), the rest spread over the other 15.

Each case runs twice: with the policy as DS2 has it (the autoscaler sees rates per operator,
pooled over the workers it observes) and with the bins' offered rates
(`Autoscaler.offer_bins`), where the policy judges the keyed operator by its hottest worker,
moves bins when a layout over the workers present fits (`rebalance`) and adds only the
processes the bins can use (`timely_py.autoscale.bins`). Prints per run the decisions, the
bins per worker after each batch of moves, the processes used, latency p99 over the run and
over its last 5 s, and checks that every record was delivered exactly once.

    python benches/autoscale/skew.py [--cases 200:0.6,300:0.7] [--seconds 20] [--window 3]
        [--target-latency 0.5] [--plot FILE] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import stepped  # noqa: E402
from alternatives import plot  # noqa: E402

BINS = 16
HOT_BIN = 1


def run_case(out: Path, rate: float, share: float, seconds: float, offered_bins: bool,
             options: argparse.Namespace) -> Dict[str, Any]:
    spec = f"{rate:g}:{seconds:g}"
    extra = ["--window", f"{options.window:g}", "--keyed", str(BINS), "--hot", f"{HOT_BIN}:{share:g}"] + (["--offer-bins"] if offered_bins else [])
    result = stepped.run_plain(out, 2, "auto", spec=spec, sleep=options.sleep, low=1, high=options.max,
                               base_port=0, extra=extra)
    measured = stepped.measure(out, spec, result, options.target_latency)  # checks exactly once
    tail = [v for v in measured["p99_per_second"][-5:] if v is not None]
    bins = [e for e in measured["events"] if e["kind"] == "bins"]
    measured.update(
        strategy=f"{rate:g}/s, {share:.0%} to one bin, {'bins offered' if offered_bins else 'pooled'}",
        rate=rate, share=share, offered_bins=offered_bins, p99_last_5s=max(tail) if tail else None,
        most_processes=max(count for _, count in measured["processes"]),
        final_bins=bins[-1]["bins_per_worker"] if bins else None,
        scale_outs=sum(1 for e in measured["events"] if e["kind"] == "decision" and e["action"] == "scale_out"),
        rebalances=sum(1 for e in measured["events"] if e["kind"] == "decision" and e["action"] == "rebalance"),
    )
    return measured


def report(rows: List[Dict[str, Any]], target: float) -> None:
    print(f"{'case':42} {'most proc':>9} {'proc-s':>7} {'scale-outs':>10} {'rebalances':>10} "
          f"{'p99 run':>8} {'p99 last 5 s':>12} {'delayed':>8}  bins per worker at the end")
    for r in rows:
        print(f"{r['strategy']:42} {r['most_processes']:9d} {r['process_seconds']:7.1f} {r['scale_outs']:10d} "
              f"{r['rebalances']:10d} {r['phases'][0]['p99']:7.2f}s {r['p99_last_5s']:11.2f}s {r['delayed']:8d}  "
              f"{r['final_bins']}")
    for r in rows:
        print(f"{r['strategy']}:")
        for e in r["events"]:
            if e["kind"] == "decision":
                print(f"  {e['seconds']:5.1f}  {e['action']:9} {e['from']} -> {e['to']}: {e['reason']}")
            elif e["kind"] == "members":
                print(f"  {e['seconds']:5.1f}  workers present {e['workers']}")
            else:
                print(f"  {e['seconds']:5.1f}  bins per worker {e['bins_per_worker']} after {e['moved']} moves")


def main(argv: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=float, default=3.0, help="the autoscaler's window, seconds")
    parser.add_argument("--cases", default="200:0.6,300:0.7", help="RATE:SHARE,... (SHARE of the records to bin 1)")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--sleep", type=float, default=0.005)
    parser.add_argument("--max", type=int, default=4)
    parser.add_argument("--target-latency", type=float, default=0.5)
    parser.add_argument("--plot", metavar="FILE")
    parser.add_argument("--json", metavar="FILE")
    options = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="autoscale-skew-"))
    rows = []
    try:
        for index, case in enumerate(options.cases.split(",")):
            rate, share = (float(v) for v in case.split(":"))
            for offered_bins in (False, True):
                out = work / f"{index}-{'bins' if offered_bins else 'pooled'}"
                rows.append(run_case(out, rate, share, options.seconds, offered_bins, options))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{BINS} bins, fold sleeps {options.sleep * 1000:g} ms per record, {options.seconds:g} s per run, "
          f"2 processes at the start, max {options.max}; load {os.getloadavg()[0]:.1f}")
    report(rows, options.target_latency)
    if options.plot:
        plot(rows, f"1:{options.seconds:g}", options.target_latency, options.plot,
             title=f"Skew: one of {BINS} bins hot; pooled policy against bins offered",
             xlabel="seconds since the schedule began")
    if options.json:
        Path(options.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
