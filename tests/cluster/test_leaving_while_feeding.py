"""A leaving process whose program ignores `worker.leaving` and feeds on still leaves cleanly
(issue 24, part 2), through the public Python API and the real launcher: the script of
`test_keyed_leaving.py` (`support.rescaling.launch_run`), where worker 0 asks the launcher to
make a process leave (`launch.remove_process`) and that process's program goes on sending a
batch every epoch, never closing its input. With "ignore" it catches the `LeavingError` of
each refused batch and feeds on until its dataflows are gone; with "raise" the first refusal
ends `main`.

What must hold: the process left while the others ran on and exited 0; its program fed after
the leave and its input refused that; the stateless `exchange` delivers every accepted record
exactly once (and no refused one); and the keyed operators give one result per (epoch, key),
equal to a sequential count or sum over the accepted records. And a leaver that feeds on
forever, no longer stepping once it went, still stops on Ctrl-C. And a leaver that never
builds a keyed dataflow the others built before its leave, and steps on instead of returning,
still leaves, and the others' results there are exact. And a leaver whose program steps on
after its leave is complete is named on stderr."""

import json
import signal
import time
from collections import Counter

import pytest
from support.cluster import PROMPT, Cluster
from support.paths import CLUSTER_SCRIPTS
from support.rescaling import all_keyed_errors, exchange_errors, launch_run

pytestmark = pytest.mark.cluster

#: (seed, workers per process, how): 2 processes and 2 joins, the last joiner leaves (3);
#: process 0 leaves after a join, 2 workers each (4); no join, process 2 of 3 leaves, 2
#: workers each (21); with "raise": 3 processes and 2 joins, process 2 leaves (5); 2
#: processes and 2 joins, the first joiner leaves (34).
CASES = [(3, 1, "ignore"), (4, 2, "ignore"), (21, 2, "ignore"), (5, 1, "raise"), (34, 1, "raise")]


@pytest.fixture(scope="module", params=CASES, ids=lambda case: f"seed{case[0]}-w{case[1]}-{case[2]}")
def run(request, tmp_path_factory):
    """One launch per case, shared by the tests of this module."""
    seed, workers, how = request.param
    return launch_run(tmp_path_factory.mktemp(f"feed-seed{seed}-w{workers}-{how}"), seed, workers, leave=how)


@pytest.mark.timeout(120)
def test_a_leaver_that_feeds_on_still_leaves_cleanly(run):
    assert f"process {run.plan.leaving_process} left the cluster" in run.err, run.err[-3000:]
    for w in run.leavers:
        data = run.workers[w]
        assert data["left"], f"worker {w} never saw worker.leaving"
        assert data["refusals"] >= 1, f"worker {w}: its program never fed after the leave"
        assert all(epoch >= min(e for e, *_ in data["refused"]) for epoch, *_ in data["refused"])
        if run.how == "ignore":
            assert data["gone_at"] is not None, f"worker {w} stopped feeding before its leave was complete"
    stayers = [w for w in run.workers if w not in run.leavers]
    assert not any(run.workers[w]["refusals"] for w in stayers), "a worker that stays refused records"
    for w in stayers:
        assert not set(run.workers[w]["members"]) & set(run.leavers), f"worker {w} still counts a leaver"


@pytest.mark.timeout(120)
def test_plain_exchange_delivers_every_accepted_record_once(run):
    errors = exchange_errors(run)
    assert errors is None, errors


@pytest.mark.timeout(120)
def test_keyed_operators_are_exact_over_the_accepted_records(run):
    errors = all_keyed_errors(run)
    assert not errors, "\n".join(errors)


@pytest.mark.timeout(60)
def test_leaving_error_is_a_timely_error_and_handles_start_unreleased():
    import timely_py as timely

    assert issubclass(timely.LeavingError, timely.TimelyError)

    def main(worker):
        handle = timely.InputHandle()
        with worker.dataflow() as scope:
            scope.input_from(handle)
        handle.send(1)
        released = handle.released
        handle.close()
        return released, handle.released, repr(handle)

    assert timely.execute(main) == [(False, False, "InputHandle(time=0, closed=True, released=False)")]


