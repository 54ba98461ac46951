"""The built-in keyed operators stay exact while processes join and then one leaves (issue 24,
part 2), through the public Python API and the real launcher: the script of
`test_keyed_rescaling.py` with a leave plan (`support.rescaling.plan(seed, leave=True)`): 2 or
3 processes (1 or 2 workers each), 0 to 2 joins asked by worker 0 (`launch.add_process`), then
worker 0 asks a process drawn from the seed (process 0, another initial one or a joined one) to
leave (`launch.remove_process`), or in one case the process's first worker calls
`worker.leave()` itself, and in two cases one more process joins after the leave
(`launch.add_process`, started with `--gone`). Every worker feeds every epoch until its process
leaves or the run ends; the joined ones too.

What must hold: the process left while the others ran on, exited cleanly, and every worker
wrote its results; one result per (epoch, key) across all workers, equal to a sequential count
or sum of everything every worker fed (the leavers' records included); and the stateless
`exchange` delivers every record fed exactly once."""

import json
from collections import Counter

import pytest
from support.cluster import Cluster
from support.launched import Launched
from support.paths import CLUSTER_SCRIPTS
from support.rescaling import AFTER, RUN_TIMEOUT, all_keyed_errors, exchange_errors, launch_run

pytestmark = pytest.mark.cluster

#: (seed, workers per process, how): 3 processes, 1 join, process 1 leaves right after the join
#: (0); 2 processes, 2 joins, the last joiner leaves right after it joined (3); process 0 (the
#: one asking) leaves after a join, 2 workers each (4); no join, process 1 leaves (13); 3
#: processes, 1 join, process 2 leaves, 2 workers each, its worker 4 calling `leave()` and
#: worker 5 following (28); 2 joins, the first joiner leaves 3 epochs after the last join (9);
#: then, with a join after the leave ("rejoin"): 3 processes and 1 join, process 1 leaves and
#: process 4 joins (0); no join before, process 1 of 3 leaves, 2 workers each (13).
CASES = [(0, 1, "remove"), (3, 1, "remove"), (4, 2, "remove"), (13, 1, "remove"), (28, 2, "leave"), (9, 1, "remove"),
         (0, 1, "rejoin"), (13, 2, "rejoin")]


@pytest.fixture(scope="module", params=CASES, ids=lambda case: f"seed{case[0]}-w{case[1]}-{case[2]}")
def run(request, tmp_path_factory):
    """One launch per case, shared by the tests of this module."""
    seed, workers, how = request.param
    return launch_run(tmp_path_factory.mktemp(f"leave-seed{seed}-w{workers}"), seed, workers, leave=how)


@pytest.mark.timeout(120)
def test_the_process_left_while_the_others_ran_on(run):
    if run.how in ("remove", "rejoin"):
        assert f"process {run.plan.leaving_process} left the cluster" in run.err, run.err[-3000:]
        assert run.workers[0]["removed"] or 0 in run.leavers, "worker 0 never asked for the leave"
    assert all(run.workers[w]["left"] for w in run.leavers), "a leaver's program never saw worker.leaving"
    stayers = [w for w in run.workers if w not in run.leavers]
    assert not any(run.workers[w]["left"] for w in stayers)
    for w in stayers:
        assert not set(run.workers[w]["members"]) & set(run.leavers), f"worker {w} still counts a leaver"
    left_at = max(run.workers[w]["last_epoch"] for w in run.leavers)
    assert max(run.workers[w]["last_epoch"] for w in stayers) >= left_at + AFTER - 1, "the run ended with the leave"
    joined = [w for w in run.workers if w >= run.initial_peers]
    assert len(joined) == (run.plan.joins + run.plan.rejoin) * run.workers_per_process
    # (A joiner that leaves right after it joined may leave before it fed.)
    assert all(run.workers[w]["fed"] for w in joined if w not in run.leavers), "a joined worker fed nothing"


@pytest.mark.timeout(120)
def test_plain_exchange_delivers_every_record_once_across_a_leave(run):
    errors = exchange_errors(run)
    assert errors is None, errors


@pytest.mark.timeout(120)
def test_keyed_operators_give_one_exact_result_per_epoch_and_key_across_a_leave(run):
    errors = all_keyed_errors(run)
    assert not errors, "\n".join(errors)


@pytest.mark.timeout(60)
def test_leave_outside_a_cluster_is_refused():
    import timely_py as timely

    def main(worker):
        assert worker.members == [0, 1] and not worker.leaving
        with pytest.raises(ValueError, match="cluster of several processes"):
            worker.leave()
        return worker.leaving

    assert timely.execute(main, workers=2) == [False, False]


