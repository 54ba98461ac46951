"""Keyed operators while processes join (`support.rescaling`): every worker, the joined ones
included once they have bootstrapped, feeds the records of the plan of SEED each epoch into
`count_by_key` (with and without a key function), `aggregate`, a `unary_notify` that sums per
(time, key) behind `exchange=`, and a plain `exchange`. Worker 0 asks the launcher for one or
two processes (`timely_py.launch.add_process`) as the plan says. A worker runs until it has
counted every joined worker for `AFTER` epochs (and at least the plan's epochs), then writes
what it fed and what each operator emitted on it to OUTDIR/W.json.
Usage: keyed_rescaling.py SEED OUTDIR WORKERS_PER_PROCESS RUNTIME_FLAGS (under the launcher)"""

import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for `support`

import timely_py as timely  # noqa: E402
from support.rescaling import AFTER, PAUSE, PROCESSES, plan  # noqa: E402
from timely_py import launch  # noqa: E402

args = timely.program_args(sys.argv[1:])
PLAN, OUTDIR, PER_PROCESS = plan(int(args[0])), Path(args[1]), int(args[2])
FINAL = (PROCESSES + PLAN.joins) * PER_PROCESS
#: A worker that counts this many epochs without every join having happened gives up.
GIVE_UP = 2000


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


def main(worker):
    data, probe = timely.InputHandle(), timely.ProbeHandle()
    out = {name: [] for name in ("fed", "exchange", "count_by_key", "count_by_key(key)", "aggregate", "unary_notify")}

    def record(name):
        return lambda t, pair: out[name].append([t, *pair])

    with worker.dataflow() as scope:
        stream = scope.input_from(data)
        stream.exchange(key).inspect_time(record("exchange")).probe_with(probe)
        stream.map(key).count_by_key().inspect_time(record("count_by_key")).probe_with(probe)
        stream.count_by_key(key).inspect_time(record("count_by_key(key)")).probe_with(probe)
        stream.aggregate(key, lambda acc, r: acc + r[1], lambda: 0).inspect_time(record("aggregate")).probe_with(probe)
        sum_per_time(stream).inspect_time(record("unary_notify")).probe_with(probe)

    worker.bootstrap()
    epoch = first = data.time
    counted = {}  # processes counted -> the epoch this worker first counted them in
    asked = []  # on worker 0: the epochs it asked for a process in
    while True:
        processes = worker.peers // PER_PROCESS
        counted.setdefault(processes, epoch)
        if epoch >= PLAN.epochs and processes == PROCESSES + PLAN.joins and epoch >= counted[processes] + AFTER:
            break
        if epoch - first > GIVE_UP:
            raise SystemExit(f"worker {worker.index}: still {worker.peers} workers after {GIVE_UP} epochs")
        if worker.index == 0:
            if not asked and epoch >= PLAN.first_join_at:
                asked.append(launch.add_process(server=PLAN.server(0, worker.peers)))
            elif len(asked) < PLAN.joins and PROCESSES + 1 in counted \
                    and epoch >= counted[PROCESSES + 1] + PLAN.second_join_gap:
                asked.append(launch.add_process(server=PLAN.server(1, worker.peers)))
            time.sleep(PAUSE)
        records = PLAN.records(epoch, worker.index)
        data.send_batch(records)
        out["fed"] += [[epoch, *r] for r in records]
        epoch += 1
        data.advance_to(epoch)
        while probe.less_than(epoch):
            worker.step_or_park(0.01)
    data.close()
    while not probe.done():
        worker.step_or_park(0.01)
    result = {"worker": worker.index, "first_epoch": first, "last_epoch": epoch, "asked": asked, **out}
    path = OUTDIR / f"{worker.index}.json"
    path.with_suffix(".tmp").write_text(json.dumps(result))
    path.with_suffix(".tmp").rename(path)


timely.execute_from_args(sys.argv[1:], main)
