"""A state machine whose state holds a lambda, on a cluster: moving every bin to the last
worker (on another process) must encode the state, which cannot be pickled, so process 0
fails with the pickling error noting the state, and the others stop.
Usage: megaphone_unpicklable.py RUNTIME_FLAGS"""

import sys

import timely_py as timely
from timely_py.megaphone import Control


def main(worker):
    data, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=4)
        scope.input_from(data).state_machine(control, lambda k, v, s: (lambda: v, [])).probe_with(probe)
    if worker.index == 0:
        data.send_batch([(key, 1) for key in range(32)])
    data.advance_to(1)
    ctl.advance_to(1)
    if worker.index == 0:
        ctl.send_batch([(bin, worker.peers - 1) for bin in range(4)])
    for epoch in range(1, 4):
        data.advance_to(epoch + 1)
        ctl.advance_to(epoch + 1)
        while probe.less_than(epoch + 1):
            worker.step()


timely.execute_from_args(sys.argv[1:], main)
