"""Worker 0 sends a record holding a lambda to worker 1, on another process: the record
cannot be pickled, so process 0 fails with the pickling error and process 1 with a
ClusterError."""

import sys

import timely_py as timely


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        scope.input_from(inp).exchange(lambda pair: pair[0]).probe_with(probe)
    if worker.index == 0:
        inp.send((1, lambda: None))
    inp.advance_to(1)
    while probe.less_than(1):
        worker.step()


timely.execute_from_args(sys.argv[1:], main)
