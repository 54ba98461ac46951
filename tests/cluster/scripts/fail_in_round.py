"""Worker FAILER (default 1) raises ValueError in its `Check` operator in round 3 of 1000;
the others keep going (with a short sleep per round) until the runtime stops them.
Usage: fail_in_round.py [FAILER] RUNTIME_FLAGS"""

import sys
import time

import timely_py as timely

args = timely.program_args(sys.argv[1:])
failer = int(args[0]) if args else 1


def main(worker):
    def check(rnd):
        if worker.index == failer and rnd == 3:
            raise ValueError(f"worker {worker.index} rejects round {rnd}")
        return rnd

    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        scope.input_from(inp).map(check).probe_with(probe)
    for rnd in range(1000):
        inp.send(rnd)
        inp.advance_to(rnd + 1)
        while probe.less_than(inp.time):
            worker.step_or_park(0.01)
        time.sleep(0.01)


timely.execute_from_args(sys.argv[1:], main)
