"""Processes that join a running cluster (`docs/rescaling.md`), through the Python API:
`--join W --nn N` on the command line and `worker.bootstrap()`."""

import re

import timely_py.trace
from conftest import ROOT
from test_cluster import Cluster

SCRIPT = ROOT / "tests" / "cluster_scripts" / "hello_until_join.py"


def seen(output):
    return [(int(w), int(x)) for w, x in re.findall(r"^worker (\d+): seen (\d+)$", output, re.MULTILINE)]


def test_a_third_process_joins_a_running_hello(tmp_path):
    with Cluster(tmp_path, 3) as cluster:
        cluster.processes = 2  # the hostfile lists all three; two start the cluster
        for index in range(2):
            cluster.start(index, [SCRIPT, 3])
        cluster.wait_for_output(0, r"^halfway$")
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
        cluster.processes = 2
        for index in range(2):
            cluster.start(index, [SCRIPT, 3, "--trace", trace])
        cluster.wait_for_output(0, r"^halfway$")
        cluster.start(2, [SCRIPT, 3, "--join", 1, "--nn", 3, "--trace", trace])
        cluster.assert_succeeded()
    # Every frame of the bootstrap protocol is matched; progress batches that reached the joined
    # worker inside the server's state are not individual receives (validate does not know
    # joins yet), so only those may be reported.
    violations = timely_py.trace.validate(trace)
    assert all(re.match(r"progress_send .* received by 2 of 3 workers", v.message) for v in violations), violations
    table = timely_py.trace.read(trace, kinds=["activity_start"]).to_pylist()
    phases = {(row["worker"], row["name"]) for row in table}
    assert {(2, "rescale: connect"), (2, "rescale: state transfer"), (2, "rescale: range requests")} <= phases
    # Worker 1 serves the join; both existing workers back-fill.
    assert {(1, "rescale: state transfer"), (1, "rescale: capability hand-over")} <= phases
    assert {(0, "rescale: back-fill"), (1, "rescale: back-fill")} <= phases
