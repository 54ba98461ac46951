"""The seed's rescalable hello: worker 0 sends one record per round (pausing PAUSE seconds,
default 0.05); every worker runs rounds until the cluster has grown to JOINED workers, then
five more. A process started with `--join W --nn N` bootstraps and takes its share.
Prints `worker I: seen X` per record and `halfway` when worker 0 finished round 3. With
TIMELY_TEST_STALL_BOOTSTRAP set, a joining process prints `bootstrapping` once its dataflow
is built and then sleeps instead of finishing its join (to be killed by a test).
Usage: hello_until_join.py JOINED [PAUSE] RUNTIME_FLAGS"""

import os
import sys
import time

import timely_py as timely

args = timely.program_args(sys.argv[1:])
joined, pause = int(args[0]), float(args[1]) if len(args) > 1 else 0.05


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        (
            scope.input_from(inp)
            .exchange(lambda x: x)
            .inspect(lambda x: print(f"worker {worker.index}: seen {x}", flush=True))
            .probe_with(probe)
        )
    if os.environ.get("TIMELY_TEST_STALL_BOOTSTRAP") and worker.index >= worker.peers - 1:
        print("bootstrapping", flush=True)
        time.sleep(600)
    if worker.bootstrap():
        return
    rnd, last = 0, 1200
    while rnd < last:
        if worker.index == 0:
            inp.send(rnd)
            time.sleep(pause)
        inp.advance_to(rnd + 1)
        while probe.less_than(inp.time):
            worker.step_or_park(0.01)
        if worker.index == 0 and rnd == 3:
            print("halfway", flush=True)
        if worker.peers >= joined and last == 1200:
            last = rnd + 5
        rnd += 1


timely.execute_from_args(sys.argv[1:], main)
