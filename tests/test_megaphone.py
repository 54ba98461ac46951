"""Megaphone's keyed operators from Python (`timely_py.megaphone`, `docs/megaphone.md`):
word count and a keyed running sum stay exactly those of a sequential run while every bin
moves to one worker and back, for each strategy, on 1 and 2 workers of one process."""

import pytest
import timely_py as timely
from megaphone_programs import (
    EPOCHS,
    canonical,
    canonical_reference,
    reference_counts,
    reference_sums,
    run,
    schedule,
)
from timely_py.megaphone import Strategy

STRATEGIES = [Strategy.all_at_once(), Strategy.fluid(), Strategy.batched(2)]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.kind)
@pytest.mark.parametrize("workers", [1, 2])
def test_counts_and_sums_stay_exact_across_migrations(workers, strategy):
    results = timely.execute(lambda worker: run(worker, strategy), workers=workers)
    counts = [x for worker_counts, _ in results for x in worker_counts]
    sums = [x for _, worker_sums in results for x in worker_sums]
    assert canonical(counts) == canonical_reference(reference_counts())
    assert canonical(sums) == canonical_reference(reference_sums())
    _, (gathered, spread) = schedule(workers, strategy)
    # While every bin is on the last worker, only it produces outputs; before and after the
    # migrations, every worker does.
    assert {w for w, t, _ in counts if gathered <= t < spread} == {workers - 1}
    assert {w for w, t, _ in counts if t < 3} == set(range(workers))
    assert {w for w, t, _ in counts if t > spread} == set(range(workers))
    assert max(t for _, t, _ in sums) == EPOCHS - 1 + 2
