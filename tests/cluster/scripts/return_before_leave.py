"""A worker whose program returned still takes part in its process's leave
(`test_keyed_leaving.py`): on two processes of two workers each, every worker runs a small
dataflow to completion. Then worker 3 returns at once, while worker 2 steps a moment and
asks for its process's leave (`worker.leave()`), returning once it is leaving. Workers 0 and
1 step until the leave is complete (`worker.members` is `[0, 1]`) and print it.
Usage: return_before_leave.py RUNTIME_FLAGS"""

import sys
import time

import timely_py as timely


def main(worker):
    with worker.dataflow() as scope:
        probe = scope.to_stream(range(20)).exchange(lambda x: x).probe()
    while not probe.done():
        worker.step()
    if worker.index == 3:
        return
    if worker.index == 2:
        time.sleep(0.5)  # worker 3 has returned by then
        worker.leave()
        while not worker.leaving:
            worker.step()
        return
    while worker.members != [0, 1]:
        worker.step()
        time.sleep(0.001)
    # One write per line: `print` writes the text and the newline apart, so two workers'
    # lines could interleave.
    sys.stdout.write(f"worker {worker.index}: members {worker.members}\n")
    sys.stdout.flush()


timely.execute_from_args(sys.argv[1:], main)
