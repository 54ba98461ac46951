"""Worker 0 evacuates process 2's Megaphone bins before asking it to leave: a `Controller`
plans the moves (`evacuate`, batched), worker 0 sends one step per epoch, and once the last
step has applied it asks the launcher to remove process 2 (`launch.remove_process`). Every
worker feeds words each epoch until its process leaves or the run ends. Every worker prints
one line of JSON: its index, what it fed, its word counts `[epoch, word, count]`, whether it
left, and on worker 0 the epoch from which process 2 owned no bin and the bins it planned.
Usage: megaphone_evacuation.py RUNTIME_FLAGS (under the launcher, 3 processes of 1 worker)"""

import json
import sys

import timely_py as timely
from timely_py import launch
from timely_py.megaphone import Control, Controller, RoutingTable, Strategy, bin_of

EPOCHS = 14
BINS = 16
LEAVER = 2
#: The epoch at which worker 0 plans the evacuation.
PLAN_AT = 3
#: A word in a bin that round robin gives the leaver (bin b on worker b % 3), fed every epoch,
#: so that the leaver has counts to lose whatever bins the other words fall in.
LEAVERS_WORD = next(w for w in (f"x{i}" for i in range(1000)) if bin_of(w, BINS) % 3 == LEAVER)


def main(worker):
    words, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    counts, fed = [], []
    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=BINS, name="Words")
        (scope.input_from(words).map(lambda w: (w, 1))
         .state_machine(control, lambda word, n, count: ((count or 0) + n, [(word, (count or 0) + n)]))
         .inspect_time(lambda t, wc: counts.append([t, *wc])).probe_with(probe))
    controller = Controller(RoutingTable.round_robin(bins=BINS, peers=worker.peers))
    report = {"planned": None, "steps": [], "evacuated_at": None, "table": None}
    epoch = 0
    while not worker.leaving and (epoch < EPOCHS or len(worker.members) > 2):
        if worker.index == 0:
            drive(worker, controller, ctl, epoch, report)
        batch = ["a", "b", "a", f"w{worker.index}", f"e{epoch}", LEAVERS_WORD]
        words.send_batch(batch)
        fed += [[epoch, word] for word in batch]
        epoch += 1
        words.advance_to(epoch)
        ctl.advance_to(epoch)
        worker.step_while(lambda: probe.less_than(epoch) and not worker.leaving)
    left = worker.leaving
    # Taken before the inputs close: once every dataflow is complete, process 1 may end, and
    # a process that ended is no longer a member.
    members = worker.members
    words.close()
    ctl.close()
    while worker.step_or_park(0.01):
        pass
    sys.stdout.write(json.dumps({"worker": worker.index, "fed": fed, "counts": counts, "left": left,
                                 "members": members, **report}) + "\n")
    sys.stdout.flush()


def drive(worker, controller, ctl, epoch, report):
    """Worker 0: plans the evacuation at PLAN_AT, sends one step per epoch (each epoch waits
    for the previous one's output, which paces the steps), and asks for the leave once the
    last step applied."""
    if epoch == PLAN_AT:
        report["planned"] = controller.evacuate(worker.workers_of(LEAVER), worker.members, Strategy.batched(1),
                                                earliest=epoch)
        report["table"] = list(controller.table.owners)
    step = controller.next_step()
    if step:
        ctl.send_batch(step)
        report["steps"].append([epoch, len(step)])
    elif report["planned"] and report["evacuated_at"] is None:
        # The previous epoch carried the last step, and its output is complete.
        report["evacuated_at"] = epoch - 1
        launch.remove_process(LEAVER)


timely.execute_from_args(sys.argv[1:], main)
