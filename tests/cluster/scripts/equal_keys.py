"""Routes the fixed mixed-type equal keys of seed SEED (`support.keyforms.fixed_records`) through
exchange, count_by_key, aggregate and unary(exchange=) on a cluster; every worker prints one
JSON line: {"worker": global index, "peers": N, and what each operator saw there}.
Usage: equal_keys.py SEED RUNTIME_FLAGS"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for `support`

import timely_py as timely  # noqa: E402
from support.keyforms import equal_keys_dataflow, fixed_records  # noqa: E402

groups, records = fixed_records(int(timely.program_args(sys.argv[1:])[0]))


def main(worker):
    seen = equal_keys_dataflow(worker, records, groups)
    # One write per line, so that the lines of two worker threads cannot interleave.
    sys.stdout.write(json.dumps({"worker": worker.index, "peers": worker.peers, **seen}) + "\n")


timely.execute_from_args(sys.argv[1:], main)
