"""Three processes of one worker: process 1 leaves at once (`worker.leave()`) and returns
without building anything more; the two others wait until they see the leave
(`worker.members` shrinks), then build a second dataflow while it is in progress, feed it and
print what it counted: `fed [..]` and `counted [(key, count), ..]` as JSON lines.
Usage: build_during_leave.py RUNTIME_FLAGS"""

import json
import sys

import timely_py as timely


def main(worker):
    with worker.dataflow() as scope:
        scope.to_stream(range(10)).exchange(lambda x: x).probe()
    if worker.index == 1:
        worker.leave()
        return
    while len(worker.members) == 3:
        worker.step()
    counted = []
    inp = timely.InputHandle()
    with worker.dataflow() as scope:
        probe = scope.input_from(inp).count_by_key(lambda x: x % 5).inspect(counted.append).probe()
    fed = [worker.index * 100 + i for i in range(20)]
    inp.send_batch(fed)
    inp.close()
    while not probe.done():
        worker.step()
    print(json.dumps({"fed": fed, "counted": counted}), flush=True)


timely.execute_from_args(sys.argv[1:], main)
