"""A generic source that never stops, on a process that leaves (`support.source_leaving`): every
worker runs the source "Numbers" of the plan of SEED into a plain `exchange` and a keyed
`count_by_key` (with JOIN "join", worker 0 first adds a process, whose workers do the same
from the first epoch their source is given); the sources of the leaving process give records every epoch forever, never
look at `worker.leaving` and catch nothing (with HOW "fail", they turn the `LeavingError` of
their released capability into an unrelated exception). The leave is asked by hand
(`worker.leave()`, HOW "leave" and "fail") or through the launcher
(`launch.remove_process`, HOW "remove"). Every worker steps until its dataflow is complete
(on the leaver: until its process left), then writes OUTDIR/W.json.
Usage: source_leaving.py SEED OUTDIR PROCESSES WORKERS_PER_PROCESS HOW JOIN RUNTIME_FLAGS (under the launcher)"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for `support`

import timely_py as timely  # noqa: E402
from support.source_leaving import FAILURE, PACE, plan  # noqa: E402
from timely_py import launch  # noqa: E402

args = timely.program_args(sys.argv[1:])
OUTDIR = Path(args[1])
PLAN = plan(int(args[0]), int(args[2]), int(args[3]), args[4], args[5] == "join")


def key(record):
    return record[0]


def numbers(worker, state):
    """The constructor of worker `worker`'s source; `state` gets its epoch, what it emitted
    and what ended its logic."""
    forever = worker.index in PLAN.leavers
    touch = PLAN.touch

    def constructor(capability, info):
        start = time.monotonic()

        def run(output):
            if state["epoch"] is None:  # at 0, or where a joined worker's bootstrap put it
                state["epoch"] = state["first"] = capability.time
            epoch = state["epoch"]
            if touch == "time":
                assert capability.time == epoch, (capability.time, epoch)
            elif touch == "downgrade":
                capability.downgrade(epoch)
            if time.monotonic() < start + (epoch - state["first"]) * PACE:
                if touch == "give":
                    output.give_all(capability, [])
                elif touch == "delayed":
                    capability.delayed(epoch).release()
                info.activate()
                return
            if not forever and state["stop_at"] is not None and epoch >= state["stop_at"]:
                capability.release()
                state["done"] = True
                return
            at = capability.delayed(epoch) if touch == "delayed" else capability
            for record in PLAN.records(epoch, worker.index):
                output.give(at, record)
                state["emitted"].append([epoch, *record])
            if at is not capability:
                at.release()
            state["epoch"] = epoch + 1
            capability.downgrade(epoch + 1)
            info.activate()

        def logic(output):
            if state["done"]:
                return
            try:
                run(output)
            except BaseException as error:
                state["stopped"] = [type(error).__name__, str(error)]
                if PLAN.how == "fail" and isinstance(error, timely.LeavingError):
                    raise RuntimeError(FAILURE) from None
                raise

        return logic

    return constructor


def main(worker):
    out = {"emitted": [], "exchange": [], "counts": []}
    state = {"epoch": None, "first": None, "emitted": out["emitted"], "stopped": None, "done": False,
             "stop_at": None if PLAN.join else PLAN.stay_epochs}
    probe = timely.ProbeHandle()
    with worker.dataflow() as scope:
        stream = scope.source(numbers(worker, state), name="Numbers")
        stream.exchange(key).inspect_time(lambda t, r: out["exchange"].append([t, *r])).probe_with(probe)
        stream.count_by_key(key).inspect_time(lambda t, kc: out["counts"].append([t, *kc])).probe_with(probe)
    joined = worker.bootstrap()
    asks = {"remove": PLAN.remover * PLAN.workers}.get(PLAN.how, PLAN.leaver * PLAN.workers)
    # A joined worker marks its bootstrap in a file the others look for: their members alone
    # cannot say it (a joined process that leaves at once may come and go within one step).
    joined_mark = OUTDIR / "joined"
    if joined:
        joined_mark.touch()
    asked = join_asked = saw_join = False
    seen_at = 0  # the epoch this worker's source was at when it saw the join
    try:
        while worker.step_or_park(0.01):
            if not saw_join and (not PLAN.join or joined_mark.exists()):
                saw_join, seen_at = True, (state["epoch"] or 0) if PLAN.join else 0
            if state["stop_at"] is None and saw_join and state["epoch"] is not None:
                state["stop_at"] = state["epoch"] + PLAN.stay_epochs
            if PLAN.join and not join_asked and worker.index == 0 and (state["epoch"] or 0) >= PLAN.join_at:
                launch.add_process()
                join_asked = True
            if asked or worker.index != asks or not saw_join or state["epoch"] is None:
                continue
            # The remove waits `leave_at` epochs after the join, so a joined leaver fed too.
            if PLAN.how == "remove" and not probe.less_than(seen_at + PLAN.leave_at + 1):
                launch.remove_process(PLAN.leaver)
                asked = True
            elif PLAN.how != "remove" and state["epoch"] - state["first"] > PLAN.leave_at:
                worker.leave()
                asked = True
    finally:
        result = {"worker": worker.index, "leaving": worker.leaving, "members": worker.members,
                  "epoch": state["epoch"], "stop_at": state["stop_at"], "joined": joined,
                  "stopped": state["stopped"], **out}
        path = OUTDIR / f"{worker.index}.json"
        path.with_suffix(".tmp").write_text(json.dumps(result))
        path.with_suffix(".tmp").rename(path)


timely.execute_from_args(sys.argv[1:], main)
