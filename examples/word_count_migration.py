"""Word count whose per-word state moves between workers while words keep arriving.

Every bin of words starts on worker 0 (as if the other workers had just joined); at epoch
MOVE_AT the program rebalances the bins over every worker with the chosen strategy, and keeps
counting. Each worker prints the final count of every word whose bin it holds in the final
routing table ("final WORD COUNT on worker W"), and worker 0 prints the moves it sent. The counts equal
those of `collections.Counter` over the same text, whatever the strategy.

    python examples/word_count_migration.py [all_at_once|fluid|batched] -w 2
"""

import sys

import timely_py as timely
from timely_py.megaphone import Control, RoutingTable, Strategy, plan, rebalance

BINS = 16
EPOCHS = 30
MOVE_AT = 5
TEXT = """the quick brown fox jumps over the lazy dog while the dog sleeps and the fox
runs over the hill to the river where the quick fish swim under the old bridge""".split()


def lines(epoch):
    """The words of `epoch`: a rotation of the text, so every epoch differs."""
    shift = (epoch * 7) % len(TEXT)
    return TEXT[shift:] + TEXT[: shift // 2]


def strategy_named(name):
    return Strategy.batched(4) if name == "batched" else getattr(Strategy, name)()


def commands(peers, strategy):
    """Everything to worker 0 at time 0, then rebalanced from MOVE_AT on: the commands by
    time, and the table in force after them."""
    start = RoutingTable.round_robin(BINS, peers)
    gathered = RoutingTable([0] * BINS)
    moves = plan(start, gathered, Strategy.all_at_once(), 0) + rebalance(gathered, peers, strategy, MOVE_AT)
    if moves and moves[-1][0] >= EPOCHS:
        raise SystemExit(f"the {strategy.kind} plan ends at epoch {moves[-1][0]}, after the input's {EPOCHS}")
    by_time = {}
    for time, move in moves:
        by_time.setdefault(time, []).append(move)
    return by_time, start.apply(moves)


def count(word, one, total):
    total = (total or 0) + one
    return total, [(word, total)]


def main(worker, strategy):
    data, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    latest = {}
    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=BINS, name="WordCount")
        (scope.input_from(data)
            .state_machine(control, count)
            .inspect(lambda pair: latest.__setitem__(pair[0], pair[1]))
            .probe_with(probe))
    by_time, final = commands(worker.peers, strategy)
    if worker.index == 0:
        moved = sum(len(moves) for time, moves in by_time.items() if time >= MOVE_AT)
        print(f"rebalancing {moved} bins with {strategy.kind} from epoch {MOVE_AT}", flush=True)
    for epoch in range(EPOCHS):
        data.send_batch([(word, 1) for word in lines(epoch)[worker.index :: worker.peers]])
        if worker.index == 0:
            ctl.send_batch(by_time.get(epoch, []))
        data.advance_to(epoch + 1)
        ctl.advance_to(epoch + 1)
        while probe.less_than(epoch + 1):
            worker.step()
    # A worker saw the counts of the words it held before they moved; it reports those it
    # holds in the final table.
    mine = sorted((word, n) for word, n in latest.items() if final.owner(word) == worker.index)
    report = "".join(f"final {word} {n} on worker {worker.index}\n" for word, n in mine)
    sys.stdout.write(report)
    sys.stdout.flush()


if __name__ == "__main__":
    args = timely.program_args(sys.argv[1:])
    chosen = strategy_named(args[0] if args else "fluid")
    timely.execute_from_args(sys.argv[1:], lambda worker: main(worker, chosen))
