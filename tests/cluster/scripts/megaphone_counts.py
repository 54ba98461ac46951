"""Runs the Megaphone test program (`support.megaphone_programs.run`) with strategy STRATEGY
(all_at_once, fluid or batched) on a cluster; every worker prints one JSON line
{"counts": [...], "sums": [...]} of what it produced (keys as their repr).
Usage: megaphone_counts.py STRATEGY RUNTIME_FLAGS"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for `support`

import timely_py as timely  # noqa: E402
from support.megaphone_programs import run  # noqa: E402
from timely_py.megaphone import Strategy  # noqa: E402

name = timely.program_args(sys.argv[1:])[0]
strategy = Strategy.batched(2) if name == "batched" else getattr(Strategy, name)()


def main(worker):
    counts, sums = run(worker, strategy)
    shown = {"counts": [(w, t, repr(x)) for w, t, x in counts], "sums": [(w, t, repr(x)) for w, t, x in sums]}
    # One write per line, so that the lines of two worker threads cannot interleave.
    sys.stdout.write(json.dumps(shown) + "\n")
    sys.stdout.flush()


timely.execute_from_args(sys.argv[1:], main)
