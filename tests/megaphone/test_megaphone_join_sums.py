"""A keyed running sum with per-key notifications stays exact while a process joins with
`--join` (`docs/megaphone.md`, "Joins"): 2 processes of 2 workers, a third joins through
worker 1, feeds records, receives the routing state, and gets bins when worker 0 rebalances;
every sum equals a sequential reference computed from every record fed."""

import json
from collections import defaultdict

import pytest
from support.cluster import Cluster
from support.paths import CLUSTER_SCRIPTS

SCRIPT = CLUSTER_SCRIPTS / "megaphone_join_sums.py"
LAG = 2


def reference(fed):
    """Per key, at `t + LAG` for every epoch `t` with a record of the key: its sum up to then."""
    by_key = defaultdict(list)
    for epoch, key, value in fed:
        by_key[key].append((epoch, value))
    expected = []
    for key, history in by_key.items():
        for at in sorted({epoch + LAG for epoch, _ in history}):
            expected.append((at, key, sum(v for e, v in history if e <= at)))
    return sorted(expected)


@pytest.mark.parametrize("strategy", ["fluid", "batched"])
def test_keyed_sums_with_notifications_stay_exact_across_a_join(tmp_path, strategy):
    with Cluster(tmp_path, 3, workers=2) as cluster:
        cluster.processes = 2
        for index in range(2):
            cluster.start(index, [SCRIPT, 6, strategy])
        cluster.wait_for_output(0, r"^ready$")
        cluster.start(2, [SCRIPT, 6, strategy, "--join", 1, "--nn", 3])
        cluster.assert_succeeded()
        lines = [json.loads(line) for i in range(3) for line in cluster.stdout(i).splitlines() if line != "ready"]
    assert sorted(line["worker"] for line in lines) == list(range(6))
    fed = [tuple(r) for line in lines for r in line["fed"]]
    sums = [tuple(s) for line in lines for s in line["sums"]]
    assert sorted((t, k, s) for _, t, k, s in sums) == reference(fed)
    assert {w for w, *_ in sums} >= {4, 5}, "the joined workers reported sums once they held bins"
    assert any(epoch > 0 for line in lines if line["worker"] >= 4 for epoch, _, _ in line["fed"]), "joiners fed"
