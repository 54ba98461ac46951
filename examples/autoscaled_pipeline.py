"""A pipeline that sizes its own cluster: an enrichment step that waits on a (simulated)
remote service per record, and an autoscaler that adds processes when that step cannot keep
up with the rate offered.

Run it under the launcher, which carries out the joins the autoscaler asks for:

    python -m timely_py.launch -n 2 --autoscale --max 3 examples/autoscaled_pipeline.py \
        [--rate 400] [--seconds 8] [--call 0.005] [--metrics-only]

Worker 0 offers RATE orders per second for SECONDS seconds, on a wall-clock schedule of ten
epochs a second (so the rate offered does not depend on how fast the cluster is). Orders are
numbered; worker 0 only says which numbers each epoch holds, and the workers present make
the orders and enrich them, each its share of every epoch (`timely_py.shares.numbered`: a
joined process takes a share from the epoch it is a member on). `enrich` waits CALL seconds
per order (the remote call: work that waits, which more processes speed up even on a
machine with few cores) and adds a price; totals are summed per worker. Process 0's autoscaler reads the trace events of its own
workers in-process (`trace_callback=scaler.observe`), and worker 0 ticks it once per loop:
when the enrichment step's utilisation is above the band, it asks the launcher for more
processes (up to `--max`), and the joined process takes its share of the orders. The
program tells the autoscaler the rate it offers (`scaler.offer`: one range of order numbers
per epoch, which the autoscaler carries through the graph to orders per second).

Each decision that changes something is printed with its explanation; at the end every
worker prints its order count and revenue, and worker 0 prints the sequential reference
(the sum of the revenues printed by all processes must equal it).
`--metrics-only` decides and explains without acting. Without the launcher's
`--autoscale`, the settings are the program's own (2 to 3 processes, target 0.7).
"""

import argparse
import os
import sys
import time

# The autoscaler needs only these event classes; a callback every 0.1 s.
os.environ.setdefault("TIMELY_TRACE_EVENTS", "operators,schedule,messages")
os.environ.setdefault("TIMELY_TRACE_FLUSH", "0.2")

import timely_py as timely  # noqa: E402
from timely_py import autoscale, shares  # noqa: E402

parser = argparse.ArgumentParser(description="An autoscaled enrichment pipeline.")
parser.add_argument("--rate", type=float, default=400.0, help="orders offered per second")
parser.add_argument("--seconds", type=float, default=8.0, help="how long orders are offered")
parser.add_argument("--call", type=float, default=0.005, help="seconds each remote call waits")
parser.add_argument("--metrics-only", action="store_true", help="decide and explain, never act")
options = parser.parse_args(timely.program_args(sys.argv[1:]))

EPOCH = 0.1
PER_EPOCH = int(options.rate * EPOCH)
EPOCHS = int(options.seconds / EPOCH)

scaler = autoscale.Autoscaler(autoscale.Settings.from_environment(
    min_processes=2, max_processes=3, window=1.5, stabilisation=3.0, metrics_only=options.metrics_only,
))
# What the source is offered: one range of order numbers per epoch. Worker 0 feeds and also
# runs its share of the operators, so when they fall behind its feeding slows down with
# them: its observed rate then says what the cluster managed, not what it was asked to take.
scaler.offer("Input", 1 / EPOCH)


def order(n):
    """Order n: (order id, customer, quantity)."""
    return (n, n % 17, 1 + n % 5)


def price(customer, quantity):
    return quantity * (3 + customer % 4)


def enrich(record):
    """The remote call: looks the price up (waits CALL seconds)."""
    order_id, customer, quantity = record
    time.sleep(options.call)
    return (customer, price(customer, quantity))


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    totals = {"orders": 0, "revenue": 0}

    def book(record):
        totals["orders"] += 1
        totals["revenue"] += record[1]

    with worker.dataflow("Orders") as scope:
        (shares.numbered(scope.input_from(inp), make=order)  # this worker's share of each epoch's orders
              .map(enrich)
              .inspect(book)
              .probe_with(probe))

    def report():
        print(f"worker {worker.index}: {totals['orders']} orders, revenue {totals['revenue']}")

    joined = worker.bootstrap()  # True in a process the autoscaler added
    if joined:
        print(f"worker {worker.index}: joined, {worker.peers} workers now")
    if joined or worker.index != 0:  # only worker 0 feeds; the others take part to the end
        inp.close()
        while not probe.done():
            worker.step_or_park(0.05)
        report()
        return
    start, epoch, said = time.monotonic(), 0, None
    while epoch < EPOCHS:
        due = min(EPOCHS, int((time.monotonic() - start) / EPOCH) + 1)
        while epoch < due:
            inp.send((epoch * PER_EPOCH, (epoch + 1) * PER_EPOCH))  # the order numbers of this epoch
            epoch += 1
            inp.advance_to(epoch)
        decision = scaler.tick(worker)
        if decision.action not in ("wait", "no_data") and (decision.action, decision.desired) != said:
            said = (decision.action, decision.desired)
            print(f"epoch {epoch}: " + decision.explain())
        worker.step_or_park(0.02)
    inp.close()
    while not probe.done():
        worker.step_or_park(0.05)
    report()
    reference = sum(price(*order(n)[1:]) for n in range(EPOCHS * PER_EPOCH))
    print(f"reference: {EPOCHS * PER_EPOCH} orders, revenue {reference}; "
          f"{len(scaler.actions)} actions, {scaler.processes} processes at the end")


if __name__ == "__main__":
    timely.execute_from_args(sys.argv[1:], main, trace_callback=scaler.observe)
