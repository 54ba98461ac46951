"""Word count that stays exact while the cluster grows: keyed state moves to a new process.

Run it under the launcher, which starts the new process when worker 0 asks for it:

    python -m timely_py.launch -n 2 -w 2 examples/word_count_scale_out.py [EPOCHS [PAUSE [ASK_AT [STRATEGY]]]]

Every worker feeds a few words each epoch (EPOCHS, default 30; pausing PAUSE seconds, default
0.05) into a Megaphone word count (`timely_py.megaphone`). In epoch ASK_AT (default 4) worker 0
calls `timely_py.launch.add_process()`; the new process's workers join, receive the routing
state of the word count from the others, and feed words too. As soon as worker 0 counts the
new workers it rebalances the bins over every worker with STRATEGY (all_at_once, fluid or
batched; default batched), so part of the per-word state moves to the new process while
words keep arriving (every worker feeds on until the new process has joined, however long its
start takes). Each worker prints how many words it counted (the new ones count only
once bins have moved to them), and worker 0 checks the result: the latest count of every word
must equal a plain count of every word any worker fed, before and after the join.
"""

import sys
import time
from collections import Counter

import timely_py as timely
from timely_py import launch
from timely_py.megaphone import Control, Controller, RoutingTable, Strategy

BINS = 64
#: Seconds the workers feed on waiting for the process they asked for before they give up.
WAIT_FOR_JOIN = 60
TEXT = """the quick brown fox jumps over the lazy dog while the dog sleeps and the fox
runs over the hill to the river where the quick fish swim under the old bridge""".split()

args = timely.program_args(sys.argv[1:])
epochs = int(args[0]) if args else 30
pause = float(args[1]) if len(args) > 1 else 0.05
ask_at = int(args[2]) if len(args) > 2 else 4
strategy_name = args[3] if len(args) > 3 else "batched"


def strategy_named(name):
    return Strategy.batched(4) if name == "batched" else getattr(Strategy, name)()


def say(line):
    """Prints `line` in one write, so lines of workers sharing a process do not mix."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def words_of(epoch, worker):
    """The words worker `worker` feeds in `epoch`: a slice of the text that differs by both."""
    start = (epoch * 7 + worker * 5) % len(TEXT)
    return (TEXT + TEXT)[start : start + 6]


def main(worker):
    data, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    counted = [0]                     # words this worker's share of the word count applied
    latest, fed = {}, Counter()       # on worker 0: the latest count per word, every word fed

    def count(word, one, total):
        counted[0] += 1
        total = (total or 0) + one
        return total, [(word, total)]

    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=BINS, name="WordCount")
        words = scope.input_from(data)
        (words.state_machine(control, count)
            .exchange(lambda pair: 0)
            .inspect(lambda pair: latest.__setitem__(pair[0], max(pair[1], latest.get(pair[0], 0))))
            .probe_with(probe))
        words.exchange(lambda pair: 0).inspect(lambda pair: fed.update([pair[0]])).probe_with(probe)

    joined = worker.bootstrap()
    if joined:
        say(f"worker {worker.index}: joined with {worker.peers} workers; no bins here yet")
    controller = Controller(RoutingTable.round_robin(BINS, worker.peers))  # used by worker 0
    epoch, peers = data.time, worker.peers
    last = max(epochs, epoch + 12) if joined else epochs
    grown = joined  # every worker feeds on until it counts the new process's workers
    started = time.monotonic()
    # Worker 0 sends every planned move; nobody stops before the new process joined, since
    # a joiner that arrives late (a slow machine) would find no cluster to join.
    while epoch < last or not controller.idle or (not grown and epochs > ask_at):
        if not grown and time.monotonic() - started > WAIT_FOR_JOIN:
            raise SystemExit(f"worker {worker.index}: no process joined within {WAIT_FOR_JOIN} s")
        data.send_batch([(word, 1) for word in words_of(epoch, worker.index)])
        if worker.index == 0:
            if epoch == ask_at:
                say(f"worker 0: epoch {epoch}, asking for a process: {launch.add_process(server=0)}")
            ctl.send_batch(controller.due(epoch))
            time.sleep(pause)
        data.advance_to(epoch + 1)
        ctl.advance_to(epoch + 1)
        while probe.less_than(epoch + 1):
            worker.step_or_park(0.01)
        if worker.peers > peers:
            peers, last, grown = worker.peers, max(last, epoch + 12), True
            if worker.index == 0:
                moved = controller.rebalance(worker.members, strategy_named(strategy_name), epoch + 2)
                say(f"worker 0: epoch {epoch}, the cluster grew to {peers} workers: moving "
                    f"{moved} of {BINS} bins ({strategy_name}) from epoch {epoch + 2}")
        epoch += 1
    data.close()
    ctl.close()
    while not probe.done():
        worker.step_or_park(0.01)
    say(f"worker {worker.index}: counted {counted[0]} words")
    if worker.index == 0:
        check(latest, fed)


def check(latest, fed):
    if latest != dict(fed):
        wrong = {word: (latest.get(word), n) for word, n in fed.items() if latest.get(word) != n}
        raise SystemExit(f"worker 0: counts differ from the words fed (count, fed): {wrong}")
    say(f"worker 0: exact: the latest counts of {len(fed)} words equal a plain count of all "
        f"{sum(fed.values())} words fed")


if __name__ == "__main__":
    timely.execute_from_args(sys.argv[1:], main)
