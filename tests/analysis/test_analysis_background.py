"""The background under a worker's recorded activities through `analyze`, on the hand-built
trace `late_and_early` (tests/support/analysis_traces.py) in which each type occurs: `scope`
(named by the scope), `program` (named by the Input the program fed, else unnamed),
`not_started` (a process that started late) and `finished` (one that ended early); both
kernels give the same tables; the critical path runs through the late start but not through
the early end; the profiles, imbalance and slack treat the new types as documented."""

import pyarrow.parquet as pq
import pytest
from support.analysis_traces import BACKGROUND_ACTIVITIES, late_and_early
from timely_py.analysis import analyze

TABLES = {
    "activities": ["activity_id"],
    "critical_path": ["slice", "step"],
    "communications": ["comm_id"],
    "slices": ["slice"],
    "profile": ["contributor", "type"],
    "profile_type": ["slice", "type"],
    "profile_operator": ["slice", "contributor", "type"],
    "profile_worker": ["slice", "worker"],
    "profile_contributor_worker": ["contributor", "type", "worker"],
    "imbalance": ["slice", "contributor"],
    "slack": ["contributor"],
}


def rows(result, name):
    order = TABLES[name]
    return sorted(pq.read_table(result.tables[name]).to_pylist(), key=lambda r: tuple(r[c] for c in order))


@pytest.fixture(scope="module")
def analysed(spark, tmp_path_factory):
    """The trace analysed in one slice (4 us long) and in slices of 2 us, with both kernels."""
    base = tmp_path_factory.mktemp("background")
    trace = late_and_early(base / "trace")
    return {
        (kernels, length): analyze(trace, out=base / f"{kernels}-{length}", slice=length, spark=spark, views=False,
                                   kernels=kernels)  # fmt: skip
        for kernels in ("rust", "python")
        for length in ("10us", "2us")
    }


def test_every_moment_of_every_worker_is_a_named_activity(analysed):
    result = analysed["rust", "10us"]
    found = [(r["type"], r["worker"], r["name"], r["start"], r["end"]) for r in rows(result, "activities")]
    assert found == BACKGROUND_ACTIVITIES
    assert {r[0] for r in found} >= {"scope", "program", "not_started", "finished"}


def test_both_kernels_give_the_same_tables(analysed):
    for length in ("10us", "2us"):
        rust, python = analysed["rust", length], analysed["python", length]
        for name in TABLES:
            assert rows(rust, name) == rows(python, name), name
        assert rust.top == python.top


def test_the_critical_path_takes_the_late_start_but_not_the_early_end(analysed):
    result = analysed["rust", "10us"]
    path = [(r["type"], r["worker"], r["name"], r["start"], r["end"]) for r in rows(result, "critical_path")]
    on_worker_1 = [a for a in BACKGROUND_ACTIVITIES if a[1] == 1][::-1]
    assert path == on_worker_1  # worker 0 has finished at the end: the walk starts on worker 1
    assert path[-1] == ("not_started", 1, None, 1000, 2500)
    assert all(r["complete"] for r in rows(result, "critical_path"))


def test_profiles_name_the_input_the_program_fed_and_the_scopes(analysed):
    profile = {(r["contributor"], r["type"]): r["critical_ns"] for r in rows(analysed["rust", "10us"], "profile")}
    assert profile[("Input", "program")] == 2200 and profile[("program", "program")] == 100
    assert profile[("Dataflow", "scope")] == 30 and profile[("Loop", "scope")] == 30
    assert profile[("not_started", "not_started")] == 1500 and sum(profile.values()) == 4000
    types = {r["type"]: r["share"] for r in rows(analysed["rust", "10us"], "profile_type")}
    assert types["program"] == pytest.approx(2300 / 4000) and "finished" not in types


def test_time_a_worker_was_not_running_is_no_work_for_imbalance_and_has_no_slack(analysed):
    result = analysed["rust", "10us"]
    imbalance = {r["contributor"]: r for r in rows(result, "imbalance")}
    assert imbalance["not_started"]["mean_worker_ns"] == 0  # nobody worked in it
    assert "finished" not in imbalance  # neither on the path nor any worker's work
    assert imbalance["Input"]["mean_worker_ns"] == (1000 + 2200) / 2  # the program's time is the workers'
    slack = {r["contributor"] for r in rows(result, "slack")}
    assert "not_started" not in slack and {"Input", "program", "Dataflow"} <= slack


def test_each_slice_is_whole_and_the_finished_worker_is_taken_only_when_nobody_runs(analysed):
    result = analysed["python", "2us"]
    assert result.slices == 2 and result.complete_slices == 2 and result.critical_ns == 4000
    second = [(r["type"], r["worker"], r["start"], r["end"]) for r in rows(result, "critical_path") if r["slice"] == 1]
    assert second[0][1] == 1 and second[-1] == ("program", 1, 3000, 4900)
