"""Sources that scale (`timely_py.shares`): record numbers spread over the workers present
while processes join and leave at random epochs, under the launcher, produce every record
exactly once at the epoch it was fed, as a sequential run produces them; the workers present
at the end share the last epochs' records and no one else produces them.

`SHARES_SEEDS=N` runs N random plans instead of the default ones."""

import json
import os
import random
from collections import Counter

import pytest
from support.cluster import write_hostfile
from support.launched import Launched

import timely_py as timely
from timely_py import shares

pytestmark = pytest.mark.cluster

SCRIPT = "tests/autoscale/scripts/shares_rescaling.py"
AFTER = 6  # as in the script
#: Default plans: a leave (0), a leave then a join (1), two joins (3), join, leave, join (5).
SEEDS = list(range(int(os.environ["SHARES_SEEDS"]))) if "SHARES_SEEDS" in os.environ else [0, 1, 3, 5]


def plan(seed):
    """`(initial processes, workers per process, events)`: 1 to 3 joins and leaves in a random
    order, each GAP (0 to 4) epochs after the previous one completed; a leave takes a random
    process other than 0 (the feeder)."""
    rng = random.Random(seed)
    initial, per = rng.choice([2, 3]), rng.choice([1, 2])
    present, following, events = list(range(initial)), initial, []
    for _ in range(rng.randint(1, 3)):
        if len(present) > 2 and rng.random() < 0.5 or len(present) == 2 and rng.random() < 0.3 and not events:
            leaver = rng.choice(present[1:])
            present.remove(leaver)
            events.append(f"leave:{leaver}:{rng.randint(0, 4)}")
        else:
            present.append(following)
            following += 1
            events.append(f"join:{rng.randint(0, 4)}")
    return initial, per, events, following, present


@pytest.mark.timeout(150)
@pytest.mark.parametrize("seed", SEEDS)
def test_numbered_records_are_produced_once_across_joins_and_leaves(tmp_path, seed):
    initial, per, events, processes, final = plan(seed)
    outdir = tmp_path / "workers"
    outdir.mkdir()
    hostfile, _ = write_hostfile(tmp_path, processes)
    with Launched(tmp_path, "-n", initial, "-w", per, "--hostfile", hostfile,
                  SCRIPT, seed, outdir, ",".join(events)) as run:
        status = run.status(120)
    assert status == 0, f"{events}: the launch failed:\n{run.out()[-3000:]}\n{run.err()[-3000:]}"
    workers = {int(p.stem): json.loads(p.read_text()) for p in outdir.glob("*.json")}
    assert sorted(workers) == list(range(processes * per)), f"{events}: not every worker wrote its output"

    fed = workers[0]["fed"]
    expected = sorted((epoch, n) for epoch, start, stop in fed for n in range(start, stop))
    produced = sorted((e, n) for w in workers.values() for e, n in w["produced"])
    assert produced == expected, f"{events}: {Counter(produced) - Counter(expected)} extra, " \
                                 f"{Counter(expected) - Counter(produced)} missing"

    # The last AFTER epochs came after every event: the final members produced all of them,
    # each a share.
    final_workers = sorted(p * per + i for p in final for i in range(per))
    assert workers[0]["members"] == final_workers
    tail = {e for e, _, _ in fed[-AFTER:]}
    by_worker = Counter(w for w, data in workers.items() for e, _ in data["produced"] if e in tail)
    assert sorted(by_worker) == final_workers, f"{events}: the last epochs' records came from {by_worker}"


def test_pieces_cover_a_range_once_and_bad_arguments_are_clear_errors():
    rng = random.Random(7)
    for _ in range(200):
        start, count = rng.randint(-50, 50), rng.randint(1, 20)
        stop = start + rng.randint(0, 100)
        cut = shares.pieces(start, stop, count)
        assert [n for _, a, b in cut for n in range(a, b)] == list(range(start, stop))
        sizes = [b - a for _, a, b in cut]
        assert len(cut) <= count and (not sizes or max(sizes) - min(sizes) <= 1)
    with pytest.raises(ValueError, match="count must be a positive int"):
        shares.pieces(0, 5, 0)
    with pytest.raises(ValueError, match="start <= stop"):
        shares.pieces(5, 0)

    def main(worker):
        with worker.dataflow() as scope:
            with pytest.raises(TypeError, match="spread: produce must be callable"):
                shares.spread(scope.input_from(timely.InputHandle()), 3)
            with pytest.raises(ValueError, match="count must be a positive int"):
                shares.numbered(scope.input_from(timely.InputHandle()), pieces=0)
        return True

    assert timely.execute(main, workers=1) == [True]


@pytest.mark.timeout(60)
def test_a_worker_that_joins_nothing_still_gets_every_record_once_in_one_process():
    """Without a cluster: 3 workers each produce a share of every epoch."""

    def main(worker):
        ranges, produced = timely.InputHandle(), []
        with worker.dataflow() as scope:
            shares.numbered(scope.input_from(ranges), make=str).inspect_time(
                lambda t, r: produced.append((t, r)))
        if worker.index == 0:
            for epoch in range(5):
                ranges.send((epoch * 100, epoch * 100 + 100))
                ranges.advance_to(epoch + 1)
        ranges.close()
        while worker.step():
            pass
        return produced

    results = timely.execute(main, workers=3)
    assert sorted(r for w in results for r in w) == sorted((n // 100, str(n)) for n in range(500))
    assert all(len(w) > 100 for w in results), [len(w) for w in results]


