"""Feeds every kind of key (`support.key_kinds`) to every keyed operator on a cluster while
Megaphone gathers every bin on the last worker and spreads them again, so that the keyed state
of every kind crosses processes both ways; every worker prints one JSON line:
{"worker": global index, "peers": N, and what each operator saw there}.
Usage: key_kinds.py RUNTIME_FLAGS"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for `support`

import timely_py as timely  # noqa: E402
from support.key_kinds import gather_and_spread, key_kinds_dataflow  # noqa: E402


def main(worker):
    seen = key_kinds_dataflow(worker, gather_and_spread(worker.peers))
    # One write per line, so that the lines of two worker threads cannot interleave.
    sys.stdout.write(json.dumps({"worker": worker.index, "peers": worker.peers, **seen}) + "\n")


timely.execute_from_args(sys.argv[1:], main)