@pytest.mark.timeout(60)
def test_ctrl_c_stops_a_leaver_that_feeds_on_after_it_went(tmp_path):
    """Its loop no longer steps, where a stop is noticed; its refused sends notice it instead.
    It had not said goodbye (its program never returned), so the other process stops as for
    any lost peer."""
    with Cluster(tmp_path, processes=2) as cluster:
        cluster.start_all([CLUSTER_SCRIPTS / "feed_past_leave.py"])
        cluster.wait_for_output(1, r"^worker 1: gone$")
        cluster.children[1].send_signal(signal.SIGINT)
        stopped = time.monotonic()
        status = cluster.wait(1)
        assert time.monotonic() - stopped < PROMPT, cluster.report(1)
        assert status != 0 and "KeyboardInterrupt" in cluster.stderr(1), cluster.report(1)
        assert cluster.wait(0) != 0
        assert "ClusterError" in cluster.stderr(0) and "process 1" in cluster.stderr(0), cluster.report(0)


@pytest.mark.timeout(120)
def test_a_leaver_stepping_on_without_building_a_keyed_dataflow_still_leaves(tmp_path):
    """Processes 0 and 2 build a `count_by_key` and a Megaphone state machine before process
    1's leave; process 1 never builds them, asks for its leave and steps on, ignoring
    `worker.leaving`, until its worker has nothing more to do; a dataflow it builds then is
refused with `LeavingError`. Every process exits 0, the
    counts per (epoch, key) equal a sequential count, and each key's running count reaches its
    total once (before, the stayers waited for the leaver's `Left`, which waited for its drain,
    which waited for them: the run never ended)."""
    with Cluster(tmp_path, processes=3) as cluster:
        cluster.start_all([CLUSTER_SCRIPTS / "unbuilt_while_stepping.py", tmp_path])
        assert cluster.wait_all(timeout=90) == [0, 0, 0], cluster.report(0) + cluster.report(1) + cluster.report(2)
        results = [json.loads(cluster.stdout(index)) for index in (0, 2)]
        leaver = json.loads(cluster.stdout(1))
    assert leaver["leaving"] and leaver["steps"] > 0, leaver
    assert "cannot build a dataflow any more" in (leaver["refused"] or ""), leaver
    fed = [tuple(pair) for result in results for pair in result["fed"]]
    counted = sorted(tuple(triple) for result in results for triple in result["counted"])
    expected = Counter((epoch, x % 5) for epoch, x in fed)
    assert counted == sorted((epoch, key, n) for (epoch, key), n in expected.items())
    totals = Counter(x % 5 for _, x in fed)
    running = sorted(tuple(pair) for result in results for pair in result["running"])
    assert running == sorted((key, n) for key, total in totals.items() for n in range(1, total + 1))


@pytest.mark.timeout(120)
def test_a_leaver_whose_program_does_not_return_after_its_leave_is_named(tmp_path):
    """Process 1 leaves and its program steps on for 4 s after the leave is complete instead of
    returning: process 0 sees it gone and, 2 s after the leave, its worker says once on stderr
    that the process waits for its program to return (a loop waiting for its own dataflows
    would wait forever); once the program returns, the process exits 0."""
    with Cluster(tmp_path, processes=2) as cluster:
        cluster.start_all([CLUSTER_SCRIPTS / "wait_after_leave.py", "4"])
        assert cluster.wait_all(timeout=90) == [0, 0], cluster.report(0) + cluster.report(1)
        stayer, leaver = (json.loads(cluster.stdout(index)) for index in (0, 1))
        said = cluster.stderr(1)
    assert stayer == {"members": [0]}
    assert leaver["after_done"] >= 4, leaver
    assert said.count("its program has not returned") == 1, said
    assert "`worker.leaving`" in said, said
