"""A consumer slower than its producer holds at most its receive budget (plus a constant) in
memory, and loses nothing: what is beyond the budget waits in spill files.

The producer (worker 0) sends 400 MB of 1 KB records to worker 1 on the other process without
waiting; worker 1 takes 20 us per record, so it finishes seconds after the producer. With a
16 MiB budget its resident memory stays within the budget plus `CONSTANT` of where it started;
with a budget too large to matter (as before budgets existed) it holds most of what was sent.
"""

import json
import re
from pathlib import Path

import pytest
import timely_py
from support.cluster import Cluster
from support.paths import CLUSTER_SCRIPTS as SCRIPTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

MIB = 1 << 20
EPOCHS, RECORDS = 200, 2000
#: The budget of the bounded run.
BUDGET = 16 * MIB
#: What the consumer may hold beyond the budget: its buffers in use, what a worker decodes, the
#: interpreter's own growth (about 20 MB measured; docs/networking.md, "Receive budget").
CONSTANT = 40 * MIB
#: What the receive buffers may hold beyond the budget: the buffers being filled when the
#: budget is reached (1 MiB each, or the size of a larger message; measured 3 MiB over).
BUFFER = 8 * MIB


def run_slow_consumer(tmp_path, budget):
    """The consumer's records, resident-memory growth in bytes, how many seconds after the
    producer's last send it took its last record, and its `worker.network_stats()` as of its
    last record."""
    tmp_path.mkdir()
    with Cluster(tmp_path, processes=2) as cluster:
        for index in range(2):
            cluster.start(
                index,
                [SCRIPTS / "slow_consumer.py", EPOCHS, RECORDS],
                TIMELY_RECEIVE_BUDGET=str(budget),
                TIMELY_SPILL_DIR=str(tmp_path),
            )
        assert cluster.wait_all(timeout=240) == [0, 0], cluster.report(1)
        sent = re.search(r"^producer: sent (\d+) at (\S+)$", cluster.stdout(0), re.MULTILINE)
        taken = re.search(
            r"^consumer: records (\d+) baseline (\d+) peak (\d+) last (\S+)$", cluster.stdout(1), re.MULTILINE
        )
        network = re.search(
            r"^network: held (\d+) spilled (\d+) messages (\d+) budget (\d+)$", cluster.stdout(1), re.MULTILINE
        )
        assert sent and taken and network, cluster.report(0) + cluster.report(1)
        records, baseline, peak, last = int(taken[1]), int(taken[2]), int(taken[3]), float(taken[4])
        assert int(sent[1]) == EPOCHS * RECORDS
        keys = ["peak_held_bytes", "spilled_bytes", "spilled_messages", "receive_budget"]
        return records, peak - baseline, last - float(sent[2]), dict(zip(keys, map(int, network.groups())))


def test_a_slow_consumer_holds_its_budget_and_loses_nothing(tmp_path):
    records, growth, lag, network = run_slow_consumer(tmp_path / "bounded", BUDGET)
    assert records == EPOCHS * RECORDS, "records were lost"
    assert network["receive_budget"] == BUDGET
    # What the receive buffers held stayed within the budget plus the buffers being filled,
    # and the rest spilled.
    assert network["peak_held_bytes"] <= BUDGET + BUFFER, network
    assert network["spilled_bytes"] > 100 * MIB and network["spilled_messages"] > 0, network
    assert lag > 2, f"the consumer kept up (finished {lag:.1f} s after the producer): no overload was tested"
    assert growth < BUDGET + CONSTANT, f"the consumer grew by {growth / MIB:.0f} MiB with a 16 MiB budget"


def test_without_a_budget_that_binds_the_consumer_holds_the_backlog(tmp_path):
    records, growth, _, network = run_slow_consumer(tmp_path / "unbounded", "64G")
    assert records == EPOCHS * RECORDS
    assert network["spilled_bytes"] == 0 and network["peak_held_bytes"] > BUDGET + BUFFER, network
    assert growth > BUDGET + CONSTANT, f"grew by only {growth / MIB:.0f} MiB: the bounded test proves nothing"


@pytest.mark.timeout(60)
def test_network_stats_report_every_figure_and_the_configured_limits(tmp_path):
    """`network_stats()` gives every key `NetworkStats` (in `_core.pyi`) names, with the budgets
    the environment set (`TIMELY_RECEIVE_BUDGET`, `TIMELY_EARLY_BYTES`)."""
    stub = (Path(timely_py.__file__).parent / "_core.pyi").read_text()
    start = stub.index("class NetworkStats(TypedDict):")
    typed = stub[start : stub.index("\n@final", start)]
    keys = set(re.findall(r"^    (\w+): int$", typed, re.MULTILINE))
    assert "early_bytes_limit" in keys, typed
    with Cluster(tmp_path, processes=2) as cluster:
        for index in range(2):
            cluster.start(
                index, [SCRIPTS / "network_stats.py"], TIMELY_RECEIVE_BUDGET="3M", TIMELY_EARLY_BYTES="2M"
            )
        assert cluster.wait_all(timeout=45) == [0, 0], cluster.report(0) + cluster.report(1)
        stats = [json.loads(cluster.stdout(index)) for index in range(2)]
    for network in stats:
        assert set(network) == keys, network
        assert network["receive_budget"] == 3 * MIB and network["early_bytes_limit"] == 2 * MIB, network
        assert network["spilled_bytes"] == 0 and network["dropped_after_close"] == 0, network
