"""A launcher child for the autoscaler with Megaphone keyed state: worker 0 offers RATE
records per second for SECONDS seconds, then RATE2 for SECONDS2 more (10 epochs a second,
on the wall clock); record x is word ``w{x % WORDS}``, counted by a Megaphone
`state_machine` whose fold sleeps SLEEP seconds per record (a simulated remote call made
per key: only the bins' owners can do it). Process 0's autoscaler, given the word count's
`Controller` and control input (`Autoscaler.keep_balanced`), rebalances the bins after each
join and leave and evacuates a leaving process's bins before asking for its leave.

    python -m timely_py.launch -n 2 tests/autoscale/scripts/keyed_autoscaled.py \\
        RATE SECONDS RATE2 SECONDS2 SLEEP MIN MAX [refuse]

With `refuse`, the autoscaler's actuator refuses every leave (after the evacuation): the
bins are then spread over the workers present again. The low rate then goes on past
SECONDS2 until that spreading is done (at most `LONGEST_WAIT` more seconds), so that a
loaded machine, where the decisions come later, still shows it.

Every fold prints ``worker W: counted WORD N``; worker 0 prints each decision that is not a
wait (``autoscale: ...``), the workers present when they change, the bins per worker each
time the autoscaler's moves are all out (``worker 0: bins [..] after M moves``), and at the
end ``worker 0: done, R records, A actions, P processes`` and ``worker 0: failure F``
(the last action's failure: None once another action started), and with `refuse` the first
failure when it happens (``worker 0: refused: F``).
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
from timely_py.megaphone import Control, Controller, RoutingTable  # noqa: E402

args = timely.program_args(sys.argv[1:])
rate, seconds, rate2, seconds2, sleep = (float(a) for a in args[:5])
low, high = int(args[5]), int(args[6])
EPOCH = 0.1
WORDS = 40
BINS = 32
#: Records per epoch, epoch by epoch.
schedule = [int(rate * EPOCH)] * int(seconds / EPOCH) + [int(rate2 * EPOCH)] * int(seconds2 / EPOCH)
#: With `refuse`: how long the low rate may go on past the schedule for the refused leave's
#: bins to be spread again.
LONGEST_WAIT = 60.0
REFUSE = "refuse" in args[7:]



class RefusingLeaves(autoscale.LauncherActuator):
    """Joins through the launcher; every leave fails."""

    def remove_process(self, process):
        raise RuntimeError(f"this test refuses to remove process {process}")


scaler = autoscale.Autoscaler(autoscale.Settings(
    min_processes=low, max_processes=high, target=0.7, window=1.5, stabilisation=3.0,
), actuator=RefusingLeaves() if REFUSE else None)


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(worker):
    inp, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    index = worker.index

    def count(word, n, total):
        time.sleep(sleep)
        total = (total or 0) + n
        say(f"worker {index}: counted {word} {total}")
        return total, [(word, total)]

    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=BINS, name="WordCount")
        scope.input_from(inp).map(lambda x: (f"w{x % WORDS}", 1)).state_machine(control, count).probe_with(probe)
    if worker.bootstrap():  # a joined process: the runtime steps it until the dataflow is done
        say(f"worker {index}: joined, {worker.peers} workers now")
        return
    if index != 0:
        inp.close()
        ctl.close()
        while not probe.done():
            worker.step_or_park(0.05)
        return
    controller = Controller(RoutingTable.round_robin(BINS, worker.peers))
    with scaler.keep_balanced(controller, ctl) as keyed:
        sent = feed(worker, inp, ctl, probe, controller, keyed)
    inp.close()
    ctl.close()
    while not probe.done():
        worker.step_or_park(0.05)
    say(f"worker 0: done, {sent} records, {len(scaler.actions)} actions, {scaler.processes} processes")
    say(f"worker 0: failure {scaler.failure}")


def feed(worker, inp, ctl, probe, controller, keyed):
    """Worker 0's loop: feeds the schedule, ticks the autoscaler, reports; returns the records sent."""
    start, epoch, sent, moved = time.monotonic(), 0, 0, 0
    report = ChangeReporter(worker, start, say)
    refused_at = None  # with `refuse`: the moves made when the leave was refused
    respread = False  # with `refuse`: the bins moved again after the refusal

    def more_epochs():
        if epoch < len(schedule):
            return True
        return REFUSE and not respread and time.monotonic() - start < len(schedule) * EPOCH + LONGEST_WAIT

    while more_epochs():
        due = int((time.monotonic() - start) / EPOCH) + 1
        while epoch < due and more_epochs():
            records = schedule[epoch] if epoch < len(schedule) else schedule[-1]
            inp.send_batch(list(range(sent, sent + records)))
            sent += records
            epoch += 1
            inp.advance_to(epoch)
            ctl.advance_to(epoch)
        report(scaler.tick(worker), epoch)
        if scaler.failure is not None and refused_at is None:
            refused_at = keyed.moved
            say(f"worker 0: refused: {scaler.failure}")
        if keyed.moved != moved and controller.idle:
            moved = keyed.moved
            respread = refused_at is not None and moved > refused_at
            say(f"worker 0: bins {controller.table.loads(worker.peers)} after {moved} moves, "
                f"epoch {epoch}, {time.monotonic() - start:.1f} s")
        worker.step_or_park(0.02)
    return sent


timely.execute_from_args(sys.argv[1:], main, trace_callback=scaler.observe)
