"""Process 1 leaves a cluster of 2 while a Megaphone word count runs: its bins move to process
0, which counts on. Then process 0, the last one, asks to leave and is refused. Every worker
prints one line of JSON: its index, what it fed, its word counts `[epoch, word, count]`, what
`leave()` said on process 0, and whether it left.
Usage: megaphone_leaving.py RUNTIME_FLAGS (under the launcher, 2 processes of 1 worker)"""

import json
import sys

import timely_py as timely
from timely_py.megaphone import Control

EPOCHS = 8


def main(worker):
    words, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    counts, fed = [], []
    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=16, name="Words")
        (scope.input_from(words).map(lambda w: (w, 1))
         .state_machine(control, lambda word, n, count: ((count or 0) + n, [(word, (count or 0) + n)]))
         .inspect_time(lambda t, wc: counts.append([t, *wc])).probe_with(probe))
    said = None
    epoch = 0
    while not worker.leaving and (epoch < EPOCHS or worker.members != [0]):
        if epoch == 3 and worker.index == 1:
            worker.leave()
            break
        batch = ["a", "b", "a", f"w{worker.index}", f"e{epoch}"]
        words.send_batch(batch)
        fed += [[epoch, word] for word in batch]
        epoch += 1
        words.advance_to(epoch)
        ctl.advance_to(epoch)
        worker.step_while(lambda: probe.less_than(epoch))
    left = worker.leaving
    if not left:
        try:
            worker.leave()
        except timely.TimelyError as error:
            said = str(error)
    words.close()
    ctl.close()
    if left:  # steps until its process has left
        while worker.step_or_park(0.01):
            pass
    while not left and not probe.done():
        worker.step_or_park(0.01)
    sys.stdout.write(json.dumps({"worker": worker.index, "fed": fed, "counts": counts, "said": said,
                                 "left": left, "members": worker.members}) + "\n")
    sys.stdout.flush()


timely.execute_from_args(sys.argv[1:], main)
