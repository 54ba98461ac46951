#!/usr/bin/env python3
"""Throughput of timely_py from Python, next to a plain Python loop and Bytewax 0.21.1.

Workloads, on `--records` integers 0..N-1 (default 1,000,000):

  map+filter  y = x * 2, keep y when y % 3 == 0; outputs are collected into a list.
  keyed count key = x % 1000; per-key counts. timely_py and plain Python count per epoch
              (one batch) and emit (key, count) when the epoch ends; Bytewax keeps a
              running count per key (stateful_map) and emits (key, count) for every record.
              Every system must arrive at the same total count per key.

"Batch" (`--batches`, default 1 and 1000) means, for each system:

  plain Python  the input is a list of lists of B records; the loop walks it batch by batch
                and calls the same user functions per record (for the keyed count it makes
                one dict per epoch).
  timely_py     B records per `InputHandle.send_batch` call (`send` when B is 1), 1 worker.
  Bytewax       B records per `next_batch()` of the source (a DynamicSource over the same
                list of lists; `--bytewax-source testing` uses TestingSource(batch_size=B)),
                run with `bytewax.testing.run_main` (1 worker, default epoch interval).

"Epoch" (`--epoch-records`, default 1000): timely_py advances its input's epoch and steps the
worker once per epoch of that many records (rounded to whole batches, at least one batch),
the way a program feeds a stream that arrives record by record; the plain keyed count makes
one dict per epoch. Bytewax's epochs are its default 10-second interval, longer than any of
ours. `--epoch-records 1` gives every batch its own epoch and step (the strictest setting).

Each measurement is repeated `--reps` times (default 5), systems interleaved within a
repetition, and the median is reported. Inputs are built before timing and frozen out of
the garbage collector's reach (`gc.freeze`) for every system alike. Timed regions include
building and starting each system's dataflow (negligible next to 1M records).

Also: hello rounds per second (examples/hello.py without printing, 1 worker), and with
`--breakdown` a decomposition of timely_py's cost per batch and per record.

Run with the benchmark's own environment (see setup_env.sh):

    benches/python/.venv/bin/python benches/python/bench_python.py
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from typing import Callable, Dict, List, Optional

import timely_py as timely

try:
    import importlib.metadata as _metadata

    import bytewax.operators as bw_op
    from bytewax.dataflow import Dataflow as BwDataflow
    from bytewax.inputs import DynamicSource, StatelessSourcePartition
    from bytewax.testing import TestingSink, TestingSource, run_main as bw_run_main

    BYTEWAX_VERSION: Optional[str] = _metadata.version("bytewax")
except ImportError as _error:  # Bytewax missing: the benchmark still runs without it.
    BYTEWAX_VERSION = None
    BYTEWAX_IMPORT_ERROR = str(_error)


# ---------------------------------------------------------------------------------------
# The user functions: the same objects in every system.


def double(x):
    return x * 2


def keep(y):
    return y % 3 == 0


def key(x):
    return x % 1000


def ident(x):
    return x


def make_batches(n: int, size: int) -> List[List[int]]:
    return [list(range(start, min(start + size, n))) for start in range(0, n, size)]


# ---------------------------------------------------------------------------------------
# Plain Python.


def plain_map_filter(batches):
    out = []
    for batch in batches:
        for x in batch:
            y = double(x)
            if keep(y):
                out.append(y)
    return out


def plain_count(batches, epoch_every: int = 1):
    out = []
    for start in range(0, len(batches), epoch_every):
        counts = {}
        for batch in batches[start : start + epoch_every]:
            for x in batch:
                k = key(x)
                counts[k] = counts.get(k, 0) + 1
        out.extend(counts.items())
    return out


# ---------------------------------------------------------------------------------------
# timely_py.


def timely_run(batches, build, epoch_every: int = 1):
    """Feeds `batches` through the dataflow made by `build(stream, out)`, 1 worker.

    One `send_batch` per batch (`send` for batches of one record); every `epoch_every`
    batches the epoch is advanced and the worker stepped once; then the input is closed and
    the worker drained.
    """
    out: list = []
    single = bool(batches) and len(batches[0]) == 1

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            build(scope.input_from(inp), out).probe_with(probe)
        send, send_batch, advance, step = inp.send, inp.send_batch, inp.advance_to, worker.step
        epoch = 0
        for start in range(0, len(batches), epoch_every):
            if single:
                for batch in batches[start : start + epoch_every]:
                    send(batch[0])
            else:
                for batch in batches[start : start + epoch_every]:
                    send_batch(batch)
            epoch += 1
            advance(epoch)
            step()
        inp.close()
        while step():
            pass

    timely.execute(main, workers=1)
    return out


def _collect(out):
    return lambda _time, xs: out.extend(xs)


def timely_map_filter(batches, epoch_every: int = 1):
    return timely_run(batches, lambda s, out: s.map(double).filter(keep).inspect_batch(_collect(out)), epoch_every)


def timely_count(batches, epoch_every: int = 1):
    return timely_run(batches, lambda s, out: s.count_by_key(key).inspect_batch(_collect(out)), epoch_every)


def timely_hello(rounds: int) -> None:
    """examples/hello.py's loop, without printing (`inspect` calls a no-op)."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp).exchange(lambda x: x).inspect(lambda x: None).probe_with(probe)
        for rnd in range(rounds):
            if worker.index == 0:
                inp.send(rnd)
            inp.advance_to(rnd + 1)
            while probe.less_than(inp.time):
                worker.step()

    timely.execute(main, workers=1)


