#!/usr/bin/env python3
"""Hello's latency from Python, per round, on however many processes it is started with.

examples/hello.py's loop without printing: in round r worker 0 sends r through an exchange,
every worker advances its input and calls `worker.step()` until the probe passes the round.
Worker 0 prints the wall-clock time per round. Across two processes, via the launcher:

    python -m timely_py.launch -n 2 -w 1 benches/python/bench_cluster_hello.py 20000

and on one process for comparison: `python benches/python/bench_cluster_hello.py 20000 -w 2`.
"""

import sys
import time

import timely_py as timely


def main(worker, rounds):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        scope.input_from(inp).exchange(lambda x: x).probe_with(probe)
    start = time.perf_counter()
    for rnd in range(rounds):
        if worker.index == 0:
            inp.send(rnd)
        inp.advance_to(rnd + 1)
        while probe.less_than(inp.time):
            worker.step()
    if worker.index == 0:
        elapsed = time.perf_counter() - start
        print(f"{rounds} rounds on {worker.peers} workers: {elapsed / rounds * 1e6:.1f} us per round")


if __name__ == "__main__":
    args = timely.program_args(sys.argv[1:])
    rounds = int(args[0]) if args else 20000
    timely.execute_from_args(sys.argv[1:], lambda worker: main(worker, rounds))
