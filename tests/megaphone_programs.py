"""Programs of the Megaphone tests, shared by the in-process tests and the cluster script
(`cluster_scripts/megaphone_counts.py`): a word count (`state_machine`) and a keyed running
sum reported from notifications (`keyed_unary`) while every bin is gathered on the last
worker and then spread again, and their sequential references."""

import random
from collections import defaultdict

import timely_py as timely
from timely_py.megaphone import Control, Move, RoutingTable, Strategy, plan, rebalance

EPOCHS = 40
BINS = 16
#: Notifications of the running sum come this many epochs after a key's record.
LAG = 2
#: The epoch at which the bins start to gather on the last worker.
GATHER = 3
WORDS = [f"w{i}" for i in range(40)] + ["apple", ("tuple", 1), b"bytes", 7]


def epoch_records(epoch):
    """The `(key, value)` records of `epoch`, the same in every process."""
    rng = random.Random(epoch)
    return [(rng.choice(WORDS), rng.randrange(1, 10)) for _ in range(60)]


def schedule(peers, strategy):
    """The commands by time: every bin to the last worker from `GATHER` on, then spread
    evenly again right after; and the span of times in which the last worker owns every bin."""
    table = RoutingTable.round_robin(BINS, peers)
    gathered = RoutingTable([peers - 1] * BINS)
    commands = plan(table, gathered, strategy, GATHER)
    gathered_from = max((t for t, _ in commands), default=GATHER)
    spread = rebalance(gathered, peers, strategy, start=gathered_from + 3)
    assert spread or peers == 1
    by_time = defaultdict(list)
    for time, move in commands + spread:
        by_time[time].append(move if time % 2 else tuple(move))  # both forms of commands
    last = max(by_time, default=0)
    assert last < EPOCHS - LAG - 2, "the plan must end before the input"
    return by_time, (gathered_from, gathered_from + 3)


def run(worker, strategy):
    """Runs both operators on `worker`; returns `(counts, sums)`, each a list of
    `(worker, time, output)`."""
    peers = worker.peers
    by_time, _ = schedule(peers, strategy)
    data, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    counts, sums = [], []
    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=BINS, name="Test")
        records = scope.input_from(data)
        (records.map(lambda r: (r[0], 1)).state_machine(control, count_words)
            .inspect_time(lambda t, x: counts.append((worker.index, t, x)))
            .probe_with(probe))
        (records.keyed_unary(control, key=lambda r: r[0], on_record=add, on_notify=report)
            .inspect_time(lambda t, x: sums.append((worker.index, t, x)))
            .probe_with(probe))
    for epoch in range(EPOCHS):
        mine = epoch_records(epoch)[worker.index::peers]
        data.send_batch(mine)
        if worker.index == 0:
            ctl.send_batch(by_time.get(epoch, []))
        data.advance_to(epoch + 1)
        ctl.advance_to(epoch + 1)
        while probe.less_than(epoch + 1):
            worker.step()
    data.close()
    ctl.close()
    while not probe.done():
        worker.step()
    return counts, sums


def count_words(word, n, count):
    count = (count or 0) + n
    return count, [(word, count)]


def add(key, record, total, context):
    context.notify_at(context.time + LAG)
    return (total or 0) + record[1]


def report(key, total, context):
    context.give((key, total))
    return total


def reference_counts():
    """Every `(time, (word, running count))` a sequential run produces: counting each
    record as 1, the running counts of one time do not depend on the order of its records."""
    totals, out = defaultdict(int), []
    for epoch in range(EPOCHS):
        for word, _ in epoch_records(epoch):
            totals[word] += 1
            out.append((epoch, (word, totals[word])))
    return out


def reference_sums():
    """`(time, (key, sum of its values at times <= time))` for every key and time a
    notification was asked for."""
    asked = {(epoch + LAG, key) for epoch in range(EPOCHS) for key, _ in epoch_records(epoch)}
    out = []
    for time, key in asked:
        total = sum(v for e in range(min(time, EPOCHS - 1) + 1) for k, v in epoch_records(e) if k == key)
        out.append((time, (key, total)))
    return out


def canonical(outputs):
    """Outputs without their worker, sorted, with keys made comparable."""
    return sorted(((t, repr(x)) for _, t, x in outputs))


def canonical_reference(reference):
    return sorted((t, repr(x)) for t, x in reference)
