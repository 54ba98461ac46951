"""A cluster that shrinks while it counts: one process leaves, the counts stay exact.

Run it under the launcher on two processes or more; worker 0 asks the launcher to remove
process 1 in epoch LEAVE_AT (default 4):

    python -m timely_py.launch -n 3 examples/scale_in.py [EPOCHS [LEAVE_AT]]

Every worker feeds a few words per epoch into `count_by_key`, which counts each (epoch, word)
once, on one worker, whatever the membership does (`docs/rescaling.md`). The leaving process
sees `worker.leaving`, stops feeding and closes its input; the others stop routing words to
it, and it exits once nothing more can reach it. The others run EPOCHS epochs (default 12).
Worker 0 gathers the counts and checks them against the words every worker fed, the leaver's
included.
"""

import sys
import time
from collections import Counter

import timely_py as timely
from timely_py import launch

TEXT = "the quick brown fox jumps over the lazy dog while the dog sleeps by the river".split()

args = timely.program_args(sys.argv[1:])
epochs = int(args[0]) if args else 12
leave_at = int(args[1]) if len(args) > 1 else 4


def say(line):
    sys.stdout.write(line + "\n")  # one write per line: lines of two workers do not mix
    sys.stdout.flush()


def words_of(epoch, worker):
    start = (epoch * 5 + worker * 3) % len(TEXT)
    return (TEXT + TEXT)[start : start + 4]


def main(worker):
    text, probe = timely.InputHandle(), timely.ProbeHandle()
    fed, counted = Counter(), Counter()  # on worker 0: words fed and counts made, per (epoch, word)
    counters = Counter()  # on this worker: the counts it made

    to_0 = lambda _: 0  # noqa: E731  (gathers on worker 0, to check)
    with worker.dataflow() as scope:
        words = scope.input_from(text)
        words.exchange(to_0).inspect_time(lambda t, word: fed.update([(t, word)])).probe_with(probe)
        (words.count_by_key()
            .inspect(lambda _: counters.update([worker.index]))
            .exchange(to_0)
            .inspect_time(lambda t, wn: counted.update({(t, wn[0]): wn[1]}))
            .probe_with(probe))

    epoch = 0
    while epoch < epochs and not worker.leaving:
        text.send_batch(words_of(epoch, worker.index))
        if worker.index == 0 and epoch == leave_at:
            leaver = launch.remove_process(1)
            say(f"worker 0: epoch {epoch}, asked process {leaver} to leave")
        text.advance_to(epoch + 1)
        while probe.less_than(epoch + 1) and not worker.leaving:
            worker.step_or_park(0.01)
        time.sleep(0.02)
        epoch += 1
    text.close()
    if worker.leaving:
        say(f"worker {worker.index}: leaving after epoch {epoch - 1}, "
            f"having counted {counters[worker.index]} (epoch, word) pairs")
        while worker.step_or_park(0.01):
            pass
        return
    while not probe.done():
        worker.step_or_park(0.01)
    say(f"worker {worker.index}: {counters[worker.index]} (epoch, word) pairs counted, members {worker.members}")
    if worker.index == 0:
        if counted != fed:
            raise SystemExit(f"worker 0: counts differ from the words fed: {sorted((counted - fed).items())[:5]}")
        say(f"worker 0: exact: {len(counted)} (epoch, word) counts equal the {sum(fed.values())} words fed")


if __name__ == "__main__":
    timely.execute_from_args(sys.argv[1:], main)