# ---------------------------------------------------------------------------------------
# Bytewax.

if BYTEWAX_VERSION is not None:

    class _ListOfBatchesPartition(StatelessSourcePartition):
        def __init__(self, batches):
            self._batches = iter(batches)

        def next_batch(self):
            return next(self._batches)  # StopIteration ends the input

    class ListOfBatchesSource(DynamicSource):
        """Emits the prepared batches as they are, one per `next_batch` (1 worker)."""

        def __init__(self, batches):
            self._batches = batches

        def build(self, step_id, worker_index, worker_count):
            return _ListOfBatchesPartition(self._batches)


def _bytewax_source(batches, size: int, kind: str):
    if kind == "testing":
        return TestingSource([x for batch in batches for x in batch], batch_size=size)
    return ListOfBatchesSource(batches)


def _running_count(state, _x):
    n = 1 if state is None else state + 1
    return n, n


def bytewax_map_filter(batches, size: int, kind: str):
    out: list = []
    flow = BwDataflow("map_filter")
    s = bw_op.input("inp", flow, _bytewax_source(batches, size, kind))
    s = bw_op.map("map", s, double)
    s = bw_op.filter("filter", s, keep)
    bw_op.output("out", s, TestingSink(out))
    bw_run_main(flow)
    return out


def bytewax_count(batches, size: int, kind: str):
    out: list = []
    flow = BwDataflow("keyed_count")
    s = bw_op.input("inp", flow, _bytewax_source(batches, size, kind))
    keyed = bw_op.key_on("key", s, lambda x: str(key(x)))  # Bytewax keys must be str
    counted = bw_op.stateful_map("count", keyed, _running_count)
    bw_op.output("out", counted, TestingSink(out))
    bw_run_main(flow)
    return out


# ---------------------------------------------------------------------------------------
# Checks: every system must compute the same thing.


def check_map_filter(n: int, results: Dict[str, list]) -> None:
    expected = [2 * x for x in range(n) if (2 * x) % 3 == 0]
    for system, out in results.items():
        assert sorted(out) == expected, f"map+filter: {system} differs ({len(out)} records, expected {len(expected)})"


def per_epoch_totals(pairs) -> Dict[int, int]:
    totals: Dict[int, int] = defaultdict(int)
    for k, c in pairs:
        totals[k] += c
    return dict(totals)


def running_totals(pairs) -> Dict[int, int]:
    totals: Dict[int, int] = {}
    for k, c in pairs:
        k = int(k)
        totals[k] = max(totals.get(k, 0), c)
    return totals


def check_count(n: int, results: Dict[str, list]) -> None:
    expected: Dict[int, int] = defaultdict(int)
    for x in range(n):
        expected[key(x)] += 1
    for system, out in results.items():
        totals = running_totals(out) if system.startswith("bytewax") else per_epoch_totals(out)
        assert totals == expected, f"keyed count: {system} differs"


