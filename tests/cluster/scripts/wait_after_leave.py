"""Two processes of one worker. Both run a small dataflow to completion; then process 1 asks
for its leave, steps until the leave is complete, and, instead of returning then, keeps
stepping for WAIT seconds more (as a loop waiting for its own dataflows' progress would), then
returns and prints how long it stepped after its leave was complete. Process 0 steps until the leave is complete (`worker.members` is [0]) and
prints it.
Usage: wait_after_leave.py WAIT RUNTIME_FLAGS"""

import json
import sys
import time

import timely_py as timely

WAIT = float(sys.argv[1])


def main(worker):
    with worker.dataflow() as scope:
        probe = scope.to_stream(range(20)).exchange(lambda x: x).probe()
    while not probe.done():
        worker.step()
    if worker.index == 1:
        worker.leave()
        while worker.step():  # until its leave is complete: its dataflows are dropped
            time.sleep(0.001)
        done_at = time.monotonic()
        while time.monotonic() < done_at + WAIT:
            worker.step()
            time.sleep(0.01)
        print(json.dumps({"after_done": time.monotonic() - done_at}), flush=True)
        return
    while worker.members != [0]:
        worker.step()
        time.sleep(0.001)
    print(json.dumps({"members": worker.members}), flush=True)


timely.execute_from_args(sys.argv[2:], main)
