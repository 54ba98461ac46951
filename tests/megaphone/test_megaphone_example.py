"""examples/word_count_migration.py, run as users run it: the final counts equal those of
`collections.Counter` over the same text for every strategy, and after the rebalance every
worker holds some words."""

import importlib.util
import re
from collections import Counter

import pytest
from support.paths import EXAMPLES
from support.processes import run_example


def load_example():
    spec = importlib.util.spec_from_file_location("word_count_migration", EXAMPLES / "word_count_migration.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("strategy", ["all_at_once", "fluid", "batched"])
@pytest.mark.parametrize("workers", [1, 3])
def test_counts_survive_the_rebalance(strategy, workers):
    example = load_example()
    out = run_example("word_count_migration.py", strategy, "-w", str(workers))
    finals = re.findall(r"^final (\S+) (\d+) on worker (\d+)$", out, flags=re.MULTILINE)
    expected = Counter(word for epoch in range(example.EPOCHS) for word in example.lines(epoch))
    assert {word: int(n) for word, n, _ in finals} == dict(expected)
    assert len(finals) == len(expected), "each word is held by one worker"
    assert {int(w) for _, _, w in finals} == set(range(workers)), "the bins were spread"
    moved = re.search(r"^rebalancing (\d+) bins with (\w+) from epoch 5$", out, flags=re.MULTILINE)
    assert moved and moved.group(2) == strategy
    assert int(moved.group(1)) == example.BINS - -(-example.BINS // workers), "worker 0 keeps its share"
