"""A join asked for while another process leaves by itself (`docs/rescaling.md`, "Joins and
leaves at the same time"), through the public API and the real launcher: three processes,
process 2 calls `worker.leave()` (which the launcher does not see) while worker 0 calls
`launch.add_process()`, in either order by the seed's timing. The members refuse the join
while the leave is in progress, the launcher starts the joiner again once it can, the joined
process feeds too, and `count_by_key` gives exactly a sequential program's counts."""

import json
from collections import Counter

import pytest

from support.cluster import write_hostfile
from support.launched import Launched
from support.paths import CLUSTER_SCRIPTS

SCRIPT = CLUSTER_SCRIPTS / "join_during_leave.py"
SEEDS = (1, 2, 3, 4)


def launch(directory, seed):
    """Runs the script of `seed`; returns the launcher's status, its stderr and each worker's
    output."""
    outdir = directory / "workers"
    outdir.mkdir()
    hostfile, _ = write_hostfile(directory, 4)
    with Launched(directory, "-n", 3, "-w", 1, "--hostfile", hostfile, SCRIPT, seed, outdir) as run:
        status = run.status(100)
        err = run.err()
    found = {int(path.stem): json.loads(path.read_text()) for path in outdir.glob("*.json")}
    return status, err, found


@pytest.mark.timeout(150)
@pytest.mark.parametrize("seed", SEEDS)
def test_a_join_during_a_self_asked_leave_completes_with_exact_counts(tmp_path, seed):
    status, err, found = launch(tmp_path, seed)
    assert status == 0, f"the launch failed ({status}):\n{err[-6000:]}"
    assert sorted(found) == [0, 1, 2, 3], f"not every worker wrote its output: {sorted(found)}\n{err[-3000:]}"
    assert found[2]["left"], "process 2 did not leave"
    assert found[3]["joined"], "process 3 did not join"
    assert found[3]["fed"], "the joined process fed nothing"
    fed = Counter((epoch, key) for worker in found.values() for epoch, key in worker["fed"])
    counted = Counter()
    for worker in found.values():
        for epoch, key, count in worker["counts"]:
            assert (epoch, key) not in counted, f"({epoch}, {key!r}) counted on two workers"
            counted[(epoch, key)] = count
    assert counted == fed, (
        f"counts differ from the sequential reference: missing {dict(fed - counted)}, "
        f"extra {dict(counted - fed)}\n{err[-3000:]}"
    )
