"""A join asked for while another process leaves by itself (`tests/cluster/test_join_during_leave.py`).

Three processes of one worker under the launcher. Every worker feeds the records of
`records(epoch, worker)` each epoch into `count_by_key`. Worker 2 calls `worker.leave()`
itself in epoch LEAVE_AT (the launcher does not see that leave) and steps on for LINGER
seconds before its program returns, and worker 0 calls
`launch.add_process()` in epoch JOIN_AT, each after a short pause of the seed's drawing, so
that the join's connection and the leave land in either order. The joined worker feeds
from its first epoch on. A worker that stays runs until it has seen the final membership
(workers 0, 1 and 3 present) for AFTER epochs and reached END; each writes what it fed and
what `count_by_key` emitted on it to OUTDIR/W.json.
Usage: join_during_leave.py SEED OUTDIR RUNTIME_FLAGS (under the launcher)"""

import json
import random
import sys
import time
from pathlib import Path

import timely_py as timely
from timely_py import launch

args = timely.program_args(sys.argv[1:])
SEED, OUTDIR = int(args[0]), Path(args[1])
DRAW = random.Random(SEED)
LEAVE_AT = DRAW.randint(2, 5)
JOIN_AT = LEAVE_AT + DRAW.randint(-2, 1)
LEAVE_PAUSE, JOIN_PAUSE = DRAW.uniform(0, 0.05), DRAW.uniform(0, 0.05)
#: Seconds the leaver's program steps on after `leave()` before it returns: its process says
#: goodbye only then, so a joiner started meanwhile finds the leave in progress.
LINGER = DRAW.choice([0.0, 0.6, 1.5])
#: Epochs every worker runs at least, and epochs after it saw the final membership.
END, AFTER = 12, 5
#: Worker 0 pauses this long per epoch, so that the join lands among the epochs.
PAUSE = 0.02
#: Seconds after which a worker gives up waiting for the final membership.
GIVE_UP = 75.0
KEYS = [0, 1, 2, 3, 5, 8, 13, "a", "b", "ab", "abc", "z"]


def records(epoch, worker):
    """The keys worker `worker` feeds in `epoch` (a key may come several times)."""
    draw = random.Random(SEED * 1_000_003 + epoch * 101 + worker)
    return [draw.choice(KEYS) for _ in range(draw.randint(3, 9))]


def main(worker):
    data, probe = timely.InputHandle(), timely.ProbeHandle()
    out = {"worker": worker.index, "fed": [], "counts": [], "left": False, "joined": False}
    with worker.dataflow() as scope:
        (scope.input_from(data).count_by_key()
         .inspect_time(lambda t, pair: out["counts"].append([t, *pair])).probe_with(probe))
    out["joined"] = worker.bootstrap()
    epoch, started, final_since = data.time, time.monotonic(), None
    try:
        while True:
            if worker.members == [0, 1, 3]:
                final_since = epoch if final_since is None else final_since
            if epoch >= END and final_since is not None and epoch >= final_since + AFTER:
                break
            if time.monotonic() - started > GIVE_UP:
                raise SystemExit(f"worker {worker.index}: members {worker.members} after {GIVE_UP} s")
            if worker.index == 2 and epoch == LEAVE_AT:
                time.sleep(LEAVE_PAUSE)
                asked = time.monotonic()
                worker.leave()
                out["left"], out["leave_waited"] = True, time.monotonic() - asked
                while time.monotonic() - asked < LINGER:
                    worker.step_or_park(0.01)
                break
            if worker.index == 0:
                if epoch == JOIN_AT:
                    time.sleep(JOIN_PAUSE)
                    launch.add_process()
                time.sleep(PAUSE)
            keys = records(epoch, worker.index)
            data.send_batch(keys)
            out["fed"] += [[epoch, key] for key in keys]
            epoch += 1
            data.advance_to(epoch)
            while probe.less_than(epoch):
                worker.step_or_park(0.01)
        data.close()
        while worker.step_or_park(0.01) if worker.leaving else not probe.done():
            if not worker.leaving:
                worker.step_or_park(0.01)
    finally:
        path = OUTDIR / f"{worker.index}.json"
        path.with_suffix(".tmp").write_text(json.dumps(out))
        path.with_suffix(".tmp").rename(path)


timely.execute_from_args(sys.argv[1:], main)
