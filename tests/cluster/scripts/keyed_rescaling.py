"""Keyed operators while processes join and leave (`support.rescaling`): every worker, the
joined ones included once they have bootstrapped, feeds the records of the plan of SEED each
epoch into `count_by_key` (with and without a key function), `aggregate`, a `unary_notify`
that sums per (time, key) behind `exchange=`, a Megaphone `keyed_unary` counting per (time,
key) whose bins worker 0 rebalances after each join, and a plain `exchange`. Worker 0 asks the
launcher for the plan's processes (`timely_py.launch.add_process`) and then, with LEAVE
"remove", asks it to make the plan's process leave (`timely_py.launch.remove_process`); with
LEAVE "leave", the first worker of that process calls `worker.leave()` itself instead. A worker runs until it
has seen the final membership for `AFTER` epochs (and at least the plan's epochs), or until
its process leaves, then writes what it fed and what each operator emitted on it to
OUTDIR/W.json. With LEAVE "ignore" (asked as "remove") the leaving process's program ignores
`worker.leaving`: it feeds on every epoch (worker 0 its commands too), noting what its inputs
refused (`LeavingError`), until its dataflows are gone and at least one batch was refused;
with "raise" it does not catch the refusal, which ends `main` (its output is written on the
way out).
Usage: keyed_rescaling.py SEED OUTDIR WORKERS_PER_PROCESS LEAVE RUNTIME_FLAGS (under the launcher)"""

import json
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for `support`

import timely_py as timely  # noqa: E402
from support.rescaling import AFTER, PAUSE, plan  # noqa: E402
from timely_py import launch  # noqa: E402
from timely_py.megaphone import Control, Controller, RoutingTable, Strategy  # noqa: E402

args = timely.program_args(sys.argv[1:])
LEAVE = args[3]  # "no", "remove", "leave", "rejoin", "ignore" or "raise"
#: The leaving process's program feeds on after its worker is leaving.
FEEDS_ON = LEAVE in ("ignore", "raise")
PLAN, OUTDIR, PER_PROCESS = plan(int(args[0]), LEAVE != "no", LEAVE == "rejoin"), Path(args[1]), int(args[2])
#: Worker indices in use, and workers present, once every join and leave happened.
PEERS, MEMBERS = PLAN.processes * PER_PROCESS, PLAN.final_processes * PER_PROCESS
#: Worker indices in use once the joins before the leave happened.
BEFORE_LEAVE = (PLAN.initial + PLAN.joins) * PER_PROCESS
#: A worker that counts this many epochs without every join having happened gives up.
GIVE_UP = 2000
#: Bins of the Megaphone operator.
BINS = 64


def key(record):
    return record[0]


def sum_per_time(stream):
    """A sum per (time, key) kept by a generic operator behind `exchange=key`, emitted when
    the time completes."""
    sums = defaultdict(lambda: defaultdict(int))

    def logic(input, output, notificator):
        for capability, batch in input:
            for k, value in batch:
                sums[capability.time][k] += value
            notificator.notify_at(capability)
        for capability in notificator:
            output.give_all(capability, sums.pop(capability.time, {}).items())

    return stream.unary_notify(logic, name="SumPerTime", exchange=key)


def count_per_time(stream, control):
    """A Megaphone `keyed_unary` counting per (time, key) in the key's state, emitted from a
    notification at the time: the state and the pending notification move with the key's bin."""

    def on_record(k, record, counts, context):
        counts = counts or {}
        counts[context.time] = counts.get(context.time, 0) + 1
        context.notify_at(context.time)
        return counts

    def on_notify(k, counts, context):
        context.give((k, counts.pop(context.time)))
        return counts or None

    return stream.keyed_unary(control, key=key, on_record=on_record, on_notify=on_notify)


def main(worker):
    data, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    out = {name: [] for name in ("fed", "exchange", "count_by_key", "count_by_key(key)", "aggregate", "unary_notify",
                                 "megaphone", "refused")}
    state = {"first": data.time, "epoch": data.time, "asked": [], "removed": [], "gone_at": None, "refusals": 0}
    try:
        run(worker, data, ctl, probe, out, state)
    finally:
        left = worker.leaving
        result = {"worker": worker.index, "first_epoch": state["first"], "last_epoch": state["epoch"], "left": left,
                  "asked": state["asked"], "removed": state["removed"], "members": worker.members,
                  "gone_at": state["gone_at"], "refusals": state["refusals"], **out}
        path = OUTDIR / f"{worker.index}.json"
        path.with_suffix(".tmp").write_text(json.dumps(result))
        path.with_suffix(".tmp").rename(path)


