#!/usr/bin/env python3
"""Cost of routing records by key from Python: two builds of timely_py side by side.

Workloads, each over `--records` records (default 1,000,000) sent in batches of 1000, an
epoch per 10 batches, on 1 worker (so that the key operator's cost is not hidden behind
thread scheduling on a busy machine):

  exchange/int     exchange(identity) over ints 0..N-1
  exchange/float   exchange(identity) over floats x + 0.5
  exchange/str     exchange(identity) over 10,000 distinct short strings
  exchange/tuple   exchange(identity) over tuples (x % 1000, "k")
  count/int        count_by_key(x % 1000) over ints
  count/str        count_by_key(identity) over the strings
  state_machine/int    Megaphone's state_machine (256 bins) counting (x % 1000, 1) pairs
  state_machine/str    the same over (string, 1) pairs
  state_machine/tuple  the same over ((x % 1000, "k"), 1) pairs

`--builds NAME=DIR,...` names directories that each hold a `timely_py` package (a built
checkout's `python/`, or a copy of one); every repetition runs each build once, in its own
interpreter (`PYTHONPATH=DIR`), builds interleaved, and the medians over `--reps` (default 5)
are printed with their ratio to the first build. On a busy machine wall-clock rates swing by
tens of percent, so `--instructions` instead counts the instructions per record spent in
routing (the build's `route` function with all it calls, under valgrind's callgrind), which
the machine's load does not change. Example (before/after a change):

    cp -r python/timely_py /tmp/before/              # with the earlier build installed
    bash scripts/build.sh                      # the new build, into python/
    .venv/bin/python benches/python/bench_routing.py --builds before=/tmp/before,after=python
    .venv/bin/python benches/python/bench_routing.py --builds before=/tmp/before,after=python --instructions
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

BATCH = 1000
EPOCH_BATCHES = 10


def inputs(n: int) -> dict:
    words = [f"key-{i}" for i in range(10_000)]
    return {
        "int": list(range(n)),
        "float": [x + 0.5 for x in range(n)],
        "str": [words[x % len(words)] for x in range(n)],
        "tuple": [(x % 1000, "k") for x in range(n)],
        "pair-int": [(x % 1000, 1) for x in range(n)],
        "pair-str": [(words[x % len(words)], 1) for x in range(n)],
        "pair-tuple": [((x % 1000, "k"), 1) for x in range(n)],
    }


def exchanged(stream, seen, _commands):
    return stream.exchange(lambda x: x).inspect_batch(lambda _t, xs: seen.append(len(xs)))


def counted(key):
    def build(stream, seen, _commands):
        return stream.count_by_key(key).inspect_batch(lambda _t, kns: seen.append(sum(n for _, n in kns)))

    return build


def counted_by_state_machine(stream, seen, commands):
    """A state machine per key that keeps a running sum and sends one output per record
    (each record's value), with no moves: the key path of Megaphone's operators."""
    from timely_py.megaphone import Control

    control = Control(commands, bins=256)
    return stream.state_machine(control, lambda k, v, s: ((s or 0) + v, (v,))).inspect_batch(
        lambda _t, vs: seen.append(len(vs))
    )


def workloads():
    """(name, input kind, build(stream, seen, commands) -> stream), where the stream built
    appends to `seen` how many input records each output batch accounts for (`commands`: an
    empty stream, for a Megaphone control)."""
    return [
        ("exchange/int", "int", exchanged),
        ("exchange/float", "float", exchanged),
        ("exchange/str", "str", exchanged),
        ("exchange/tuple", "tuple", exchanged),
        ("count/int", "int", counted(lambda x: x % 1000)),
        ("count/str", "str", counted(None)),
        ("state_machine/int", "pair-int", counted_by_state_machine),
        ("state_machine/str", "pair-str", counted_by_state_machine),
        ("state_machine/tuple", "pair-tuple", counted_by_state_machine),
    ]


def run_once(records: list, build) -> float:
    """Seconds to push `records` through `build` on 1 worker, to completion; checks that
    every record came out (or was counted)."""
    import timely_py as timely

    batches = [records[i : i + BATCH] for i in range(0, len(records), BATCH)]
    seen: list = []

    def main(worker):
        inp, commands, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            # `commands` feeds Megaphone's control, and stays empty.
            build(scope.input_from(inp), seen, scope.input_from(commands)).probe_with(probe)
        for start in range(0, len(batches), EPOCH_BATCHES):
            for batch in batches[start : start + EPOCH_BATCHES]:
                inp.send_batch(batch)
            inp.advance_to(inp.time + 1)
            commands.advance_to(inp.time)
            worker.step()
        inp.close()
        commands.close()
        while worker.step():
            pass

    began = time.perf_counter()
    timely.execute(main, workers=1)
    elapsed = time.perf_counter() - began
    if sum(seen) != len(records):
        raise AssertionError(f"{sum(seen)} records came out of {len(records)}")
    return elapsed


def child(n: int, only: str) -> None:
    """One repetition of every workload (or of `only`) in this interpreter; prints
    {name: seconds}."""
    data = inputs(n)
    chosen = [w for w in workloads() if only in ("", w[0])]
    print(json.dumps({name: run_once(data[kind], build) for name, kind, build in chosen}))


def run_child(directory: str, records: int, only: str = "", wrapper: tuple = ()) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(directory))
    if wrapper:
        env["PYTHONHASHSEED"] = "0"  # the same str hashes, dict layouts and so instructions
    command = [*wrapper, sys.executable, __file__, "--child", "--records", str(records), "--only", only, "--builds", "-"]
    return subprocess.run(command, env=env, check=True, capture_output=True, text=True)


def instructions(directory: str, workload: str, records: int) -> float:
    """Instructions per record spent in the build's `route` function (the key's worker,
    everything it calls included) for `workload` with the build in `directory`: callgrind's
    inclusive count, which neither the machine's load nor the rest of the process changes."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        run_child(directory, records, workload, ("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"))
        report = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", "--threshold=100", out], check=True, capture_output=True, text=True
        ).stdout
    match = re.search(r"^\s*([\d,]+) .*_core::(?:\w+::)+route \[", report, re.MULTILINE)
    return int(match.group(1).replace(",", "")) / records if match else 0.0


