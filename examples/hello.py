"""The seed's hello program: input -> exchange -> inspect -> probe, one round at a time.

Run with `python examples/hello.py -w 2` (two worker threads).
"""

import sys

import timely_py as timely


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
    for rnd in range(10):
        if worker.index == 0:
            inp.send(rnd)
        inp.advance_to(rnd + 1)
        while probe.less_than(inp.time):
            worker.step()


if __name__ == "__main__":
    timely.execute_from_args(sys.argv[1:], main)
