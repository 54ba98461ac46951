#!/usr/bin/env python3
"""Throughput of timely_py on 1 and 2 local processes, next to plain Python and Bytewax.

The workloads of `bench_python.py` (map+filter, keyed count; the same user functions), on
`--records` integers. Plain Python and Bytewax run in this process (one core: the
interpreter lock); timely_py runs the same flow on P processes of one worker each, started
by the launcher (`python -m timely_py.launch -n P -w 1`):

  * each process feeds its own share of the input: batch i goes to process i % P;
  * every `--epoch-records` records a process advances its input and steps once (as
    bench_python.py does), then closes its input and steps until the dataflow completes;
  * the keyed count exchanges records by key (`count_by_key`), map+filter moves nothing
    between processes.

Timing: every process builds its dataflow, then waits until epoch 0 is complete everywhere
(all processes are connected and ready), notes the time, feeds its share, drains, and notes
the time again. Throughput is the record count over (latest end - earliest start), all on
this machine's clock; process start-up, imports and connection set-up are not included.
Each process reports what it computed, and every run is checked against the expected result.
Each process also reports the bytes it wrote over the same span (`wchar` of /proc/self/io:
every write call, sockets included); the report gives their sum per record.

Run with the benchmark's own environment (see setup_env.sh):

    benches/python/.venv/bin/python benches/python/bench_processes.py
    benches/python/.venv/bin/python benches/python/bench_processes.py --records 200000 --reps 1

The same file is the program each timely_py process runs (`--child`).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_python as bp  # noqa: E402  (the shared workloads, checks and Bytewax flows)

WORKLOADS = ("map+filter", "count")


# ---------------------------------------------------------------------------------------
# One timely_py process (`--child`).


def bytes_written():
    """Bytes this process has passed to write calls so far, sockets included (Linux; None
    elsewhere)."""
    try:
        with open("/proc/self/io") as file:
            return next(int(line.split()[1]) for line in file if line.startswith("wchar:"))
    except OSError:
        return None


def child_main(args: argparse.Namespace, runtime_args: List[str]) -> None:
    import timely_py as timely

    batches = bp.make_batches(args.records, args.batch)
    epoch_every = max(1, args.epoch_records // args.batch)

    def main(worker):
        mine = batches[worker.index :: worker.peers]
        gc.collect()
        gc.freeze()
        out: list = []
        collect = bp._collect(out)
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            stream = scope.input_from(inp)
            if args.workload == "map+filter":
                stream = stream.map(bp.double).filter(bp.keep)
            else:
                stream = stream.count_by_key(bp.key)
            stream.inspect_batch(collect).probe_with(probe)
        inp.advance_to(1)
        while probe.less_than(1):  # every process is connected and has built the dataflow
            worker.step()
        start, written = time.time(), bytes_written()
        send_batch, advance, step = inp.send_batch, inp.advance_to, worker.step
        if args.batch == 1:  # records one by one, as bench_python.py feeds batches of one
            send_batch = lambda batch: inp.send(batch[0])  # noqa: E731
        epoch = 1
        for first in range(0, len(mine), epoch_every):
            for batch in mine[first : first + epoch_every]:
                send_batch(batch)
            epoch += 1
            advance(epoch)
            step()
        inp.close()
        while step():
            pass
        end = time.time()
        written = None if written is None else bytes_written() - written
        return {"start": start, "end": end, "written": written, "summary": summarize(args.workload, out)}

    results = timely.execute_from_args(runtime_args, main)
    with open(f"{args.result}.{os.getpid()}", "w") as file:
        json.dump(results, file)


def summarize(workload: str, out: list):
    """What a process computed, small enough to hand back: the kept records' count and sum,
    or the total per key."""
    if workload == "map+filter":
        return [len(out), sum(out)]
    totals: Counter = Counter()
    for key, count in out:
        totals[key] += count
    return sorted(totals.items())


# ---------------------------------------------------------------------------------------
# The parent: plain Python, Bytewax, and timely_py on 1 and 2 processes.


def expected_summary(workload: str, records: int):
    if workload == "map+filter":
        kept = [2 * x for x in range(records) if (2 * x) % 3 == 0]
        return [len(kept), sum(kept)]
    return sorted(Counter(bp.key(x) for x in range(records)).items())


def combine(workload: str, summaries: list):
    if workload == "map+filter":
        return [sum(s[0] for s in summaries), sum(s[1] for s in summaries)]
    totals: Counter = Counter()
    for summary in summaries:
        for key, count in summary:
            totals[key] += count
    return sorted(totals.items())


def run_timely(args: argparse.Namespace, workload: str, processes: int):
    """Seconds from the earliest start to the latest end of a run on `processes` processes,
    and the bytes all processes wrote meanwhile (None where /proc/self/io is missing)."""
    with tempfile.TemporaryDirectory() as scratch:
        result = os.path.join(scratch, "result")
        command = [
            sys.executable, "-m", "timely_py.launch", "-n", str(processes), "-w", "1",
            os.path.abspath(__file__), "--child", "--workload", workload,
            "--records", str(args.records), "--batch", str(args.batch),
            "--epoch-records", str(args.epoch_records), "--result", result,
        ]  # fmt: skip
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        reports = []
        for name in os.listdir(scratch):
            with open(os.path.join(scratch, name)) as file:
                reports.extend(json.load(file))
    if len(reports) != processes:
        raise RuntimeError(f"{len(reports)} reports from {processes} processes")
    got = combine(workload, [r["summary"] for r in reports])
    if json.dumps(got) != json.dumps(expected_summary(workload, args.records)):
        raise RuntimeError(f"{workload} on {processes} processes computed a wrong result")
    written = [r.get("written") for r in reports]
    total = None if None in written else sum(written)
    return max(r["end"] for r in reports) - min(r["start"] for r in reports), total


def one_process_systems(args: argparse.Namespace, workload: str) -> Dict[str, object]:
    batches = bp.make_batches(args.records, args.batch)
    epoch_every = max(1, args.epoch_records // args.batch)
    if workload == "map+filter":
        systems = {"plain": lambda: bp.plain_map_filter(batches)}
        if bp.BYTEWAX_VERSION and not args.no_bytewax:
            systems["bytewax"] = lambda: bp.bytewax_map_filter(batches, args.batch, "batches")
    else:
        systems = {"plain": lambda: bp.plain_count(batches, epoch_every)}
        if bp.BYTEWAX_VERSION and not args.no_bytewax:
            systems["bytewax"] = lambda: bp.bytewax_count(batches, args.batch, "batches")
    return systems


def measure(args: argparse.Namespace) -> List[dict]:
    rows = []
    for workload in args.workloads:
        local = one_process_systems(args, workload)
        check = bp.check_map_filter if workload == "map+filter" else bp.check_count
        times: Dict[str, List[float]] = {name: [] for name in local}
        times.update({f"timely_py {p}p": [] for p in args.processes})
        written: Dict[str, list] = {f"timely_py {p}p": [] for p in args.processes}
        for rep in range(args.reps):
            for name, run in local.items():
                wall, _cpu, out = bp.timed(run)
                check(args.records, {name: out})
                times[name].append(wall)
            for p in args.processes:
                seconds, total = run_timely(args, workload, p)
                times[f"timely_py {p}p"].append(seconds)
                written[f"timely_py {p}p"].append(total)
            print(f"  {workload} rep {rep + 1}/{args.reps}: "
                  + ", ".join(f"{n} {t[-1]:.3f}s" for n, t in times.items()), flush=True)  # fmt: skip
        medians = {name: statistics.median(t) for name, t in times.items()}
        rows.append({"workload": workload, "median_seconds": medians, "seconds": times,
                     "bytes_written": written})  # fmt: skip
    return rows


def report(args: argparse.Namespace, rows: List[dict]) -> None:
    print(f"\n{args.records:,} records, batches of {args.batch}, epochs of {args.epoch_records} "
          f"records, medians of {args.reps}; load before: {args.load_before}, after: {os.getloadavg()}")  # fmt: skip
    first = f"timely_py {args.processes[0]}p"
    for row in rows:
        medians = row["median_seconds"]
        print(f"\n{row['workload']}")
        print(f"  {'system':<16}{'records/s':>12}{'vs plain':>10}{'vs bytewax':>12}{'vs ' + first:>18}")
        for name, seconds in medians.items():
            rate = args.records / seconds
            versus = [
                medians["plain"] / seconds,
                medians["bytewax"] / seconds if "bytewax" in medians else None,
                medians[first] / seconds,
            ]
            cells = "".join(f"{'-' if v is None else f'{v:.2f}x':>{w}}" for v, w in zip(versus, (10, 12, 18)))
            print(f"  {name:<16}{bp.fmt_rate(rate):>12}{cells}")
        for name, totals in row["bytes_written"].items():
            if not name.endswith(" 1p") and None not in totals:
                print(f"  {name} wrote {statistics.median(totals) / args.records:.2f} bytes per record "
                      f"(median of {len(totals)}, all processes)")  # fmt: skip


def parse_args(argv: List[str]):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1000, help="records per send_batch (1: send each record)")
    parser.add_argument("--epoch-records", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--workloads", type=lambda s: s.split(","), default=list(WORKLOADS))
    parser.add_argument("--processes", type=lambda s: [int(p) for p in s.split(",")], default=[1, 2])
    parser.add_argument("--no-bytewax", action="store_true")
    parser.add_argument("--json", help="write all times to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workload", choices=WORKLOADS, help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    return parser.parse_known_args(argv)


def main(argv: List[str]) -> None:
    args, rest = parse_args(argv)
    if args.child:
        child_main(args, rest)
        return
    if rest:
        raise SystemExit(f"unknown arguments: {rest}")
    for workload in args.workloads:
        if workload not in WORKLOADS:
            raise SystemExit(f"unknown workload {workload!r}; choose from {', '.join(WORKLOADS)}")
    args.load_before = os.getloadavg()
    rows = measure(args)
    report(args, rows)
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"args": {k: v for k, v in vars(args).items()}, "rows": rows}, file, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
