"""Three processes of one worker. Every worker builds a first dataflow; the workers of
processes 0 and 2 then build a second one, with the built-in keyed count and a Megaphone state
machine keeping a running count per key, feed it a first round and touch `built-I` in DIR.
Process 1 never builds the second dataflow: once both files exist it asks for its leave
(`worker.leave()`) and then ignores `worker.leaving`: it goes on stepping until its worker says
it has nothing more to do (`step()` returns False), tries to build one more dataflow (refused
with `LeavingError`), and only then returns. The two others wait
until they see the leave (`worker.members` shrinks), feed a second round, close their inputs
and print what they counted as a JSON line: `fed`, `counted` [(epoch, key, count), ..] and
`running` [(key, running count), ..]; the leaver prints how many steps it took and the refusal's message.
Usage: unbuilt_while_stepping.py DIR RUNTIME_FLAGS"""

import json
import sys
import time
from pathlib import Path

import timely_py as timely
from timely_py.megaphone import Control

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for `support`
from support.megaphone_programs import count_words  # noqa: E402

DIR = Path(sys.argv[1])


def stepping_leaver(worker):
    """Waits for the others' second dataflow, leaves, and steps on until the leave is done."""
    while len(list(DIR.glob("built-*"))) < 2:
        worker.step()
        time.sleep(0.001)
    worker.leave()
    steps = 0
    while worker.step():
        steps += 1
        time.sleep(0.001)
    # Its leave is complete: it told the others how many dataflows it built, so it builds none.
    try:
        with worker.dataflow():
            pass
        refused = None
    except timely.LeavingError as error:
        refused = str(error)
    print(json.dumps({"steps": steps, "leaving": worker.leaving, "refused": refused}), flush=True)


def main(worker):
    with worker.dataflow() as scope:
        scope.to_stream(range(10)).exchange(lambda x: x).probe()
    if worker.index == 1:
        stepping_leaver(worker)
        return
    counted, running = [], []
    inp, ctl = timely.InputHandle(), timely.InputHandle()
    with worker.dataflow() as scope:
        records = scope.input_from(inp)
        probe = records.count_by_key(lambda x: x % 5).inspect_time(lambda t, kv: counted.append((t, *kv))).probe()
        ones = records.map(lambda x: (x % 5, 1))
        ones.state_machine(Control(scope.input_from(ctl), bins=8), count_words).inspect(running.append).probe_with(probe)
    fed = []
    for epoch in range(2):
        if epoch == 1:
            while len(worker.members) == 3:
                worker.step()
        batch = [(worker.index * 100 + epoch * 10 + i) for i in range(10)]
        inp.send_batch(batch)
        fed.extend((epoch, x) for x in batch)
        inp.advance_to(epoch + 1)
        ctl.advance_to(epoch + 1)
        for _ in range(3):
            worker.step()
        if epoch == 0:
            (DIR / f"built-{worker.index}").touch()
    for handle in (inp, ctl):
        handle.close()
    while not probe.done():
        worker.step()
    print(json.dumps(dict(fed=fed, counted=counted, running=running)), flush=True)


timely.execute_from_args(sys.argv[2:], main)
