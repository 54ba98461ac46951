"""Megaphone's keyed operators across processes: 2 processes of 2 workers, every bin moves to
the last worker (process 1) and back, so keyed state crosses processes through the codec in
both directions, and the results stay exactly those of a sequential run, for each strategy
(the unary operators and the binary join)."""

import json

import pytest
from support.cluster import Cluster
from support.megaphone_programs import (
    canonical_reference,
    reference_counts,
    reference_join,
    reference_sums,
    schedule,
)
from support.paths import CLUSTER_SCRIPTS as SCRIPTS
from timely_py.megaphone import Strategy

PROGRAMS = SCRIPTS / "megaphone_join.py"


@pytest.mark.parametrize("name", ["all_at_once", "fluid", "batched"])
def test_counts_and_sums_stay_exact_when_state_moves_between_processes(tmp_path, name):
    with Cluster(tmp_path, processes=2, workers=2) as cluster:
        cluster.start_all([SCRIPTS / "megaphone_counts.py", name])
        cluster.assert_succeeded()
        lines = [json.loads(line) for i in range(2) for line in cluster.stdout(i).splitlines()]
    assert len(lines) == 4, "one line per worker"
    counts = [tuple(x) for line in lines for x in line["counts"]]
    sums = [tuple(x) for line in lines for x in line["sums"]]
    assert sorted((t, x) for _, t, x in counts) == canonical_reference(reference_counts())
    assert sorted((t, x) for _, t, x in sums) == canonical_reference(reference_sums())
    strategy = Strategy.batched(2) if name == "batched" else getattr(Strategy, name)()
    _, (gathered, spread) = schedule(4, strategy)
    assert {w for w, t, _ in counts if gathered <= t < spread} == {3}, "every bin on process 1"
    assert {w for w, t, _ in counts if t > spread} == {0, 1, 2, 3}, "spread again"


@pytest.mark.parametrize("name", ["all_at_once", "fluid", "batched"])
def test_a_keyed_binary_join_stays_exact_when_state_moves_between_processes(tmp_path, name):
    with Cluster(tmp_path, processes=2, workers=2) as cluster:
        cluster.start_all([PROGRAMS, name])
        cluster.assert_succeeded()
        lines = [json.loads(line) for i in range(2) for line in cluster.stdout(i).splitlines()]
    assert len(lines) == 4, "one line per worker"
    out = [tuple(x) for line in lines for x in line["join"]]
    assert sorted((t, x) for _, t, x in out) == canonical_reference(reference_join())
    strategy = Strategy.batched(2) if name == "batched" else getattr(Strategy, name)()
    _, (gathered, spread) = schedule(4, strategy)
    assert {w for w, t, _ in out if gathered <= t < spread} == {3}, "every bin on process 1"
    assert {w for w, t, _ in out if t > spread} == {0, 1, 2, 3}, "spread again"


def test_a_state_that_cannot_be_pickled_fails_the_move_with_the_pickling_error(tmp_path):
    with Cluster(tmp_path, processes=2) as cluster:
        cluster.start_all([SCRIPTS / "megaphone_unpicklable.py"])
        statuses = cluster.wait_all()
        err = cluster.stderr(0)
    assert statuses[0] != 0
    assert "pickle" in err, err
    assert "a key's state could not be encoded to move its bin to another process" in err, err
    assert "panicked" not in err
