"""A leaver that feeds on forever (`test_leaving_while_feeding.py`): on two processes of one
worker each, every worker sends a record and steps per round; worker 1 calls `worker.leave()`
in round 3 and its program goes on feeding, catching `LeavingError`, without ever returning.
Once its dataflows are gone it prints `worker 1: gone`: from then on its loop no longer steps
(its probe is done). Worker 0 feeds forever too.
Usage: feed_past_leave.py RUNTIME_FLAGS"""

import sys
import time

import timely_py as timely


def main(worker):
    data, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        scope.input_from(data).count_by_key(lambda x: x % 5).probe_with(probe)
    rnd, gone = 0, False
    while True:
        if worker.index == 1 and rnd == 3:
            worker.leave()
        try:
            data.send(rnd)
        except timely.LeavingError:
            pass
        rnd += 1
        data.advance_to(rnd)
        while probe.less_than(rnd):
            worker.step()
        if worker.leaving and not worker.has_dataflows and not gone:
            gone = True
            print(f"worker {worker.index}: gone", flush=True)
        time.sleep(0.01)


timely.execute_from_args(sys.argv[1:], main)
