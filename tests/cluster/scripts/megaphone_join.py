"""Runs the Megaphone join test program (`support.megaphone_programs.run_join`) with strategy
STRATEGY (all_at_once, fluid or batched) on a cluster; every worker prints one JSON line
{"join": [[worker, time, repr(output)], ...]}.
Usage: megaphone_join.py STRATEGY RUNTIME_FLAGS"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for `support`

import timely_py as timely  # noqa: E402
from support.megaphone_programs import run_join  # noqa: E402
from timely_py.megaphone import Strategy  # noqa: E402

name = timely.program_args(sys.argv[1:])[0]
chosen = Strategy.batched(2) if name == "batched" else getattr(Strategy, name)()


def main(worker):
    shown = [(w, t, repr(x)) for w, t, x in run_join(worker, chosen)]
    # One write per line, so that the lines of two worker threads cannot interleave.
    sys.stdout.write(json.dumps({"join": shown}) + "\n")
    sys.stdout.flush()


timely.execute_from_args(sys.argv[1:], main)
