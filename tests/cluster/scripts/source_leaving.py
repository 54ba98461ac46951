"""A generic source that never stops, on a process that leaves (`support.source_leaving`): every
worker runs the source "Numbers" of the plan of SEED into a plain `exchange` and a keyed
`count_by_key`; the sources of the leaving process give records every epoch forever, never
look at `worker.leaving` and catch nothing (with HOW "fail", they turn the `LeavingError` of
their released capability into an unrelated exception). The leave is asked by hand
(`worker.leave()`, HOW "leave" and "fail") or through the launcher
(`launch.remove_process`, HOW "remove"). Every worker steps until its dataflow is complete
(on the leaver: until its process left), then writes OUTDIR/W.json.
Usage: source_leaving.py SEED OUTDIR PROCESSES WORKERS_PER_PROCESS HOW RUNTIME_FLAGS (under the launcher)"""

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
PLAN = plan(int(args[0]), int(args[2]), int(args[3]), args[4])


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
            epoch = state["epoch"]
            if touch == "time":
                assert capability.time == epoch, (capability.time, epoch)
            elif touch == "downgrade":
                capability.downgrade(epoch)
            if time.monotonic() < start + epoch * PACE:
                if touch == "give":
                    output.give_all(capability, [])
                elif touch == "delayed":
                    capability.delayed(epoch).release()
                info.activate()
                return
            if not forever and epoch == PLAN.stay_epochs:
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
    state = {"epoch": 0, "emitted": out["emitted"], "stopped": None, "done": False}
    probe = timely.ProbeHandle()
    with worker.dataflow() as scope:
        stream = scope.source(numbers(worker, state), name="Numbers")
        stream.exchange(key).inspect_time(lambda t, r: out["exchange"].append([t, *r])).probe_with(probe)
        stream.count_by_key(key).inspect_time(lambda t, kc: out["counts"].append([t, *kc])).probe_with(probe)
    asks = {"remove": PLAN.remover * PLAN.workers}.get(PLAN.how, PLAN.leaver * PLAN.workers)
    asked = False
    try:
        while worker.step_or_park(0.01):
            if asked or worker.index != asks:
                continue
            if PLAN.how == "remove" and not probe.less_than(PLAN.leave_at + 1):
                launch.remove_process(PLAN.leaver)
                asked = True
            elif PLAN.how != "remove" and state["epoch"] > PLAN.leave_at:
                worker.leave()
                asked = True
    finally:
        result = {"worker": worker.index, "leaving": worker.leaving, "members": worker.members,
                  "epoch": state["epoch"], "stopped": state["stopped"], **out}
        path = OUTDIR / f"{worker.index}.json"
        path.with_suffix(".tmp").write_text(json.dumps(result))
        path.with_suffix(".tmp").rename(path)


timely.execute_from_args(sys.argv[1:], main)
