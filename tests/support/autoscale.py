"""Helpers of the autoscaler's suite (`tests/autoscale/`): a workload whose cost is a sleep
per record (a simulated remote call: on 2 cores only such work scales with processes), runs
of it traced in-process, and the signals' totals computed again from the same events by the
plainest Python loop, as a reference for `timely_py.autoscale.window`."""

import time
from collections import defaultdict

import pyarrow as pa
import timely_py as timely


def sleepy_main(epochs, per_epoch, sleep, *, on_epoch=None, by=0):
    """`main(worker)`: worker `by` feeds `epochs` epochs of `per_epoch` numbers into
    input -> exchange -> map (sleeps `sleep` s per record, doubles it) -> probe, stepping
    until each epoch is done; `on_epoch(worker, epoch)` runs after each epoch. Returns the
    sum of the records this worker's map produced, for a check against `sum(2 x)`."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        total = [0]

        def work(x):
            time.sleep(sleep)
            total[0] += 2 * x
            return 2 * x

        with worker.dataflow() as scope:
            scope.input_from(inp).exchange(lambda x: x).map(work).probe_with(probe)
        for epoch in range(epochs):
            if worker.index == by:
                inp.send_batch(list(range(epoch * per_epoch, (epoch + 1) * per_epoch)))
            inp.advance_to(epoch + 1)
            while probe.less_than(inp.time):
                worker.step_or_park(0.01)
            if on_epoch is not None:
                on_epoch(worker, epoch)
        return total[0]

    return main


def traced_run(main, workers, **keywords):
    """Runs `main` on `workers` workers with a trace callback; returns the results and every
    `(worker, batch)` the callback received, in order."""
    batches = []
    results = timely.execute(main, workers=workers, trace_callback=lambda w, b: batches.append((w, b)), **keywords)
    return results, batches


def split_batches(batches, rows):
    """The same events in batches of at most `rows` rows (runs then straddle batches)."""
    out = []
    for worker, batch in batches:
        for offset in range(0, batch.num_rows, rows):
            out.append((worker, batch.slice(offset, rows)))
    return out


def reference_totals(batches, start_ns, end_ns):
    """What `EventWindow.totals` should say, by walking every event in order: per
    (worker, operator) the useful and busy ns of runs clipped to [start, end), per
    (worker, channel, sent) the records of messages in it."""
    useful = defaultdict(lambda: [0, 0])
    records = defaultdict(int)
    open_runs = {}
    for worker, batch in batches:
        for row in pa.Table.from_batches([batch]).to_pylist():
            kind, t = row["kind"], row["time_ns"]
            if kind == "schedule_start":
                open_runs[(worker, row["operator"])] = t
            elif kind == "schedule_stop":
                begun = open_runs.pop((worker, row["operator"]), None)
                if begun is None:
                    continue
                inside = min(t, end_ns) - max(begun, start_ns)
                if begun < end_ns and t > start_ns:
                    entry = useful[(worker, row["operator"])]
                    entry[1] += inside
                    if row["useful"]:
                        entry[0] += inside
            elif kind in ("message_send", "message_recv") and start_ns <= t < end_ns:
                records[(worker, row["channel"], kind == "message_send")] += row["records"]
    return ({key: tuple(value) for key, value in useful.items()}, dict(records))


def time_span(batches):
    """The first and last event time of `batches`."""
    times = [t for _, b in batches for t in b.column("time_ns").to_pylist()]
    return min(times), max(times)


def looping_main(epochs, per_epoch, sleep):
    """`main(worker)`: worker 0 feeds numbers 1.. into a loop that halves them until they
    reach 0, sleeping `sleep` s per iteration of each record (so a record x costs about
    log2(x) + 1 sleeps inside the loop), then a map after it. Returns how many records left
    the loop on this worker."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        done = [0]

        def halve(x):
            time.sleep(sleep)
            return x // 2

        with worker.dataflow() as scope:
            numbers = scope.input_from(inp)
            with scope.iterative("Halving") as inner:
                handle, back = inner.feedback((0, 1))
                body = numbers.enter(inner).concat(back).exchange(lambda x: x).map(halve)
                body.filter(lambda x: x > 0).connect_loop(handle)
                finished = body.filter(lambda x: x == 0).leave(scope)
            finished.map(lambda x: done.__setitem__(0, done[0] + 1)).probe_with(probe)
        for epoch in range(epochs):
            if worker.index == 0:
                inp.send_batch(list(range(1 + epoch * per_epoch, 1 + (epoch + 1) * per_epoch)))
            inp.advance_to(epoch + 1)
            while probe.less_than(inp.time):
                worker.step_or_park(0.01)
        return done[0]

    return main


class ChangeReporter:
    """Worker 0's lines in the autoscaler's scripted runs (`autoscale/scripts/`): each
    decision that is not a wait and differs from the one before (``autoscale: ...``, its
    explanation on ``  | `` lines) and the workers present when they change, with the epoch
    and the seconds since `start`, written by `say`."""

    def __init__(self, worker, start, say=print):
        self.worker, self.start, self.say = worker, start, say
        self.members, self.said = worker.members, None

    def __call__(self, decision, epoch):
        at = time.monotonic() - self.start
        if decision.action != "wait" and (decision.action, decision.desired) != self.said:
            self.said = (decision.action, decision.desired)
            self.say("autoscale: " + decision.explain().replace("\n", "\n  | "))
            self.say(f"worker 0: epoch {epoch}, decided at {at:.1f} s")
        if self.worker.members != self.members:
            self.members = self.worker.members
            self.say(f"worker 0: epoch {epoch}, workers present {self.members}, {at:.1f} s")
