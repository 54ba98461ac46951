"""A launcher child for the autoscaling experiments (`benches/autoscale/`): worker 0 offers
records on a wall-clock schedule of 10 epochs a second (rate steps, `--schedule
RATE:SECONDS,...`), from epoch `--start-epoch` of a schedule that began at `--t0` (Unix
seconds; 0: now), so a run restarted after a stop carries on the same schedule and first
feeds what fell due meanwhile. Each record goes through an exchange to a map that sleeps
`--sleep` s (a simulated remote call: on a 2-core machine only work that waits scales with
processes) and is *delivered*: the worker appends ``record unix_time`` to its own file in
`--out`, unbuffered, so a killed run loses no delivered line.

With `--keyed BINS`, record x is keyed (`key_of`: with `--hot BIN:SHARE`, SHARE of the
records carry keys of bin BIN, the rest keys of the other bins in turn) and the wait and
the delivery happen in the fold of a Megaphone `state_machine` (a remote call made per
key, which only the bin's owner can make); the autoscaler keeps the bins balanced
(`keep_balanced`) and, with `--offer-bins`, is told every bin's offered rate over the
last 1.5 s (`offer_bins`). Worker 0 then also logs the bins per worker after each batch
of moves.

    python -m timely_py.launch -n 2 benches/autoscale/stepped_job.py --out DIR \\
        [--mode auto|fixed|restart] [--schedule 100:8,300:12,100:12] [--sleep 0.005]
        [--min 1 --max 3] [--t0 T --start-epoch E --run R]

Modes: `auto`, process 0's autoscaler (told the offered rate with `offer`, unless
`--observed`) adds and removes
processes; `fixed`, no autoscaler; `restart`, the same autoscaler in metrics-only mode, and
at its first decision to change the count worker 0 writes ``restart N`` to `restart-R` in
`--out` and stops feeding (the driver kills the run and starts a new one of N processes from
the last complete epoch). In `auto` and `restart` mode worker 0 appends the decisions that
are not waits and the changes of the workers present to ``events-R.jsonl``; every process
appends its start (and, unless killed, its end) to ``processes-R.log``.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
import time

os.environ.setdefault("TIMELY_TRACE_EVENTS", "operators,schedule,messages")
os.environ.setdefault("TIMELY_TRACE_FLUSH", "0.2")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import timely_py as timely  # noqa: E402
from stepped import EPOCH, schedule_of  # noqa: E402
from timely_py import autoscale  # noqa: E402
from timely_py.megaphone import Control, Controller, RoutingTable, bin_of  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--mode", choices=["auto", "fixed", "restart"], default="auto")
parser.add_argument("--schedule", default="100:8,300:12,100:12")
parser.add_argument("--sleep", type=float, default=0.005)
parser.add_argument("--min", type=int, default=1)
parser.add_argument("--max", type=int, default=3)
parser.add_argument("--t0", type=float, default=0.0)
parser.add_argument("--start-epoch", type=int, default=0)
parser.add_argument("--run", type=int, default=0)
parser.add_argument("--observed", action="store_true", help="do not tell the autoscaler the offered rate")
parser.add_argument("--window", type=float, default=1.5, help="the autoscaler's window, seconds")
parser.add_argument("--keyed", type=int, default=0, metavar="BINS", help="a Megaphone state_machine over BINS bins")
parser.add_argument("--hot", default="", metavar="BIN:SHARE", help="SHARE of the records go to keys of bin BIN")
parser.add_argument("--offer-bins", action="store_true", help="tell the autoscaler each bin's offered rate")
options = parser.parse_args(timely.program_args(sys.argv[1:]))
schedule = schedule_of(options.schedule)
offsets = [0]
for count in schedule:
    offsets.append(offsets[-1] + count)


def keys_by_bin(bins: int) -> list:
    """Some keys of every bin: ``k0``, ``k1``, ... grouped by `bin_of`."""
    found: list = [[] for _ in range(bins)]
    n = 0
    while min(len(keys) for keys in found) < 4:
        found[bin_of(f"k{n}", bins)].append(f"k{n}")
        n += 1
    return found


KEYS = keys_by_bin(options.keyed) if options.keyed else []
HOT_BIN, HOT_SHARE = (int(options.hot.split(":")[0]), float(options.hot.split(":")[1])) if options.hot else (-1, 0.0)
COLD_BINS = [b for b in range(options.keyed) if b != HOT_BIN]


def key_of(x: int) -> str:
    """Record x's key: one of bin HOT_BIN's for a HOT_SHARE of the records (spread evenly
    over the numbers), else one of the other bins' in turn."""
    if (x * 0.618034) % 1.0 < HOT_SHARE:
        return KEYS[HOT_BIN][x % len(KEYS[HOT_BIN])]
    b = COLD_BINS[x % len(COLD_BINS)]
    return KEYS[b][(x // len(COLD_BINS)) % len(KEYS[b])]


def append(name: str, line: str) -> None:
    with open(os.path.join(options.out, name), "a") as f:
        f.write(line + "\n")


append(f"processes-{options.run}.log", f"{os.getpid()} start {time.time():.6f}")
atexit.register(lambda: append(f"processes-{options.run}.log", f"{os.getpid()} end {time.time():.6f}"))

scaler = None
if options.mode != "fixed":
    scaler = autoscale.Autoscaler(autoscale.Settings(
        min_processes=options.min, max_processes=options.max, target=0.7, window=options.window, stabilisation=3.0,
        metrics_only=options.mode == "restart",
    ))


def main(worker):
    inp, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    sink = os.open(os.path.join(options.out, f"delivered-{options.run}-w{worker.index}.log"),
                   os.O_WRONLY | os.O_CREAT | os.O_APPEND)

    def deliver(x):
        time.sleep(options.sleep)
        os.write(sink, b"%d %.6f\n" % (x, time.time()))
        return x

    def fold(key, x, state):
        deliver(x)
        return None, ()

    with worker.dataflow() as scope:
        if options.keyed:
            control = Control(scope.input_from(ctl), bins=options.keyed, name="WordCount")
            scope.input_from(inp).map(lambda x: (key_of(x), x)).state_machine(control, fold).probe_with(probe)
        else:
            scope.input_from(inp).exchange(lambda x: x).map(deliver).probe_with(probe)
    if worker.bootstrap():  # a joined process: the runtime steps it until the dataflow is done
        return
    if worker.index != 0 or not options.keyed:
        ctl.close()
    if worker.index != 0:
        inp.close()
        while not probe.done():
            worker.step_or_park(0.05)
        return
    if options.keyed:
        controller = Controller(RoutingTable.round_robin(options.keyed, worker.peers))
        with scaler.keep_balanced(controller, ctl) as keyed:
            feed(worker, inp, ctl, controller, keyed)
        ctl.close()
    else:
        feed(worker, inp)
    inp.close()
    while not probe.done():
        worker.step_or_park(0.05)


#: Records per bin of each epoch fed, by epoch.
fed_per_bin: dict = {}


def bin_rates(epoch: int) -> list:
    """Records per second each bin was offered over the (up to) 1.5 s of epochs fed before `epoch`."""
    recent = [fed_per_bin[e] for e in range(max(0, epoch - 15), epoch) if e in fed_per_bin]
    return [sum(c[b] for c in recent) / (len(recent) * EPOCH) for b in range(options.keyed)]


def feed(worker, inp, ctl=None, controller=None, keyed=None):
    """Worker 0's loop: the schedule from `--start-epoch` on, on the wall clock from `--t0`."""
    t0 = options.t0 or time.time()
    if not options.t0:
        append("t0", f"{t0:.6f}")
    epoch = options.start_epoch
    inp.advance_to(epoch)
    members, said, moved = worker.members, None, 0
    while epoch < len(schedule):
        due = min(len(schedule), int((time.time() - t0) / EPOCH) + 1)
        while epoch < due:
            inp.send_batch(list(range(offsets[epoch], offsets[epoch + 1])))
            if options.offer_bins:
                counts = [0] * options.keyed
                for x in range(offsets[epoch], offsets[epoch + 1]):
                    counts[bin_of(key_of(x), options.keyed)] += 1
                fed_per_bin[epoch] = counts
            epoch += 1
            inp.advance_to(epoch)
            if ctl is not None:
                ctl.advance_to(epoch)
        if options.offer_bins and fed_per_bin:
            scaler.offer_bins("WordCount", bin_rates(epoch))
        if scaler is not None:
            if not options.observed:
                scaler.offer("Input", schedule[due - 1] / EPOCH if due > 0 else 0.0)
            decision = scaler.tick(worker)
            now = time.time() - t0
            if decision.action not in ("wait", "no_data") and (decision.action, decision.desired) != said:
                said = (decision.action, decision.desired)
                append(f"events-{options.run}.jsonl", json.dumps({
                    "kind": "decision", "seconds": now, "action": decision.action, "from": decision.current,
                    "to": decision.desired, "reason": decision.reason}))
            if worker.members != members:
                members = worker.members
                append(f"events-{options.run}.jsonl", json.dumps({"kind": "members", "seconds": now,
                                                                   "workers": list(members)}))
            if keyed is not None and keyed.moved != moved and controller.idle:
                moved = keyed.moved
                append(f"events-{options.run}.jsonl", json.dumps({
                    "kind": "bins", "seconds": now, "moved": moved, "owners": list(controller.table.owners),
                    "bins_per_worker": controller.table.loads(max(worker.members) + 1)}))
            if options.mode == "restart" and decision.action in ("scale_out", "scale_in"):
                append(f"restart-{options.run}", f"restart {decision.desired} {time.time():.6f}")
                while True:  # the driver kills the run; until then, nothing more is fed
                    worker.step_or_park(0.05)
        worker.step_or_park(0.02)


timely.execute_from_args(sys.argv[1:], main, trace_callback=scaler.observe if scaler is not None else None)
