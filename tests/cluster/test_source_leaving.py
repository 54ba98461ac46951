"""A process whose generic source never stops still leaves the cluster cleanly (issue 24, part
2: "the capabilities its operators hold are either finished or handed to a worker that stays;
one that does not stop still leaves cleanly"), through the public Python API and the real
launcher (`support.source_leaving`): every worker's `scope.source` gives numbered records
every epoch into an `exchange` and a keyed `count_by_key`; those of the leaving process never
stop, never look at `worker.leaving` and catch nothing. The process leaves by hand
(`worker.leave()`) or through the launcher (`launch.remove_process`), at an epoch drawn from
the seed, on 2 and 3 processes of 1 or 2 workers; in some cases a process joins first (asked by
worker 0 through the launcher), its workers feed too, and it may be the one that leaves.

What must hold: the leaver exits 0 and the others complete; the leave released the leaver's
source capabilities, so its logic's next use of one raised `LeavingError` (whichever use:
`time`, `downgrade`, `give`, `delayed`), which ended its runs quietly; every record any source
emitted is delivered exactly once by the `exchange`, and `count_by_key` gives one count per
(epoch, key), equal to the sequential count of what the sources report they emitted. And a
source that raises anything else on a leaving worker still fails the run with its traceback."""

import pytest
from support.rescaling import keyed_errors
from support.source_leaving import FAILURE, exchange_errors, launch_run, reference_counts

pytestmark = pytest.mark.cluster

#: (seed, processes, workers per process, how the process leaves, whether a process joins
#: first); the seed draws the leaver (the joined process too), the epoch of the leave and how
#: long the others' sources run, and picks the capability use (seed % 4: time, downgrade,
#: give, delayed).
CASES = [(1, 2, 1, "leave", False), (2, 2, 1, "remove", False), (3, 3, 1, "leave", False),
         (4, 3, 1, "remove", False), (5, 2, 2, "remove", False), (6, 3, 2, "leave", False),
         (8, 2, 1, "leave", False), (11, 3, 1, "remove", False),
         (12, 2, 1, "leave", True), (13, 2, 1, "remove", True), (19, 2, 2, "leave", True),
         (21, 3, 1, "remove", True), (22, 2, 2, "remove", True), (25, 3, 1, "remove", True)]


def case_id(case):
    seed, processes, workers, how, join = case
    return f"seed{seed}-n{processes}-w{workers}-{how}" + ("-join" if join else "")


@pytest.fixture(scope="module", params=CASES, ids=case_id)
def run(request, tmp_path_factory):
    """One launch per case, shared by the tests of this module; it must succeed."""
    seed, processes, workers, how, join = request.param
    run = launch_run(tmp_path_factory.mktemp(f"source-seed{seed}"), seed, processes, workers, how, join)
    assert run.status == 0, f"the launch failed ({run.status}):\n{run.out[-3000:]}\n{run.err[-6000:]}"
    expected = list(range(run.plan.final_processes * workers))
    assert sorted(run.workers) == expected, f"missing outputs: {sorted(run.workers)}"
    return run


@pytest.mark.timeout(120)
def test_a_leaver_whose_source_never_stops_leaves_and_the_others_complete(run):
    plan = run.plan
    if plan.how == "remove":
        assert f"process {plan.leaver} left the cluster" in run.err, run.err[-3000:]
    for w in plan.leavers:
        data = run.workers[w]
        assert data["leaving"], f"worker {w} never saw its leave"
        assert data["stopped"] is not None, f"worker {w}: its source's logic never used a released capability"
        kind, message = data["stopped"]
        assert kind == "LeavingError" and "leaving the cluster" in message and "'Numbers'" in message, data["stopped"]
    # The leave was asked once the leaver's source had emitted `leave_at` epochs (a joined
    # leaver's second worker may have been released before its source ever ran: epoch None).
    assert max(run.workers[w]["epoch"] or 0 for w in plan.leavers) > plan.leave_at
    stayers = [w for w in run.workers if w not in plan.leavers]
    for w in stayers:
        data = run.workers[w]
        assert not data["leaving"] and data["stopped"] is None, data["stopped"]
        assert data["stop_at"] is not None and data["epoch"] == data["stop_at"], (
            f"worker {w}'s source stopped at epoch {data['epoch']}, not {data['stop_at']}")
        # (A process that finished may have said goodbye already: members shrink further.)
        assert not set(data["members"]) & set(plan.leavers), f"worker {w} still counts a leaver"
    joined = [w for w, data in run.workers.items() if data["joined"]]
    assert joined == list(range(plan.processes * plan.workers, plan.final_processes * plan.workers))


@pytest.mark.timeout(120)
def test_every_emitted_record_is_delivered_once(run):
    assert any(run.workers[w]["emitted"] for w in run.plan.leavers), "the leaver's sources emitted nothing"
    errors = exchange_errors(run)
    assert errors is None, errors


@pytest.mark.timeout(120)
def test_count_by_key_is_exact_over_the_emitted_records(run):
    errors = keyed_errors(run, "counts", reference_counts(run))
    assert not errors, "\n".join(errors)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", [7, 9])
def test_another_exception_in_a_leaving_source_fails_the_run(tmp_path, seed):
    """The leaver's source turns the `LeavingError` of its released capability into a
    `RuntimeError`: that is the run's error, with its traceback and the operator's name."""
    run = launch_run(tmp_path, seed, 2, 1, "fail")
    assert run.status != 0, run.err[-3000:]
    leaver = run.plan.leaver
    assert f"[{leaver}] RuntimeError: {FAILURE}" in run.err, run.err[-3000:]
    assert f"[{leaver}] Traceback (most recent call last):" in run.err
    assert f"[{leaver}] raised in operator 'Numbers' on worker {leaver}" in run.err
    assert f"process {leaver} failed" in run.err
