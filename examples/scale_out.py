"""Scaling out from inside a computation: worker 0 asks the launcher for another process.

Run it under the launcher, which starts the new process when asked:

    python -m timely_py.launch -n 2 -w 2 examples/scale_out.py [ROUNDS [PAUSE [ASK_AT]]]

Worker 0 sends one record per round (ROUNDS, default 12; pausing PAUSE seconds, default 0.2)
and in round ASK_AT (default 3) calls `timely_py.launch.add_process()`: the launcher starts
the next process with `--join 0`, whose workers take part from then on. `exchange` routes
record x to worker `x % peers`, so the records after the join spread over more workers. Each
worker prints what it saw, and worker 0 prints when it first counts the new workers.
"""

import sys
import time

import timely_py as timely
from timely_py import launch

args = timely.program_args(sys.argv[1:])
rounds = int(args[0]) if args else 12
pause = float(args[1]) if len(args) > 1 else 0.2
ask_at = int(args[2]) if len(args) > 2 else 3


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        (
            scope.input_from(inp)
            .exchange(lambda x: x)
            .inspect(lambda x: print(f"worker {worker.index}: seen {x}"))
            .probe_with(probe)
        )
    if worker.bootstrap():  # the joined process's workers: the runtime does the rest
        print(f"worker {worker.index}: joined, {worker.peers} workers now")
        return
    rnd, last, peers = 0, rounds, worker.peers
    while rnd < last:
        if worker.index == 0:
            if rnd == ask_at:
                print(f"worker 0: round {rnd}, asking for a process: {launch.add_process(server=0)}")
            inp.send(rnd)
            time.sleep(pause)
        inp.advance_to(rnd + 1)
        while probe.less_than(inp.time):
            worker.step_or_park(0.1)
        if worker.peers > peers:
            if worker.index == 0:
                print(f"worker 0: round {rnd}, the cluster grew to {worker.peers} workers")
            peers, last = worker.peers, max(last, rnd + 5)
        rnd += 1


if __name__ == "__main__":
    timely.execute_from_args(sys.argv[1:], main)
