"""A keyed running sum reported from per-key notifications (`keyed_unary`) on a cluster that a
process joins while it runs. Every worker, the joined ones included, feeds records each epoch;
worker 0 rebalances the bins over every worker as soon as it counts the new workers. Prints
`ready` when worker 0 finished epoch 3 (a join can come), and one JSON line per worker at the
end: {"worker": W, "fed": [[epoch, key, value], ...], "sums": [[worker, time, key, sum], ...]}.
The initial workers run until they count JOINED workers, then 8 more epochs.
Usage: megaphone_join_sums.py JOINED STRATEGY RUNTIME_FLAGS"""

import json
import random
import sys

import timely_py as timely
from timely_py.megaphone import Control, Controller, RoutingTable, Strategy

BINS = 32
LAG = 2

args = timely.program_args(sys.argv[1:])
joined_peers, strategy_name = int(args[0]), args[1]
strategy = Strategy.batched(2) if strategy_name == "batched" else getattr(Strategy, strategy_name)()


def add(key, record, total, context):
    context.notify_at(context.time + LAG)
    return (total or 0) + record[1]


def main(worker):
    data, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    sums, fed = [], []
    report = lambda key, total, context: context.give((key, total)) or total  # noqa: E731
    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=BINS, name="Sums")
        (scope.input_from(data)
            .keyed_unary(control, key=lambda r: r[0], on_record=add, on_notify=report)
            .inspect_time(lambda t, x: sums.append((worker.index, t, *x)))
            .probe_with(probe))
    joined = worker.bootstrap()
    controller = Controller(RoutingTable.round_robin(BINS, worker.peers))
    epoch, last = data.time, data.time + 10 if joined else 1000
    while epoch < last or not controller.idle:
        rng = random.Random(epoch * 100 + worker.index)
        records = [(f"k{rng.randrange(30)}", rng.randrange(1, 10)) for _ in range(8)]
        data.send_batch(records)
        fed += [(epoch, key, value) for key, value in records]
        ctl.send_batch(controller.due(epoch))
        data.advance_to(epoch + 1)
        ctl.advance_to(epoch + 1)
        while probe.less_than(epoch + 1):
            worker.step_or_park(0.01)
        if worker.index == 0 and epoch == 3:
            print("ready", flush=True)
        if not joined and worker.peers >= joined_peers and last == 1000:
            last = epoch + 8
            if worker.index == 0:
                controller.rebalance(worker.peers, strategy, epoch + 2)
        epoch += 1
    data.close()
    ctl.close()
    while not probe.done():
        worker.step_or_park(0.01)
    # One write per line, so that the lines of two worker threads cannot interleave.
    sys.stdout.write(json.dumps({"worker": worker.index, "fed": fed, "sums": sums}) + "\n")
    sys.stdout.flush()


timely.execute_from_args(sys.argv[1:], main)
