"""A launcher child for the autoscaler's scripted runs: worker 0 offers RATE records per
second for SECONDS seconds (then, with `step=RATE2:SECONDS2`, RATE2 records per second for
SECONDS2 more seconds), on a wall-clock schedule of 10 epochs a second, so the offered rate
does not depend on how fast the cluster is; a map sleeps SLEEP seconds per record (a
simulated remote call), and process 0's autoscaler decides from the trace events it receives
in-process whether to add processes or remove them, within [MIN, MAX].

    python -m timely_py.launch -n 2 tests/autoscale/scripts/sleepy_autoscaled.py \
        RATE SECONDS SLEEP MIN MAX [metrics] [offer] [step=RATE2:SECONDS2 ...]

With `offer`, worker 0 tells the autoscaler the rate it offers at each epoch
(`Autoscaler.offer`) instead of letting it observe the input's rate, which a worker 0 busy
with its own share of an overloaded map holds down. Every worker prints `worker W: seen X -> Y` per record; worker 0 prints each decision that
is not a wait and differs from the one before (`autoscale: ...`, with its explanation) and
when the workers present change.
"""

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TIMELY_TRACE_EVENTS", "operators,schedule,messages")
os.environ.setdefault("TIMELY_TRACE_FLUSH", "0.2")

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for `support`

import timely_py as timely  # noqa: E402
from support.autoscale import ChangeReporter  # noqa: E402
from timely_py import autoscale  # noqa: E402

args = timely.program_args(sys.argv[1:])
rate, seconds, sleep = float(args[0]), float(args[1]), float(args[2])
low, high = int(args[3]), int(args[4])
metrics_only = "metrics" in args[5:]
offering = "offer" in args[5:]
EPOCH = 0.1
#: Records per epoch, epoch by epoch.
schedule = [int(rate * EPOCH)] * int(seconds / EPOCH)
for arg in args[5:]:
    if arg.startswith("step="):
        rate2, seconds2 = arg[len("step="):].split(":")
        schedule += [int(float(rate2) * EPOCH)] * int(float(seconds2) / EPOCH)
epochs = len(schedule)

scaler = autoscale.Autoscaler(autoscale.Settings(
    min_processes=low, max_processes=high, target=0.7, window=1.5, stabilisation=3.0, metrics_only=metrics_only,
))


def work(worker_index, x):
    time.sleep(sleep)
    y = 3 * x + 1
    print(f"worker {worker_index}: seen {x} -> {y}")
    return y


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    index = worker.index
    with worker.dataflow() as scope:
        scope.input_from(inp).exchange(lambda x: x).map(lambda x: work(index, x)).probe_with(probe)
    if worker.bootstrap():  # a joined process: the runtime steps it until the dataflow is done
        print(f"worker {index}: joined, {worker.peers} workers now")
        return
    if index != 0:
        inp.close()
        while not probe.done():
            worker.step_or_park(0.05)
        return
    start, epoch, sent = time.monotonic(), 0, 0
    report = ChangeReporter(worker, start)
    while epoch < epochs:
        due = min(epochs, int((time.monotonic() - start) / EPOCH) + 1)
        if offering:
            scaler.offer("Input", schedule[min(due, epochs) - 1] / EPOCH)
        while epoch < due:
            inp.send_batch(list(range(sent, sent + schedule[epoch])))
            sent += schedule[epoch]
            epoch += 1
            inp.advance_to(epoch)
        report(scaler.tick(worker), epoch)
        worker.step_or_park(0.02)
    inp.close()
    while not probe.done():
        worker.step_or_park(0.05)
    print(f"worker 0: done, {sent} records, {len(scaler.actions)} actions, "
          f"{scaler.processes} processes")


timely.execute_from_args(sys.argv[1:], main, trace_callback=scaler.observe)
