"""Worker 0 asks the launcher for a process in round 2 (`timely_py.launch.add_process`); the
joined process's workers bootstrap, print `joined`, and the process dies at once with exit
code 3 (as a crash would), while the others run on until the launcher ends them.
Usage: join_then_fail.py RUNTIME_FLAGS (under python -m timely_py.launch)"""

import os
import sys
import time

import timely_py as timely
from timely_py import launch


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        scope.input_from(inp).exchange(lambda x: x).probe_with(probe)
    if worker.bootstrap():
        print("joined", flush=True)
        os._exit(3)
    for rnd in range(600):
        if worker.index == 0:
            if rnd == 2:
                launch.add_process()
            inp.send(rnd)
            time.sleep(0.05)
        inp.advance_to(rnd + 1)
        while probe.less_than(inp.time):
            worker.step_or_park(0.01)


timely.execute_from_args(sys.argv[1:], main)
