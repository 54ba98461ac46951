"""A word count whose counts stay exact while a process joins: the rescale-safe way to write it.

Run it under the launcher, which starts the new process when worker 0 asks for it:

    python -m timely_py.launch -n 2 examples/rescale_safe_word_count.py [AFTER [ASK_AT]]

Every worker feeds a few words per epoch. In epoch ASK_AT (default 3) worker 0 calls
`timely_py.launch.add_process()`; the new process's workers join and feed words too. Every
worker runs until it counts the new workers, then AFTER more epochs (default 10).

Two counts, each written so that a join cannot make it wrong (`docs/rescaling.md`, "Which
patterns are exact across joins"):

* per epoch, `count_by_key`: state for one epoch only, and every worker routes the words of
  one epoch the same way, so each (epoch, word) is counted once, on one worker;
* running totals across epochs, Megaphone's `state_machine` (`docs/megaphone.md`): the
  per-word state lives in bins, and once worker 0 counts the new workers it moves some bins
  to them (a `Controller` sends the moves on the control stream), state and all.

The classic timely word count (a plain `exchange(word)` into a dict of totals) is not
exact across a join: some words then go to a new worker, which starts counting from zero.

Each worker prints how many per-epoch counts and running-total updates it made (the new ones
take part), and worker 0 checks both counts against the words every worker fed.
"""

import sys
import time
from collections import Counter, defaultdict

import timely_py as timely
from timely_py import launch
from timely_py.megaphone import Control, Controller, RoutingTable, Strategy

BINS = 32
TEXT = """the quick brown fox jumps over the lazy dog while the dog sleeps and the fox
runs over the hill to the river where the quick fish swim under the old bridge""".split()

args = timely.program_args(sys.argv[1:])
after = int(args[0]) if args else 10
ask_at = int(args[1]) if len(args) > 1 else 3


def say(line):
    sys.stdout.write(line + "\n")  # one write per line: lines of two workers do not mix
    sys.stdout.flush()


def words_of(epoch, worker):
    start = (epoch * 7 + worker * 5) % len(TEXT)
    return (TEXT + TEXT)[start : start + 5]


def main(worker):
    text, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    made = Counter()  # on this worker: per-epoch counts and running-total updates made
    fed, per_epoch, totals = Counter(), [], {}  # on worker 0: to check the counts

    def running_total(word, one, total):
        made["totals"] += 1
        total = (total or 0) + one
        return total, [(word, total)]

    to_0 = lambda _: 0  # noqa: E731  (gathers results on worker 0, to check them)
    with worker.dataflow() as scope:
        words = scope.input_from(text)
        words.exchange(to_0).inspect_time(lambda t, word: fed.update([(t, word)])).probe_with(probe)
        (words.count_by_key()
            .inspect(lambda _: made.update(["per_epoch"]))
            .exchange(to_0)
            .inspect_time(lambda t, counted: per_epoch.append((t, *counted)))
            .probe_with(probe))
        control = Control(scope.input_from(ctl), bins=BINS, name="Totals")
        (words.map(lambda word: (word, 1))
            .state_machine(control, running_total)
            .exchange(to_0)
            .inspect(lambda wt: totals.__setitem__(wt[0], max(wt[1], totals.get(wt[0], 0))))
            .probe_with(probe))

    joined = worker.bootstrap()
    controller = Controller(RoutingTable.round_robin(BINS, worker.peers))  # used by worker 0
    epoch, peers = text.time, worker.peers
    last = epoch + after if joined else None  # the initial workers run until the join, then more
    while last is None or epoch < last or not controller.idle:
        text.send_batch(words_of(epoch, worker.index))
        if worker.index == 0:
            if epoch == ask_at:
                say(f"worker 0: epoch {epoch}, asking for a process: {launch.add_process()}")
            ctl.send_batch(controller.due(epoch))
            time.sleep(0.05)
        text.advance_to(epoch + 1)
        ctl.advance_to(epoch + 1)
        while probe.less_than(epoch + 1):
            worker.step_or_park(0.01)
        if worker.peers > peers:
            peers, last = worker.peers, epoch + after
            if worker.index == 0:
                moved = controller.rebalance(worker.members, Strategy.all_at_once(), epoch + 2)
                say(f"worker 0: epoch {epoch}, {peers} workers now: moving {moved} of {BINS} bins to them")
        epoch += 1
    text.close()
    ctl.close()
    while not probe.done():
        worker.step_or_park(0.01)
    say(f"worker {worker.index}: {made['per_epoch']} per-epoch counts, {made['totals']} running-total updates")
    if worker.index == 0:
        check(fed, per_epoch, totals)


def check(fed, per_epoch, totals):
    """One count per (epoch, word) equal to the words fed, and running totals equal to them all."""
    counts = defaultdict(list)  # (epoch, word) -> the counts made of it: exactly one is right
    for t, word, n in per_epoch:
        counts[(t, word)].append(n)
    wrong = {pair: found for pair, found in counts.items() if found != [fed[pair]]}
    if wrong or counts.keys() != fed.keys():
        raise SystemExit(f"worker 0: per-epoch counts differ from the words fed ((epoch, word): counts): {wrong}")
    words = Counter()
    for (_, word), n in fed.items():
        words[word] += n
    if totals != dict(words):
        raise SystemExit(f"worker 0: running totals {totals} differ from the words fed {dict(words)}")
    say(f"worker 0: exact: {len(per_epoch)} per-epoch counts and the running totals of {len(totals)} "
        f"words equal a plain count of all {sum(words.values())} words fed")


if __name__ == "__main__":
    timely.execute_from_args(sys.argv[1:], main)