def main_instructions(builds, records: int) -> None:
    first = builds[0][0]
    print(f"{'workload':16}" + "".join(f"{name + ' instr/key':>20}" for name, _ in builds) + "   difference to " + first)
    for workload, _, _ in workloads():
        if not workload.startswith(("exchange", "count")):
            continue  # Megaphone's key path has no `route` function
        counts = [instructions(directory, workload, records) for _, directory in builds]
        diffs = " ".join(f"{c - counts[0]:+.0f}" for c in counts[1:])
        print(f"{workload:16}" + "".join(f"{c:20.0f}" for c in counts) + "   " + diffs, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--builds", required=True, help="NAME=DIR,... (DIR holds a timely_py package)")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--instructions", action="store_true", help="count instructions per record (callgrind)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--only", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.records, args.only)
    builds = [item.split("=", 1) for item in args.builds.split(",")]
    if args.instructions:
        return main_instructions(builds, 20_000)
    times: dict = {name: {} for name, _ in builds}
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    for rep in range(args.reps):
        for name, directory in builds:
            out = run_child(directory, args.records).stdout
            for workload, seconds in json.loads(out).items():
                times[name].setdefault(workload, []).append(seconds)
        print(f"rep {rep + 1}/{args.reps} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    first = builds[0][0]
    print(f"{'workload':20}" + "".join(f"{name + ' Mrec/s':>18}" for name, _ in builds) + "   ratio to " + first)
    for workload in times[first]:
        rates = [args.records / statistics.median(times[name][workload]) / 1e6 for name, _ in builds]
        ratios = " ".join(f"{rate / rates[0]:.2f}x" for rate in rates[1:])
        print(f"{workload:20}" + "".join(f"{rate:18.2f}" for rate in rates) + "   " + ratios)
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
