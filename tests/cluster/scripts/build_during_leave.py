"""Three processes of one worker: process 1 leaves at once (`worker.leave()`) and returns
without building anything more; the two others wait until they see the leave
(`worker.members` shrinks), then build a second dataflow while it is in progress, with the
built-in keyed count and a Megaphone state machine keeping a running count per key, feed it
worker 0 moves two bins, one of them to the leaver (which the operator overrides),
and both print what they counted as a JSON line: `fed`, `counted` [(key, count), ..] and `running`
[(key, running count), ..]. The leaver is held in its leave (a source of its first dataflow
keeps its capability) until both others have built the second dataflow (each touches a file
in DIR), so the build always falls inside the leave.
Usage: build_during_leave.py DIR RUNTIME_FLAGS"""

import json
import sys
from pathlib import Path

import timely_py as timely
from timely_py.megaphone import Control


DIR = Path(sys.argv[1])


def hold_until_built(capability, info):
    """The leaver's source: keeps its capability until both others built the dataflow."""
    held = [capability] if info.worker == 1 else []

    def logic(_output):
        if held and len(list(DIR.glob("built-*"))) == 2:
            held.pop().release()
        elif held:
            info.activate()

    return logic


def main(worker):
    with worker.dataflow() as scope:
        scope.to_stream(range(10)).exchange(lambda x: x).probe()
        scope.source(hold_until_built, name="Hold")
    if worker.index == 1:
        worker.leave()
        return
    while len(worker.members) == 3:
        worker.step()
    counted, running = [], []
    inp, ctl = timely.InputHandle(), timely.InputHandle()

    def count(key, _value, total):
        total = (total or 0) + 1
        return total, [(key, total)]

    with worker.dataflow() as scope:
        records = scope.input_from(inp)
        probe = records.count_by_key(lambda x: x % 5).inspect(counted.append).probe()
        control = Control(scope.input_from(ctl), bins=8, name="Running")
        records.map(lambda x: (x % 5, x)).state_machine(control, count).inspect(running.append).probe_with(probe)
    (DIR / f"built-{worker.index}").touch()
    fed = [worker.index * 100 + i for i in range(20)]
    inp.send_batch(fed)
    if worker.index == 0:
        ctl.send_batch([(0, 2), (1, 1)])  # a move, and one to the leaver (overridden)
    inp.close()
    ctl.close()
    while not probe.done():
        worker.step()
    print(json.dumps({"fed": fed, "counted": counted, "running": running}), flush=True)


timely.execute_from_args(sys.argv[2:], main)
