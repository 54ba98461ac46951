"""Word count (Listing 2.1) with the generic `unary_notify`: counts per epoch match a
sequential count, each word counted on one worker, and `examples/wordcount.py` prints them,
on one and two workers."""

import importlib.util
import os
import random
import subprocess
import sys
from collections import Counter, defaultdict

import pytest
import timely_py as timely
from support.generic import PEERS, collect, feed, run
from support.paths import ROOT


def word_count(words):
    counts_by_time = {}

    def logic(input, output, notificator):
        for time, batch in input:
            counts = counts_by_time.setdefault(time.time, Counter())
            counts.update(batch)
            notificator.notify_at(time)
        for time in notificator:
            counts = counts_by_time.pop(time.time, None)
            if counts:
                output.give_all(time, counts.items())

    return words.unary_notify(logic, name="WordCount", exchange=lambda word: word)


@pytest.mark.parametrize("peers", PEERS)
def test_wordcount(peers):
    rng = random.Random(7)
    vocabulary = ["timely", "dataflow", "rust", "python", "frontier", "capability", "worker"]
    epochs = [[" ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 12))) for _ in range(3)] for _ in range(5)]

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        out = []
        with worker.dataflow() as scope:
            collect(word_count(scope.input_from(inp).flat_map(str.split)), out).probe_with(probe)
        feed(worker, inp, probe, epochs, by=None)
        return out

    results = run(main, peers)
    expected = {}
    for e, lines in enumerate(epochs):
        for word, count in Counter(" ".join(lines).split()).items():
            expected[(e, word)] = count * peers
    got = {}
    owners = defaultdict(set)
    for index, out in enumerate(results):
        for e, (word, count) in out:
            assert (e, word) not in got, "a word is counted once per epoch"
            got[(e, word)] = count
            owners[word].add(index)
    assert got == expected
    assert all(len(o) == 1 for o in owners.values())


def load_example():
    spec = importlib.util.spec_from_file_location("wordcount_example", ROOT / "examples" / "wordcount.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("peers", PEERS)
def test_wordcount_example_runs(peers):
    example = load_example()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "wordcount.py"), "-w", str(peers)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = sorted(result.stdout.splitlines())
    expected = sorted(
        f"epoch {e}: {word} {count}" for e, line in enumerate(example.TEXT) for word, count in Counter(line.split()).items()
    )
    assert lines == expected
