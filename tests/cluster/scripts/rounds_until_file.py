"""Runs rounds of input -> exchange -> probe, sleeping SLEEP seconds (default 0.02) after each,
until the file STOP exists or MAX_SECONDS (default 300) have passed, so that a test decides
when a traced run ends. Each worker sends 10 records a round and checks the file itself (a
worker that stops closes its input; the others' rounds go on without it).
Usage: rounds_until_file.py STOP [SLEEP] [MAX_SECONDS] RUNTIME_FLAGS"""

import os
import sys
import time

import timely_py as timely

args = timely.program_args(sys.argv[1:])
stop_file = args[0]
pause = float(args[1]) if len(args) > 1 else 0.02
limit = float(args[2]) if len(args) > 2 else 300.0


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        scope.input_from(inp).exchange(lambda x: x).probe_with(probe)
    deadline, rnd = time.monotonic() + limit, 0
    while not os.path.exists(stop_file) and time.monotonic() < deadline:
        inp.send_batch(range(rnd, rnd + 10))
        inp.advance_to(rnd + 1)
        while probe.less_than(inp.time):
            worker.step_or_park(0.01)
        rnd += 1
        time.sleep(pause)
    return rnd


print(f"rounds: {timely.execute_from_args(sys.argv[1:], main)}")