def feed(handle, records, state):
    """Sends `records` through `handle`; True if it accepted them. A refusal (the worker is
    leaving) is counted in `state`; with LEAVE "raise" it ends `main`."""
    try:
        handle.send_batch(records)
        return True
    except timely.LeavingError:
        state["refusals"] += 1
        if LEAVE == "raise":
            raise
        return False


def run(worker, data, ctl, probe, out, state):

    def record(name):
        return lambda t, pair: out[name].append([t, *pair])

    with worker.dataflow() as scope:
        stream = scope.input_from(data)
        stream.exchange(key).inspect_time(record("exchange")).probe_with(probe)
        stream.map(key).count_by_key().inspect_time(record("count_by_key")).probe_with(probe)
        stream.count_by_key(key).inspect_time(record("count_by_key(key)")).probe_with(probe)
        stream.aggregate(key, lambda acc, r: acc + r[1], lambda: 0).inspect_time(record("aggregate")).probe_with(probe)
        sum_per_time(stream).inspect_time(record("unary_notify")).probe_with(probe)
        control = Control(scope.input_from(ctl), bins=BINS, name="CountPerTime")
        count_per_time(stream, control).inspect_time(record("megaphone")).probe_with(probe)

    worker.bootstrap()
    # Worker 0 rebalances the Megaphone bins over the workers present each time it sees a join.
    controller = Controller(RoutingTable.round_robin(bins=BINS, peers=worker.peers))
    planned = worker.peers
    epoch = first = state["first"] = data.time
    counted = {}  # (processes counted, workers present) -> the epoch this worker first saw them
    asked = state["asked"]  # on worker 0: the processes it asked for
    removed = state["removed"]  # on worker 0: the process it asked to leave
    while FEEDS_ON or not worker.leaving:
        if worker.leaving and not worker.has_dataflows and state["refusals"]:
            state["gone_at"] = epoch  # it fed on until its process's leave was complete
            break
        processes = worker.peers // PER_PROCESS
        seen = counted.setdefault((worker.peers, len(worker.members)), epoch)
        done = epoch >= PLAN.epochs and (worker.peers, len(worker.members)) == (PEERS, MEMBERS) and epoch >= seen + AFTER
        if done and not (FEEDS_ON and worker.leaving):
            break
        if epoch - first > GIVE_UP:
            raise SystemExit(f"worker {worker.index}: still {worker.peers} workers, members {worker.members} "
                             f"after {GIVE_UP} epochs")
        all_joined = min((e for (p, _), e in counted.items() if p == BEFORE_LEAVE), default=None)
        leave_now = PLAN.leaver is not None and all_joined is not None \
            and epoch >= max(all_joined + PLAN.leave_gap, PLAN.first_join_at)
        if LEAVE == "leave" and leave_now and worker.index == PLAN.leaving_process * PER_PROCESS:
            worker.leave()
            break
        if worker.index == 0:
            if not asked and PLAN.joins and epoch >= PLAN.first_join_at:
                asked.append(launch.add_process(server=PLAN.server(0, worker.peers)))
            elif len(asked) < PLAN.joins and (joined := min((e for (p, _), e in counted.items()
                                                             if p > PLAN.initial * PER_PROCESS), default=None)) \
                    is not None and epoch >= joined + PLAN.second_join_gap:
                asked.append(launch.add_process(server=PLAN.server(1, worker.peers)))
            elif LEAVE in ("remove", "rejoin", "ignore", "raise") and leave_now and not removed:
                removed.append(launch.remove_process(PLAN.leaving_process))
                if PLAN.rejoin:
                    # The launcher starts the joiner once the leaver is gone; worker 0 steps on
                    # meanwhile (the leave needs it), so it asks from a thread.
                    ask = threading.Thread(target=lambda: asked.append(launch.add_process(server=0)))
                    ask.start()
            if worker.peers > planned:
                planned = worker.peers
                controller.rebalance(worker.members, Strategy.batched(8), earliest=epoch + 1)
            feed(ctl, controller.due(epoch), state)
            time.sleep(PAUSE)
        records = PLAN.records(epoch, worker.index)
        out["fed" if feed(data, records, state) else "refused"] += [[epoch, *r] for r in records]
        epoch = state["epoch"] = epoch + 1
        data.advance_to(epoch)
        ctl.advance_to(epoch)
        while probe.less_than(epoch):
            worker.step_or_park(0.01)
        if worker.leaving:
            # Its dataflows may be complete (the probe shows no time) before the answers that
            # end its leave arrive: a leaver that feeds on steps each epoch to take them in.
            worker.step_or_park(0.01)
    data.close()
    ctl.close()
    left = worker.leaving
    # A leaving worker steps until its process has left (its dataflows end there); the others
    # until every worker's input is closed.
    while worker.step_or_park(0.01) if left else not probe.done():
        if not left:
            worker.step_or_park(0.01)


timely.execute_from_args(sys.argv[1:], main)
