"""Keyed state across joins from Python (`docs/megaphone.md`, "Joins"): the launcher runs
`examples/word_count_scale_out.py` on 2 processes of 2 workers; worker 0 asks for a third
process, which joins, receives the word count's routing state, feeds words and gets bins when
worker 0 rebalances; the latest count of every word equals a plain count of every word fed."""

import re

import pytest
from support.cluster import write_hostfile
from support.launched import Launched
from support.paths import EXAMPLES


@pytest.mark.parametrize("strategy", ["all_at_once", "fluid", "batched"])
def test_word_count_stays_exact_while_a_process_joins_and_bins_move_to_it(tmp_path, strategy):
    hostfile, _ = write_hostfile(tmp_path, 3)
    script = EXAMPLES / "word_count_scale_out.py"
    with Launched(tmp_path, "-n", 2, "-w", 2, "--hostfile", hostfile, script, 16, 0.02, 3, strategy) as run:
        assert run.status() == 0, run.err()
    out = run.out()
    assert "[0] worker 0: epoch 3, asking for a process: 2" in out
    grew = re.search(r"the cluster grew to 6 workers: moving (\d+) of 64 bins \((\w+)\)", out)
    assert grew and int(grew.group(1)) > 0 and grew.group(2) == strategy, out
    assert re.search(r"^\[0\] worker 0: exact: the latest counts of \d+ words equal", out, re.MULTILINE), out
    counted = {int(w): int(n) for w, n in re.findall(r"worker (\d+): counted (\d+) words$", out, re.MULTILINE)}
    assert sorted(counted) == list(range(6)), out
    assert counted[4] > 0 and counted[5] > 0, f"the joined workers counted nothing: {counted}"