@pytest.mark.timeout(120)
def test_a_megaphone_process_leaves_and_the_last_one_is_refused(tmp_path):
    """Process 1 leaves while a Megaphone word count runs: its bins move to process 0 and
    every word's final count is what both processes fed; process 0, then alone, is refused."""
    with Launched(tmp_path, "-n", 2, "-w", 1, CLUSTER_SCRIPTS / "megaphone_leaving.py") as launched:
        status = launched.status(RUN_TIMEOUT)
        out, err = launched.out(), launched.err()
    assert status == 0, err[-3000:]
    lines = [json.loads(line.split("] ", 1)[1]) for line in out.splitlines() if "] {" in line]
    by_worker = {line["worker"]: line for line in lines}
    assert sorted(by_worker) == [0, 1]
    assert by_worker[1]["left"] and not by_worker[0]["left"]
    assert by_worker[0]["members"] == [0]
    assert "no other process is present" in (by_worker[0]["said"] or ""), by_worker[0]["said"]
    fed = Counter(word for line in lines for _, word in line["fed"])
    final = {}
    for epoch, word, count in sorted((c for line in lines for c in line["counts"]), key=lambda c: (c[0], c[2])):
        final[word] = max(final.get(word, 0), count)
    assert final == dict(fed), "the final count of every word is what was fed"
    # Every count from 1 to the final one came out exactly once, on one worker or the other.
    emitted = Counter((word, count) for line in lines for _, word, count in line["counts"])
    assert all(emitted[(word, n)] == 1 for word, total in fed.items() for n in range(1, total + 1))
    assert sum(emitted.values()) == sum(fed.values())




@pytest.mark.timeout(120)
def test_a_controller_evacuates_a_process_before_it_leaves(tmp_path):
    """Worker 0 moves process 2's bins off it in batches (`Controller.evacuate`), one step per
    epoch, then asks it to leave: from the last step on, process 2 counts nothing, the leave
    finds no bin to move, and every word's counts are exact."""
    with Launched(tmp_path, "-n", 3, "-w", 1, CLUSTER_SCRIPTS / "megaphone_evacuation.py") as launched:
        status = launched.status(RUN_TIMEOUT)
        out, err = launched.out(), launched.err()
    assert status == 0, err[-3000:]
    assert "process 2 left the cluster" in err, err[-3000:]
    lines = [json.loads(line.split("] ", 1)[1]) for line in out.splitlines() if "] {" in line]
    by_worker = {line["worker"]: line for line in lines}
    assert sorted(by_worker) == [0, 1, 2]
    assert by_worker[2]["left"] and not by_worker[0]["left"] and not by_worker[1]["left"]
    driver = by_worker[0]
    assert driver["members"] == [0, 1]
    # Round robin gives worker 2 a third of the 16 bins; batches of one bin per sender and
    # receiver need as many steps as the busiest receiver takes bins.
    assert driver["planned"] == 5 and 2 not in driver["table"], driver
    assert sum(n for _, n in driver["steps"]) == 5 and len(driver["steps"]) >= 3, driver["steps"]
    evacuated_at = driver["evacuated_at"]
    assert evacuated_at == driver["steps"][-1][0]
    leaver_epochs = [epoch for epoch, _, _ in by_worker[2]["counts"]]
    assert leaver_epochs and min(leaver_epochs) < evacuated_at, "process 2 counted before the evacuation"
    assert max(leaver_epochs) < evacuated_at, "process 2 counted after its last bin moved off it"
    assert max(epoch for epoch, _ in by_worker[2]["fed"]) >= evacuated_at, "process 2 fed until it left"
    fed = Counter(word for line in lines for _, word in line["fed"])
    emitted = Counter((word, count) for line in lines for _, word, count in line["counts"])
    assert all(emitted[(word, n)] == 1 for word, total in fed.items() for n in range(1, total + 1))
    assert sum(emitted.values()) == sum(fed.values())


@pytest.mark.timeout(120)
def test_a_dataflow_built_during_a_leave_completes_exactly(tmp_path):
    """The workers that stay build a dataflow once they see the leave, which the leaver never
    builds: it completes, with one count per key equal to a sequential count, and a Megaphone
    state machine's running counts reach each key's count once."""
    with Cluster(tmp_path, processes=3) as cluster:
        cluster.start_all([CLUSTER_SCRIPTS / "build_during_leave.py", tmp_path])
        assert cluster.wait_all(timeout=90) == [0, 0, 0], cluster.report(0) + cluster.report(2)
        results = [json.loads(cluster.stdout(index)) for index in (0, 2)]
    fed = [x for result in results for x in result["fed"]]
    counted = sorted(tuple(pair) for result in results for pair in result["counted"])
    expected = Counter(x % 5 for x in fed)
    assert counted == sorted(expected.items())
    running = sorted(tuple(pair) for result in results for pair in result["running"])
    assert running == sorted((key, n) for key, total in expected.items() for n in range(1, total + 1))


@pytest.mark.timeout(120)
def test_a_worker_that_returned_still_takes_part_in_its_process_leave(tmp_path):
    """Worker 3 returns before worker 2 asks for their process's leave: the leave completes,
    and both processes exit 0 (before, worker 3 had ended, and the leave waited for it)."""
    with Cluster(tmp_path, processes=2, workers=2) as cluster:
        cluster.start_all([CLUSTER_SCRIPTS / "return_before_leave.py"])
        assert cluster.wait_all(timeout=60) == [0, 0], cluster.report(0) + cluster.report(1)
        lines = sorted(cluster.stdout(0).splitlines())
    assert lines == ["worker 0: members [0, 1]", "worker 1: members [0, 1]"]
