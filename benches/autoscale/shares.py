"""Whether more workers make a source faster with `timely_py.shares`: a source whose every
record costs MAKE seconds to make (a simulated fetch: a sleep, which releases the
interpreter, so worker threads overlap even on 2 cores) run on 1, 2 and 3 worker threads of
one process, made either by worker 0 alone and exchanged (`fed`) or by the workers present,
each a share of every epoch (`shares`, `timely_py.shares.numbered`); configurations in
turns, RUNS times each. Prints the median records per second of each, side by side.

    python benches/autoscale/shares.py [--runs 5] [--epochs 20] [--records 50] [--make 0.001]

Every run checks that each record was made exactly once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any, Callable, List

import timely_py as timely
from timely_py import shares


def workload(epochs: int, records: int, make_s: float, spread: bool) -> Callable[[Any], List[int]]:
    """`main(worker)`: `epochs` epochs of `records` records, each made by a sleep of `make_s`;
    returns the record numbers this worker received after the exchange."""

    def make(n: int) -> int:
        time.sleep(make_s)
        return n

    def main(worker: Any) -> List[int]:
        inp, probe, got = timely.InputHandle(), timely.ProbeHandle(), []
        with worker.dataflow() as scope:
            if spread:
                made = shares.numbered(scope.input_from(inp), make=make, pieces=16)
            else:
                made = scope.input_from(inp).map(make)
            made.exchange(lambda n: n).inspect(got.append).probe_with(probe)
        for epoch in range(epochs):
            if worker.index == 0:
                span = (epoch * records, (epoch + 1) * records)
                if spread:
                    inp.send(span)
                else:
                    inp.send_batch(list(range(*span)))
            inp.advance_to(epoch + 1)
        inp.close()
        while not probe.done():
            worker.step_or_park(0.001)
        return got

    return main


def run(workers: int, spread: bool, options: argparse.Namespace) -> float:
    """One run; returns records per second."""
    started = time.perf_counter()
    results = timely.execute(workload(options.epochs, options.records, options.make, spread), workers=workers)
    seconds = time.perf_counter() - started
    made = sorted(n for r in results for n in r)
    assert made == list(range(options.epochs * options.records)), "a record was lost or made twice"
    return options.epochs * options.records / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--records", type=int, default=50)
    parser.add_argument("--make", type=float, default=0.001, help="seconds to make one record")
    options = parser.parse_args()
    configs = [(w, s) for w in (1, 2, 3) for s in (False, True)]
    rates = {c: [] for c in configs}
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    for _ in range(options.runs):
        for config in configs:
            rates[config].append(run(*config, options))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print(f"{'workers':>7} {'fed (rec/s)':>12} {'shares (rec/s)':>15}")
    for workers in (1, 2, 3):
        fed, spread = (statistics.median(rates[(workers, s)]) for s in (False, True))
        print(f"{workers:>7} {fed:>12.0f} {spread:>15.0f}")


if __name__ == "__main__":
    main()
