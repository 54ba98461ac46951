"""Programs of the Megaphone tests, shared by the in-process tests and the cluster runs: a
word count (`state_machine`), a keyed running sum reported from notifications
(`keyed_unary`) and a join of two inputs with per-key balances (`keyed_binary`), while every
bin is gathered on the last worker and then spread again, and their sequential references.
`cluster/scripts/megaphone_counts.py` runs the first two on a cluster,
`cluster/scripts/megaphone_join.py` the join."""

import random
from collections import defaultdict

import timely_py as timely
from timely_py.megaphone import Control, RoutingTable, plan, rebalance

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


def drive(worker, strategy, build):
    """Runs the dataflow that `build(scope, control, probe)` describes on `worker` for
    `EPOCHS` epochs while the bins move as `schedule` says. `build` returns its inputs as
    `(handle, records_of)` pairs; this worker sends its share of `records_of(epoch)`."""
    peers = worker.peers
    by_time, _ = schedule(peers, strategy)
    ctl, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=BINS, name="Test")
        inputs = build(scope, control, probe)
    handles = [ctl] + [handle for handle, _ in inputs]
    for epoch in range(EPOCHS):
        for handle, records_of in inputs:
            handle.send_batch(records_of(epoch)[worker.index :: peers])
        if worker.index == 0:
            ctl.send_batch(by_time.get(epoch, []))
        for handle in handles:
            handle.advance_to(epoch + 1)
        while probe.less_than(epoch + 1):
            worker.step()
    for handle in handles:
        handle.close()
    while not probe.done():
        worker.step()


def run(worker, strategy):
    """Runs both operators on `worker`; returns `(counts, sums)`, each a list of
    `(worker, time, output)`."""
    counts, sums = [], []

    def build(scope, control, probe):
        data = timely.InputHandle()
        records = scope.input_from(data)
        (records.map(lambda r: (r[0], 1)).state_machine(control, count_words)
            .inspect_time(lambda t, x: counts.append((worker.index, t, x)))
            .probe_with(probe))
        (records.keyed_unary(control, key=lambda r: r[0], on_record=add, on_notify=report)
            .inspect_time(lambda t, x: sums.append((worker.index, t, x)))
            .probe_with(probe))
        return [(data, epoch_records)]

    drive(worker, strategy, build)
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


ACCOUNTS = [f"acct{i}" for i in range(10)] + [("joint", 1), b"ledger", 5]


def orders(epoch):
    """The first input of the join at `epoch`: `("order", account, amount)` records."""
    rng = random.Random(-1 - epoch)
    return [("order", rng.choice(ACCOUNTS), rng.randrange(1, 10)) for _ in range(10)]


def payments(epoch):
    """The second input: `{"account": account, "paid": amount}` records, of another shape
    than orders so that the two key functions differ."""
    rng = random.Random(10_000 + epoch)
    return [{"account": rng.choice(ACCOUNTS), "paid": rng.randrange(1, 10)} for _ in range(10)]


def run_join(worker, strategy):
    """Joins orders and payments by account with `keyed_binary`: every (order, payment) pair
    of an account is a match, sent when its later record arrives; each record also asks for
    the account's balance (ordered minus paid) `LAG` epochs later. Returns
    `(worker, time, output)` triples."""
    out = []

    def build(scope, control, probe):
        first, second = timely.InputHandle(), timely.InputHandle()
        (scope.input_from(first)
            .keyed_binary(scope.input_from(second), control, key1=lambda o: o[1], key2=lambda p: p["account"],
                          on_first=on_order, on_second=on_payment, on_notify=report_owed)
            .inspect_time(lambda t, x: out.append((worker.index, t, x)))
            .probe_with(probe))
        return [(first, orders), (second, payments)]

    drive(worker, strategy, build)
    return out


def on_order(account, order, state, context):
    owed, ordered, paid = state or (0, (), ())
    for amount in paid:
        context.give(("match", account, order[2], amount))
    context.notify_at(context.time + LAG)
    return owed + order[2], ordered + (order[2],), paid


def on_payment(account, payment, state, context):
    owed, ordered, paid = state or (0, (), ())
    for amount in ordered:
        context.give(("match", account, amount, payment["paid"]))
    context.notify_at(context.time + LAG)
    return owed - payment["paid"], ordered, paid + (payment["paid"],)


def report_owed(account, state, context):
    context.give(("owed", account, state[0]))
    return state


def reference_join():
    """Every `(time, output)` a sequential run of `run_join` produces: each match at the
    later of its two records' times, each balance at the time it was asked for."""
    ordered = [(e, account, amount) for e in range(EPOCHS) for _, account, amount in orders(e)]
    paid = [(e, p["account"], p["paid"]) for e in range(EPOCHS) for p in payments(e)]
    out = [
        (max(eo, ep), ("match", account, amount, p))
        for eo, account, amount in ordered
        for ep, other, p in paid
        if other == account
    ]
    asked = {(e + LAG, account) for e, account, _ in ordered + paid}
    for time, account in asked:
        owed = sum(a for e, k, a in ordered if k == account and e <= time)
        owed -= sum(p for e, k, p in paid if k == account and e <= time)
        out.append((time, ("owed", account, owed)))
    return out