# ---------------------------------------------------------------------------------------
# Timing.


def timed(f: Callable[[], object]):
    """(wall seconds, CPU seconds of this process (all threads), result of f())."""
    gc.collect()
    cpu = time.process_time()
    start = time.perf_counter()
    result = f()
    wall = time.perf_counter() - start
    return wall, time.process_time() - cpu, result


def fmt_rate(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return f"{x / 1e6:.3f}M" if x >= 1e5 else f"{x / 1e3:.1f}k"


def fmt_ratio(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None:
        return "-"
    return f"{a / b:.2f}x"


def run_throughput(args) -> List[dict]:
    rows = []
    use_bytewax = BYTEWAX_VERSION is not None and not args.no_bytewax
    for workload in args.workloads:
        for size in args.batches:
            batches = make_batches(args.records, size)
            epoch_every = max(1, args.epoch_records // size)
            gc.collect()
            gc.freeze()  # the input is long-lived: keep it out of every collection, for all systems
            if workload == "map+filter":
                systems = {
                    "plain": lambda: plain_map_filter(batches),
                    "timely_py": lambda: timely_map_filter(batches, epoch_every),
                }
                if use_bytewax:
                    systems["bytewax"] = lambda: bytewax_map_filter(batches, size, args.bytewax_source)
                check = check_map_filter
            else:
                systems = {
                    "plain": lambda: plain_count(batches, epoch_every),
                    "timely_py": lambda: timely_count(batches, epoch_every),
                }
                if use_bytewax:
                    systems["bytewax"] = lambda: bytewax_count(batches, size, args.bytewax_source)
                check = check_count
            times: Dict[str, List[float]] = {name: [] for name in systems}
            cpu_times: Dict[str, List[float]] = {name: [] for name in systems}
            for rep in range(args.reps):
                results = {}
                for name, f in systems.items():
                    seconds, cpu_seconds, out = timed(f)
                    times[name].append(seconds)
                    cpu_times[name].append(cpu_seconds)
                    if rep == 0:
                        results[name] = out
                    del out
                if rep == 0:
                    check(args.records, results)
                del results
            gc.unfreeze()
            del batches
            row = {"workload": workload, "batch": size, "epoch_batches": epoch_every, "records": args.records, "reps": args.reps}
            for name in ("plain", "timely_py", "bytewax"):
                if name in times:
                    median = statistics.median(times[name])
                    cpu_median = statistics.median(cpu_times[name])
                    row[name] = {
                        "median_s": median,
                        "rate": args.records / median,
                        "cpu_median_s": cpu_median,
                        "cpu_rate": args.records / cpu_median,
                        "best_rate": args.records / min(times[name]),
                        "times_s": times[name],
                        "cpu_times_s": cpu_times[name],
                    }
                else:
                    row[name] = None
            rows.append(row)
            print_row(row, file=sys.stderr)
    return rows


def rate(row, name, measure="rate"):
    return row[name][measure] if row.get(name) else None


def print_row(row, file=sys.stdout):
    print(
        f"  {row['workload']:<11} batch {row['batch']:>5}: plain {fmt_rate(rate(row, 'plain'))}/s, "
        f"timely_py {fmt_rate(rate(row, 'timely_py'))}/s, bytewax {fmt_rate(rate(row, 'bytewax'))}/s",
        file=file,
        flush=True,
    )


def print_table(rows, measure="rate") -> None:
    header = (
        f"| workload    | batch | plain Python rec/s | timely_py rec/s | Bytewax rec/s | "
        f"timely_py / plain | timely_py / Bytewax | Bytewax / plain |"
    )
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for row in rows:
        p, t, b = (rate(row, name, measure) for name in ("plain", "timely_py", "bytewax"))
        print(
            f"| {row['workload']:<11} | {row['batch']:>5} | {fmt_rate(p):>18} | {fmt_rate(t):>15} | "
            f"{fmt_rate(b):>13} | {fmt_ratio(t, p):>17} | {fmt_ratio(t, b):>19} | {fmt_ratio(b, p):>15} |"
        )


# ---------------------------------------------------------------------------------------
# Where timely_py's time goes.


def _loop_only(batches):
    for batch in batches:
        pass


def _plain_ident(batches):
    out = []
    for batch in batches:
        for x in batch:
            out.append(ident(x))
    return out


def _feed(batches, build, advance_every: int, step_every: int, sync: bool = False):
    """timely_py with `build(stream)`; advance_to every `advance_every` batches (0: never),
    step every `step_every` batches (0: only when draining at the end); with `sync`, wait
    for the probe after every epoch like examples/hello.py."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            build(scope.input_from(inp)).probe_with(probe)
        send, advance, step = inp.send_batch, inp.advance_to, worker.step
        epoch = 0
        i = 0
        for batch in batches:
            send(batch)
            i += 1
            if advance_every and i % advance_every == 0:
                epoch += 1
                advance(epoch)
                if sync:
                    while probe.less_than(epoch):
                        step()
            if step_every and i % step_every == 0:
                step()
        inp.close()
        while step():
            pass

    timely.execute(main, workers=1)


def _ignore(_time, _records):
    pass


def _idle_steps(count: int):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp).map(ident).probe_with(probe)
        step = worker.step
        for _ in range(count):
            step()
        inp.close()
        while step():
            pass

    timely.execute(main, workers=1)


def run_breakdown(args) -> List[dict]:
    n = args.records
    items = []
    for size in args.batches:
        batches = make_batches(n, size)
        nb = len(batches)
        gc.collect()
        gc.freeze()

        def mf(s):  # the benchmark's map+filter, with a no-op per-batch collector
            return s.map(double).filter(keep).inspect_batch(_ignore)

        cases = [
            ("python: loop over batches only", lambda: _loop_only(batches)),
            ("python: ident(x) per record, append", lambda: _plain_ident(batches)),
            ("python: map+filter loop (plain)", lambda: plain_map_filter(batches)),
            ("timely: send_batch only, drain at end", lambda: _feed(batches, lambda s: s, 0, 0)),
            ("timely: send_batch+advance_to, drain at end", lambda: _feed(batches, lambda s: s, 1, 0)),
            ("timely: send+advance+step, input->probe", lambda: _feed(batches, lambda s: s, 1, 1)),
            ("timely: send+advance+step, ->map(ident)->", lambda: _feed(batches, lambda s: s.map(ident), 1, 1)),
            (
                "timely: send+advance+step, ->map->map->",
                lambda: _feed(batches, lambda s: s.map(ident).map(ident), 1, 1),
            ),
            ("timely: map+filter+inspect_batch (benchmark)", lambda: _feed(batches, mf, 1, 1)),
            ("timely: same, wait for the probe every epoch", lambda: _feed(batches, mf, 1, 0, sync=True)),
            (
                "timely: count_by_key (the benchmark)",
                lambda: _feed(batches, lambda s: s.count_by_key(key), 1, 1),
            ),
            ("timely: exchange(key) only", lambda: _feed(batches, lambda s: s.exchange(key), 1, 1)),
        ]
        if size == 1:
            cases += [
                ("timely: same, epoch every 1000 batches", lambda: _feed(batches, mf, 1000, 1)),
                ("timely: same, step every 1000 batches", lambda: _feed(batches, mf, 1, 1000)),
                ("timely: same, epoch+step every 1000 batches", lambda: _feed(batches, mf, 1000, 1000)),
                ("timely: worker.step() on an idle dataflow", lambda: _idle_steps(nb)),
            ]
        times: Dict[str, List[float]] = {name: [] for name, _ in cases}
        cpu_times: Dict[str, List[float]] = {name: [] for name, _ in cases}
        for _ in range(args.reps):
            for name, f in cases:
                wall, cpu, _ = timed(f)
                times[name].append(wall)
                cpu_times[name].append(cpu)
        gc.unfreeze()
        del batches
        print(f"\nbreakdown, batch {size} ({nb} batches of {n} records), median of {args.reps} (wall and CPU time):")
        print(f"| {'case':<46} | {'wall s':>7} | {'CPU s':>7} | {'CPU ns/record':>13} | {'CPU ns/batch':>12} |")
        print(f"|{'-' * 48}|{'-' * 9}|{'-' * 9}|{'-' * 15}|{'-' * 14}|")
        for name, _ in cases:
            median = statistics.median(times[name])
            cpu = statistics.median(cpu_times[name])
            items.append({"batch": size, "case": name, "median_s": median, "cpu_median_s": cpu})
            print(
                f"| {name:<46} | {median:>7.3f} | {cpu:>7.3f} | {cpu / n * 1e9:>13.0f} | {cpu / nb * 1e9:>12.0f} |",
                flush=True,
            )
    return items


# ---------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batches", type=lambda s: [int(x) for x in s.split(",")], default=[1, 1000])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--workloads", type=lambda s: s.split(","), default=["map+filter", "count"])
    parser.add_argument(
        "--epoch-records",
        type=int,
        default=1000,
        help="records per epoch (whole batches, at least one) for timely_py and the plain count (default 1000)",
    )
    parser.add_argument("--hello-rounds", type=int, default=20_000)
    parser.add_argument("--no-bytewax", action="store_true")
    parser.add_argument(
        "--bytewax-source",
        choices=["batches", "testing"],
        default="batches",
        help="Bytewax input: the prepared list of batches (default) or TestingSource(batch_size=B)",
    )
    parser.add_argument("--breakdown", action="store_true", help="also decompose timely_py's costs")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--json", help="write all medians to this file")
    args = parser.parse_args(argv)
    for w in args.workloads:
        if w not in ("map+filter", "count"):
            parser.error(f"unknown workload {w!r} (map+filter, count)")

    print(f"python {platform.python_version()} ({sys.executable}) on {platform.machine()}, {platform.platform()}")
    print(f"timely_py from {timely.__file__}")
    if BYTEWAX_VERSION is None:
        print(f"bytewax: NOT AVAILABLE ({BYTEWAX_IMPORT_ERROR}); Bytewax columns are skipped. Run setup_env.sh.")
    else:
        print(f"bytewax {BYTEWAX_VERSION}" + (" (skipped: --no-bytewax)" if args.no_bytewax else ""))
        if BYTEWAX_VERSION != "0.21.1":
            print("WARNING: the comparison is specified against bytewax 0.21.1")
    print(
        f"records {args.records}, batches {args.batches}, reps {args.reps} (median), "
        f"epoch every {args.epoch_records} records, bytewax source: {args.bytewax_source}",
        flush=True,
    )

    print(f"load average at start: {os.getloadavg()[0]:.2f} (this machine has {os.cpu_count()} cores)", flush=True)
    report: dict = {"records": args.records, "reps": args.reps, "bytewax": BYTEWAX_VERSION}
    if not args.skip_throughput:
        rows = run_throughput(args)
        report["throughput"] = rows
        print(f"\nrecords per second of wall-clock time (median of {args.reps}):")
        print_table(rows)
        print(f"\nrecords per second of CPU time, all threads of the process (median of {args.reps}; steadier under load):")
        print_table(rows, "cpu_rate")
        print(f"\nrecords per second of wall-clock time, best of {args.reps}:")
        print_table(rows, "best_rate")

    if args.hello_rounds:
        runs = [timed(lambda: timely_hello(args.hello_rounds))[:2] for _ in range(args.reps)]
        median = statistics.median(wall for wall, _ in runs)
        cpu_median = statistics.median(cpu for _, cpu in runs)
        rounds = args.hello_rounds
        report["hello"] = {
            "rounds": rounds,
            "median_s": median,
            "rounds_per_s": rounds / median,
            "cpu_median_s": cpu_median,
            "times_s": [wall for wall, _ in runs],
        }
        print(
            f"\nhello (1 worker, {rounds} rounds, no printing): {rounds / median:,.0f} rounds/s "
            f"({median / rounds * 1e6:.1f} us/round wall, {cpu_median / rounds * 1e6:.1f} us/round CPU; "
            f"median of {args.reps}; best {rounds / min(w for w, _ in runs):,.0f} rounds/s)"
        )

    if args.breakdown:
        report["breakdown"] = run_breakdown(args)

    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
