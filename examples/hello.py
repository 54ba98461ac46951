"""The seed's hello program: input -> exchange -> inspect -> probe, one round at a time.

Run with `python examples/hello.py -w 2` (two worker threads: ten rounds, 0 to 9).

Optional arguments: `hello.py [ROUNDS [PAUSE]]`, the number of rounds (default 10) and the
seconds worker 0 pauses per round (default 0), so that a process can join while it runs:

    python examples/hello.py 40 0.2 -n 2 -p 0 &
    python examples/hello.py 40 0.2 -n 2 -p 1 &
    python examples/hello.py -n 2 -p 2 --join 0 --nn 3     # joins, worker 0 serving

Once a worker counts more peers, it runs five rounds past the larger of ROUNDS and the round
it noticed, so the new worker sees some records even in a join near the end.
"""

import sys
import time

import timely_py as timely

args = timely.program_args(sys.argv[1:])
rounds = int(args[0]) if args else 10
pause = float(args[1]) if len(args) > 1 else 0.0


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        (
            scope.input_from(inp)
            .exchange(lambda x: x)
            .inspect(lambda x: print(f"worker {worker.index}: seen {x}"))
            .probe_with(probe)
        )
    if worker.bootstrap():  # a joining worker: progress state is now initialised
        return
    rnd, last, peers = 0, rounds, worker.peers
    while rnd < last:
        if worker.index == 0:
            inp.send(rnd)
            time.sleep(pause)
        inp.advance_to(rnd + 1)
        while probe.less_than(inp.time):
            worker.step_or_park(0.1)  # sleeps until data arrives (at most 0.1 s)
        if worker.peers > peers:  # the cluster grew: run on a little longer
            peers, last = worker.peers, max(last, rnd + 5)
        rnd += 1


if __name__ == "__main__":
    timely.execute_from_args(sys.argv[1:], main)
