"""A launcher child for `timely_py.shares` across joins and leaves: worker 0 feeds, each
epoch, a range of record numbers of a size drawn from SEED into `shares.numbered`, and
carries out EVENTS one after the other (each once the previous one shows in
`worker.members`, GAP epochs later): ``join:GAP`` asks the launcher for a process (from a
thread: a join may wait for a leaver's goodbye, which needs worker 0 to step), and
``leave:P:GAP`` asks process P to leave. After the last event it feeds AFTER more epochs,
then closes. Every worker (joined ones too) steps until its probe is done and writes
OUTDIR/W.json: the `[epoch, number]` records it produced, and on worker 0 the ranges it fed
`[epoch, start, stop]` and the members at the end.

Usage: shares_rescaling.py SEED OUTDIR EVENTS RUNTIME_FLAGS (EVENTS comma-separated)
"""

import json
import random
import sys
import threading
import time
from pathlib import Path

import timely_py as timely
from timely_py import launch, shares

args = timely.program_args(sys.argv[1:])
SEED, OUTDIR, EVENTS = int(args[0]), Path(args[1]), [e.split(":") for e in args[2].split(",") if e]
AFTER = 6
PAUSE = 0.02


def main(worker):
    ranges, probe, produced = timely.InputHandle(), timely.ProbeHandle(), []
    with worker.dataflow() as scope:
        (shares.numbered(scope.input_from(ranges), pieces=16)
         .inspect_time(lambda t, n: produced.append([t, n])).probe_with(probe))
    joined = worker.bootstrap()
    result = {"worker": worker.index, "joined": joined}
    try:
        if worker.index == 0:
            result.update(drive(worker, ranges, probe))
        ranges.close()
        while not probe.done():
            worker.step_or_park(0.01)
    finally:
        result.update(produced=produced, left=worker.leaving)
        path = OUTDIR / f"{worker.index}.json"
        path.with_suffix(".tmp").write_text(json.dumps(result))
        path.with_suffix(".tmp").rename(path)


def processes(worker):
    per = len(worker.workers_of(0))
    return sorted({m // per for m in worker.members})


def drive(worker, ranges, probe):
    """Worker 0: feeds the ranges and carries out the events; returns what it fed."""
    rng = random.Random(SEED)
    fed, events, epoch, sent = [], list(EVENTS), 0, 0
    ready_at, waiting = int(events[0][-1]) if events else 0, None  # waiting: the test of the event under way
    threads = []
    while events or waiting is not None or epoch < ready_at + AFTER:
        if waiting is not None and waiting():
            waiting = None
            ready_at = epoch + (int(events[0][-1]) if events else 0)
        if waiting is None and events and epoch >= ready_at:
            event, before = events.pop(0), processes(worker)
            if event[0] == "join":
                thread = threading.Thread(target=launch.add_process, kwargs={"server": 0})
                thread.start()
                threads.append(thread)
                waiting = lambda before=before, thread=thread: (not thread.is_alive()  # noqa: E731
                                                                and len(processes(worker)) == len(before) + 1)
            else:
                leaver = int(event[1])
                launch.remove_process(leaver)
                waiting = lambda leaver=leaver: leaver not in processes(worker)  # noqa: E731
        size = rng.randint(0, 40)
        ranges.send((sent, sent + size))
        fed.append([epoch, sent, sent + size])
        sent += size
        epoch += 1
        ranges.advance_to(epoch)
        while probe.less_than(epoch):
            worker.step_or_park(0.01)
        time.sleep(PAUSE)
    for thread in threads:
        thread.join()
    return {"fed": fed, "members": worker.members, "last_event_done": ready_at}


timely.execute_from_args(sys.argv[1:], main)
