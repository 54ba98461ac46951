"""Per-epoch word count with a generic operator: Listing 2.1 of the thesis, in Python.

Each line of `TEXT` is one epoch; worker `epoch % peers` reads it. Words are exchanged by
word, so every occurrence of a word reaches the same worker, whose `WordCount` operator
(`unary_notify`) counts them per epoch and, once the epoch is complete (notification),
sends `(word, count)` for that epoch. A `Print` operator gathers the counts on worker 0,
which prints each epoch's counts once that epoch is complete, in order of the words: the
output is the same for any number of workers and processes.

Run with `python examples/wordcount.py -w 2` (two worker threads), or on two processes of
two workers each with `python -m timely_py.launch -n 2 -w 2 examples/wordcount.py` (only
process 0, which holds worker 0, prints). It prints one line `epoch E: WORD COUNT` per word
and epoch.
"""

import sys
from collections import Counter

import timely_py as timely

TEXT = [
    "the quick brown fox jumps over the lazy dog",
    "the dog barks and the fox runs",
    "a fox a dog a cat",
    "the end",
]


def word_count(words):
    """Counts `words` per epoch; emits `(word, count)` once the epoch is complete."""
    counts_by_time = {}

    def logic(input, output, notificator):
        for time, batch in input:
            counts_by_time.setdefault(time.time, Counter()).update(batch)
            notificator.notify_at(time)
        for time in notificator:
            counts = counts_by_time.pop(time.time, None)
            if counts:
                output.give_all(time, sorted(counts.items()))

    return words.unary_notify(logic, name="WordCount", exchange=lambda word: word)


def print_counts(counts):
    """Gathers `(word, count)` records on worker 0 and prints them, epoch by epoch."""
    received = {}

    def logic(input, output, notificator):
        for time, batch in input:
            received.setdefault(time.time, []).extend(batch)
            notificator.notify_at(time)
        for time in notificator:
            for word, count in sorted(received.pop(time.time)):
                print(f"epoch {time.time}: {word} {count}")

    return counts.unary_notify(logic, name="Print", exchange=lambda _: 0)


def main(worker):
    lines, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        words = scope.input_from(lines).flat_map(str.split)
        print_counts(word_count(words)).probe_with(probe)
    for epoch, line in enumerate(TEXT):
        if epoch % worker.peers == worker.index:
            lines.send(line)
        lines.advance_to(epoch + 1)
        while probe.less_than(lines.time):
            worker.step()
    lines.close()


if __name__ == "__main__":
    timely.execute_from_args(sys.argv[1:], main)
