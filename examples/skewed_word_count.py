"""A word count over skewed words, and where its time goes.

Every worker draws words from a skewed (Zipf) distribution: a few words are very frequent.
Each word goes through `Normalize`, a per-record step that costs about 30 µs (a stand-in
for parsing or a lookup), then `count_by_key` counts every word per epoch. Worker 0 checks
the counts against a plain count of every word drawn.

By default (`--keyed`) `Normalize` runs after the words are routed by word, so the worker
that owns the most frequent words does most of the work and the others wait for it: trace
the run and the critical-path analysis names `Normalize` on that worker. With `--spread`
each word is normalized where it was drawn, before the routing, so the work is shared
evenly; only the counting, which needs all of a word on one worker, is keyed.

    python -m timely_py.launch -n 2 -w 1 --trace trace examples/skewed_word_count.py
    timely-py analyze trace --out analysis --slice 100ms
    python -m timely_py.launch -n 2 -w 1 examples/skewed_word_count.py --spread

One worker per process, as many as the cores: workers that share a core share the skew's
cost too, and the remedy then gains little time.

Arguments: `[EPOCHS [WORDS]] [--keyed | --spread]` (defaults 20 epochs of 600 words per
worker). Every worker prints how many words it normalized; the process of worker 0 prints
the time of the epochs (from the first word fed to the last count) and whether the counts
are exact.
"""

import hashlib
import random
import sys
import time
from collections import Counter

import timely_py as timely

#: The vocabulary; word i is drawn with weight 1 / (i + 1) ** SKEW.
VOCABULARY = [f"word{i}" for i in range(400)]
SKEW = 1.6


def draw(worker_index, epoch, count):
    """The `count` words worker `worker_index` draws in `epoch` (the same in every run)."""
    rng = random.Random(worker_index * 1_000_003 + epoch)
    weights = [1 / (rank + 1) ** SKEW for rank in range(len(VOCABULARY))]
    return rng.choices(VOCABULARY, weights=weights, k=count)


def normalize(word):
    """The per-record work: about 30 µs of hashing, then the word itself."""
    hashlib.pbkdf2_hmac("sha256", word.encode(), b"normalize", 150)
    return word


def normalized(words, *, keyed, seen):
    """`Normalize` every word; `keyed`: after routing words by word (so each word is
    normalized on the worker that counts it), else where it was drawn. `seen` counts the
    words normalized on this worker."""

    def constructor(capability, info):
        def logic(input, output):
            for time_, batch in input:
                seen[0] += len(batch)
                output.give_all(time_, [normalize(word) for word in batch])

        return logic

    return words.unary(constructor, name="Normalize", exchange=(lambda word: word) if keyed else None)


def word_count(epochs, per_epoch, keyed):
    def main(worker):
        words, probe = timely.InputHandle(), timely.ProbeHandle()
        seen, counts = [0], Counter()
        with worker.dataflow("WordCount") as scope:
            counted = normalized(scope.input_from(words), keyed=keyed, seen=seen).count_by_key()
            # Worker 0 gathers every (word, count) of every epoch to check them.
            counted.exchange(lambda _: 0).inspect(lambda pair: counts.update({pair[0]: pair[1]})).probe_with(probe)
        started = time.perf_counter()
        for epoch in range(epochs):
            words.send_batch(draw(worker.index, epoch, per_epoch))
            words.advance_to(epoch + 1)
            while probe.less_than(words.time):
                worker.step()
        words.close()
        seconds = time.perf_counter() - started
        print(f"worker {worker.index}: normalized {seen[0]} words", flush=True)
        return (worker.peers, counts, seconds) if worker.index == 0 else None

    return main


def main_program(argv):
    args = timely.program_args(argv)
    flags = {a for a in args if a.startswith("--")}
    unknown = flags - {"--keyed", "--spread"}
    if unknown or flags == {"--keyed", "--spread"}:
        print(f"usage: skewed_word_count.py [EPOCHS [WORDS]] [--keyed | --spread]; got {sorted(flags)}", file=sys.stderr)
        return 2
    numbers = [int(a) for a in args if not a.startswith("--")]
    epochs = numbers[0] if numbers else 20
    per_epoch = numbers[1] if len(numbers) > 1 else 600
    keyed = "--spread" not in flags
    first = timely.execute_from_args(argv, word_count(epochs, per_epoch, keyed))[0]
    if first is None:  # worker 0 runs in another process, which prints the summary
        return 0
    peers, counts, seconds = first
    expected = Counter(w for index in range(peers) for epoch in range(epochs) for w in draw(index, epoch, per_epoch))
    exact = counts == expected
    where = "after routing by word (--keyed)" if keyed else "where drawn (--spread)"
    print(f"{sum(expected.values())} words on {peers} workers, normalized {where}: {seconds:.2f} s; "
          f"counts {'exact' if exact else 'WRONG'}")  # fmt: skip
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main_program(sys.argv[1:]))
