"""Processes that join a running cluster (`docs/rescaling.md`), through the Python API:
`--join W --nn N` on the command line and `worker.bootstrap()`."""

import re

import pyarrow as pa
import timely_py.trace
from support.cluster import Cluster
from support.paths import CLUSTER_SCRIPTS
from timely_py.trace import linking
from timely_py.trace.violations import Findings

SCRIPT = CLUSTER_SCRIPTS / "hello_until_join.py"


def start_halfway(cluster, *args):
    """Starts processes 0 and 1 of `cluster` (whose hostfile lists a third) running the hello
    with `args`, and waits until worker 0 finished round 3, so that a join can come."""
    cluster.processes = 2
    for index in range(2):
        cluster.start(index, [SCRIPT, 3, *args])
    cluster.wait_for_output(0, r"^halfway$")


def seen(output):
    return [(int(w), int(x)) for w, x in re.findall(r"^worker (\d+): seen (\d+)$", output, re.MULTILINE)]


def test_a_third_process_joins_a_running_hello(tmp_path):
    with Cluster(tmp_path, 3) as cluster:
        start_halfway(cluster)
        cluster.start(2, [SCRIPT, 3, "--join", 0, "--nn", 3])
        cluster.assert_succeeded()
        records = sorted((x, w) for i in range(3) for w, x in seen(cluster.stdout(i)))
    xs = [x for x, _ in records]
    assert xs == list(range(len(xs))), "every record is seen exactly once"
    # Worker 0 routes by x mod 2 until it counts the third worker, by x mod 3 from then on.
    switches = [
        s
        for s in range(len(records) + 1)
        if all(w == (x % 2 if x < s else x % 3) for x, w in records)
    ]
    assert switches and switches[0] >= 4, records
    assert any(w == 2 for _, w in records), "the joined worker saw nothing"



def test_a_traced_join_marks_each_phase_on_the_workers_timelines(tmp_path):
    trace = tmp_path / "trace"
    with Cluster(tmp_path, 3) as cluster:
        start_halfway(cluster, "--trace", trace)
        cluster.start(2, [SCRIPT, 3, "--join", 1, "--nn", 3, "--trace", trace])
        cluster.assert_succeeded()
    # Every frame of the bootstrap protocol is matched, and progress batches that reached the
    # joined worker inside the server's state are not expected among its receives.
    assert timely_py.trace.validate(trace) == []
    table = timely_py.trace.read(trace, kinds=["activity_start"]).to_pylist()
    phases = {(row["worker"], row["name"]) for row in table}
    assert {(2, "rescale: connect"), (2, "rescale: state transfer"), (2, "rescale: range requests")} <= phases
    # Worker 1 serves the join; both existing workers back-fill.
    assert {(1, "rescale: state transfer"), (1, "rescale: capability hand-over")} <= phases
    assert {(0, "rescale: back-fill"), (1, "rescale: back-fill")} <= phases


def _progress(rows):
    """A trace table of progress events: (kind, source, target, seq) on channel 5."""
    return pa.table(
        {
            "kind": [kind for kind, _, _, _ in rows],
            "channel": [5] * len(rows),
            "channel_kind": ["progress"] * len(rows),
            "source_worker": [source for _, source, _, _ in rows],
            "target_worker": [target for _, _, target, _ in rows],
            "seq": [seq for _, _, _, seq in rows],
        }
    )


def test_validate_expects_a_joined_worker_to_receive_from_its_first_direct_batch_on():
    # Workers 0 and 1 started the cluster; worker 2 joined after worker 0's batch 1: batches 0
    # and 1 reached it inside the server's state, batch 2 directly.
    sends = [("progress_send", 0, None, seq) for seq in range(4)]
    initial = [("progress_recv", 0, target, seq) for target in (0, 1) for seq in range(4)]
    joined = [("progress_recv", 0, 2, seq) for seq in (2, 3)]
    for rows, expected in [(sends + initial + joined, 0), (sends + initial + joined[:1], 1)]:
        table = _progress(rows)
        findings = Findings(table, 10)
        linking.check_links(table, findings, 1, 3, joined_from=2)
        assert len(findings.result()) == expected, findings.result()


def test_a_join_with_a_wrong_secret_is_refused_and_the_cluster_runs_on(tmp_path):
    with Cluster(tmp_path, 3) as cluster:
        start_halfway(cluster)
        intruder = cluster.start(2, [SCRIPT, 3, "--join", 0, "--nn", 3], TIMELY_CLUSTER_SECRET="not the secret")
        assert intruder.wait(60) != 0
        assert re.search(r"secret|authenticat", cluster.stderr(2), re.IGNORECASE), cluster.report(2)
        # The rightful third process still joins, and the run ends normally; the members only
        # logged the refusal.
        cluster.start(2, [SCRIPT, 3, "--join", 0, "--nn", 3])
        assert cluster.wait_all() == [0, 0, 0], [cluster.report(i) for i in range(3)]
        # The intruder gives up at its first refusal, so a member whose handshake with it was
        # still running may see the connection reset, closed or its write fail (broken pipe)
        # instead of checking the secret.
        refusals = [line for index in range(2) for line in cluster.stderr(index).splitlines()]
        for line in refusals:
            assert "join acceptor refused a connection" in line, line
            assert re.search(r"secret|reset|closed|[Bb]roken pipe", line), line
        assert any("secret" in line for line in refusals), refusals
        assert any(w == 2 for i in range(3) for w, _ in seen(cluster.stdout(i)))


def test_a_joiner_killed_during_its_join_ends_the_cluster_with_a_clear_error(tmp_path):
    with Cluster(tmp_path, 3) as cluster:
        start_halfway(cluster)
        joiner = cluster.start(2, [SCRIPT, 3, "--join", 0, "--nn", 3], TIMELY_TEST_STALL_BOOTSTRAP="1")
        cluster.wait_for_output(2, r"^bootstrapping$")
        joiner.kill()
        for index in range(2):
            assert cluster.wait(index, 30) != 0
            assert re.search(r"process 2", cluster.stderr(index)), cluster.report(index)
