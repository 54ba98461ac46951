"""A process whose dataflow has a Megaphone operator asks to leave: `worker.leave()` raises
`TimelyError` naming the operator and nothing changes; the word count still comes out whole.
Every worker prints one line: "refused: MESSAGE" (process 1) or "stayed", then its counts as
JSON. Usage: megaphone_leave_refused.py RUNTIME_FLAGS (under the launcher, 2 processes)"""

import json
import sys

import timely_py as timely
from timely_py.megaphone import Control


def main(worker):
    words, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    counts = []
    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), name="Words")
        (scope.input_from(words).map(lambda w: (w, 1))
         .state_machine(control, lambda word, n, count: (False, [(word, (count or 0) + n)]))
         .inspect_time(lambda t, wc: counts.append([t, *wc])).probe_with(probe))
    said = "stayed"
    for epoch in range(4):
        if epoch == 2 and worker.index == 1:
            try:
                worker.leave()
            except timely.TimelyError as error:
                said = f"refused: {error}"
        words.send_batch(["a", "b", "a", f"w{worker.index}"])
        words.advance_to(epoch + 1)
        ctl.advance_to(epoch + 1)
        worker.step_while(lambda: probe.less_than(epoch + 1))
    words.close()
    ctl.close()
    worker.step_while(lambda: not probe.done())
    sys.stdout.write(json.dumps({"worker": worker.index, "said": said, "leaving": worker.leaving,
                                 "members": worker.members, "counts": counts}) + "\n")
    sys.stdout.flush()


timely.execute_from_args(sys.argv[1:], main)
