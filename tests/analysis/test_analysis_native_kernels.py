"""The native (Rust) kernels of the analysis against the plain-Python reference: the same
table for every input (hand-built edge cases, among them slices at whose end every worker
waits, seeded random ones in one batch and in several, hypothesis's simulated workers and
valid timelines cut where every worker waits, and a real traced BFS run analysed both ways
through `analyze`), clear errors for inputs of the wrong shape, and the choice of kernels
through `analyze` and the `timely-py analyze` command."""

import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.kernel_inputs import in_chunks, slice_table, worker_table
from support.timelines import (
    act,
    assert_complete_path,
    cut,
    delivery,
    row,
    simulated_workers,
    sliced_timelines,
    wait,
)
from timely_py import _core
from timely_py.analysis import analyze
from timely_py.analysis.critical_path import slice_critical_path
from timely_py.analysis.schemas import ACTIVITIES, CRITICAL_PATH, SLICED, WORKER_ROWS
from timely_py.analysis.waits import worker_activities

SEEDS = range(400)


def same(native, reference):
    assert native.schema == reference.schema
    assert native.to_pylist() == reference.to_pylist()


def both_waits(rows):
    table = pa.Table.from_pylist(rows, schema=WORKER_ROWS)
    native = _core.worker_activities(table)
    same(native, worker_activities(table))
    return native.to_pylist()


def both_paths(rows):
    table = pa.Table.from_pylist(rows, schema=SLICED)
    native = _core.slice_critical_path(table)
    same(native, slice_critical_path(table))
    return native.to_pylist()


# --- edge cases, each through both kernels --------------------------------------------------


def test_empty_tables_give_empty_tables_of_the_output_schema():
    assert _core.worker_activities(WORKER_ROWS.empty_table()).schema == ACTIVITIES
    assert _core.slice_critical_path(SLICED.empty_table()).schema == CRITICAL_PATH
    assert both_waits([]) == [] and both_paths([]) == []


def test_single_rows():
    assert [r["type"] for r in both_waits([row("operator", 0, 10, operator=3, useful=True)])] == ["operator"]
    assert both_waits([delivery(1, send=0, arrival=1, read=2)]) == []
    assert [(e["type"], e["duration"]) for e in both_paths([act(0, "operator", 5, 9)])] == [("operator", 4)]


def test_a_wait_without_a_message_is_waiting_for_input():
    rows = [row("operator", 0, 10, useful=True), row("park", 20, 100, wake="timeout"), row("operator", 110, 130, useful=True)]
    assert [r["type"] for r in both_waits(rows)] == ["operator", "waiting_for_input", "operator"]


def test_a_message_sent_after_the_wait_it_ended():
    rows = [act(0, "operator", 0, 100), wait(1, 0, 40, source=0, send=45), act(1, "operator", 40, 120)]
    assert [(e["type"], e["start"], e["end"]) for e in both_paths(rows)] == [
        ("operator", 40, 120), ("data_message", 40, 40), ("operator", 0, 40),
    ]  # fmt: skip


def test_a_sender_without_activities_in_the_slice_is_one_gap():
    rows = [wait(1, 0, 40, source=5, send=10), act(1, "operator", 40, 100)]
    path = both_paths(rows)
    assert [(e["type"], e["worker"], e["start"], e["end"]) for e in path] == [
        ("operator", 1, 40, 100), ("data_message", 1, 10, 40), ("unknown", 5, 0, 10),
    ]  # fmt: skip
    assert path[0]["complete"]


def edges_of(rows, end):
    """The path of ``rows`` in a slice ending at ``end``, the same by both kernels, and whether complete."""
    path = both_paths(cut(rows, end))
    assert len({e["complete"] for e in path}) == 1
    return [(e["type"], e["worker"], e["source_worker"], e["start"], e["end"]) for e in path], path[0]["complete"]


def test_every_worker_waiting_at_the_end_with_a_message_in_flight_crosses_it():
    rows = [
        act(0, "operator", 0, 50), wait(0, 50, 100, source=1, send=70),
        act(1, "operator", 0, 70), wait(1, 70, 100, source=0, send=130),
    ]  # fmt: skip
    assert edges_of(rows, 100) == ([("data_message", 0, 1, 70, 100), ("operator", 1, None, 0, 70)], True)


def test_a_wait_at_the_end_for_a_message_sent_later_crosses_at_the_end_to_the_sleeping_sender():
    rows = [act(0, "operator", 0, 20), wait(0, 30, 100, source=1, send=130), act(1, "operator", 0, 10)]
    assert edges_of(rows, 100) == (
        [("data_message", 0, 1, 100, 100), ("unknown", 1, None, 10, 100), ("operator", 1, None, 0, 10)], True,
    )  # fmt: skip


def test_nothing_in_flight_at_the_end_is_all_waiting_since_the_last_work():
    rows = [
        act(0, "operator", 0, 20), act(0, "waiting", 20, 100), act(1, "operator", 0, 35), act(1, "waiting", 35, 100),
    ]  # fmt: skip
    assert edges_of(rows, 100) == ([("all_waiting", 0, 1, 35, 100), ("operator", 1, None, 0, 35)], True)
    alone = [act(0, "waiting", 0, 40), act(0, "operator", 40, 60)]  # nobody worked before: down to the start
    assert edges_of(alone, 100) == ([("operator", 0, None, 40, 60), ("all_waiting", 0, None, 0, 40)], True)


def test_three_workers_waiting_at_the_end_prefer_the_message_in_flight_and_break_a_circle():
    rows = [
        act(0, "operator", 0, 40), wait(0, 40, 100, source=1, send=110),
        act(1, "operator", 0, 50), wait(1, 50, 100, source=2, send=90),
        act(2, "operator", 0, 90), wait(2, 90, 100, source=0, send=150),
    ]  # fmt: skip
    assert edges_of(rows, 100) == ([("data_message", 1, 2, 90, 100), ("operator", 2, None, 0, 90)], True)
    rows[3] = wait(1, 50, 100, source=2, send=120)  # every message sent after the end: once round, then all_waiting
    assert edges_of(rows, 100) == (
        [
            ("data_message", 0, 1, 100, 100), ("data_message", 1, 2, 100, 100), ("data_message", 2, 0, 100, 100),
            ("all_waiting", 0, 2, 90, 100), ("operator", 2, None, 0, 90),
        ],
        True,
    )  # fmt: skip


def test_nested_user_activities_over_operators_and_waits():
    rows = [
        row("user", 0, 200, name="outer", depth=0), row("user", 20, 80, name="inner", depth=1),
        row("operator", 10, 30, operator=1, useful=True), row("operator", 150, 190, operator=2, useful=True),
        row("park", 100, 140, wake="data"), delivery(4, send=90, arrival=120, read=155),
    ]  # fmt: skip
    assert [(r["type"], r["name"], r["start"], r["end"]) for r in both_waits(rows)] == [
        ("user", "outer", 0, 20), ("user", "inner", 20, 30), ("waiting", None, 30, 120),
        ("parked", None, 120, 140), ("user", "outer", 140, 200),
    ]  # fmt: skip  (the innermost activity wins over the operator, the wait over both)


def test_a_wake_by_progress_ends_at_the_work_that_read_the_progress():
    rows = [
        row("operator", 0, 10, useful=True), row("park", 20, 100, wake="progress"),
        delivery(9, send=50, arrival=115, read=115, known=True, kind="progress_message"),
        row("operator", 112, 130, useful=True),
    ]  # fmt: skip
    waits = [(r["type"], r["end"], r["ended_by_type"]) for r in both_waits(rows) if r["type"] != "operator"]
    assert waits == [("waiting", 112, "progress_message")]


# --- the background under recorded activities ----------------------------------------------


def background_worker():
    """A worker that starts at 100 in a trace from 0 to 1000, steps twice (the root scope 90
    around a nested scope 91 around Map), feeds inputs 5 and 6 between steps, ends at 900."""
    return [
        row("trace", 0, 1000), row("lifetime", 100, 900),
        row("step", 200, 300, operator=90, useful=True), row("scope", 210, 290, operator=91, depth=1),
        row("operator", 220, 280, operator=1, useful=True),
        row("step", 500, 600, operator=90, useful=True), row("operator", 510, 590, operator=1, useful=True),
        *(row("input", t, operator=op) for t, op in ((400, 6), (450, 6), (480, 6), (500, 5), (520, 5), (700, 5))),
    ]  # fmt: skip


def test_the_background_covers_every_moment_the_recorded_activities_leave():
    found = [(r["type"], r["start"], r["end"], r["operator"]) for r in both_waits(background_worker())]
    assert found == [
        ("not_started", 0, 100, None), ("program", 100, 200, None), ("scope", 200, 210, 90), ("scope", 210, 220, 91),
        ("operator", 220, 280, 1), ("scope", 280, 290, 91), ("scope", 290, 300, 90), ("program", 300, 500, 6),
        ("scope", 500, 510, 90), ("operator", 510, 590, 1), ("scope", 590, 600, 90), ("program", 600, 900, 5),
        ("finished", 900, 1000, None),
    ]  # fmt: skip  (the stretch 300-500 fed input 6 three times and 5 once, at its end)
    steps = [r for r in background_worker() if r["row_type"] != "step"]
    assert "program" not in {r["type"] for r in both_waits(steps)}  # no recorded step: no program time


def test_a_park_between_steps_is_a_wait_over_the_program_and_user_activities_win_over_it():
    rows = background_worker() + [row("park", 350, 380, wake="timeout"), row("user", 120, 150, name="load", depth=0)]
    found = [(r["type"], r["start"], r["end"]) for r in both_waits(rows)]
    assert ("waiting_for_input", 280, 510) in found and ("user", 120, 150) in found
    assert sum(end - start for _, start, end in found) == 1000


def test_the_walk_starts_on_a_running_worker_and_follows_a_late_start():
    rows = [
        act(0, "operator", 0, 600), act(0, "finished", 600, 1000),
        act(1, "not_started", 0, 300), act(1, "operator", 300, 1000),
    ]  # fmt: skip
    assert [(e["type"], e["worker"], e["start"], e["end"]) for e in both_paths(rows)] == [
        ("operator", 1, 300, 1000), ("not_started", 1, 0, 300),
    ]  # fmt: skip
    nobody_runs = [act(0, "operator", 0, 900), act(1, "operator", 0, 500), act(1, "finished", 500, 1000)]
    assert [(e["type"], e["worker"], e["start"]) for e in both_paths(nobody_runs)] == [
        ("unknown", 0, 900), ("operator", 0, 0),
    ]  # fmt: skip  (the worker that worked latest, not the one that had finished)


# --- random inputs ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_wait_states_equal_the_reference_on_random_workers(seed):
    rng = random.Random(seed)
    table = worker_table(rng)
    reference = worker_activities(table)
    same(_core.worker_activities(table), reference)
    same(_core.worker_activities(in_chunks(table, rng)), reference)


@pytest.mark.parametrize("seed", SEEDS)
def test_critical_paths_equal_the_reference_on_random_slices(seed):
    rng = random.Random(seed)
    table = slice_table(rng)
    reference = slice_critical_path(table)
    same(_core.slice_critical_path(table), reference)
    same(_core.slice_critical_path(in_chunks(table, rng)), reference)
    rows = table.to_pylist()  # any input, valid or not, gets a whole path
    start = max(rows[0]["slice_start"], min(r["start"] for r in rows)) if rows else 0
    end = min(rows[0]["slice_end"], max(r["end"] for r in rows)) if rows else 0
    if end > start:
        assert_complete_path(reference.to_pylist(), start, end, valid=False)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([None, "in flight", "sent later"]).flatmap(sliced_timelines))
def test_critical_paths_equal_the_reference_on_timelines_cut_where_every_worker_waits(rows):
    table = pa.Table.from_pylist(rows, schema=SLICED)
    same(_core.slice_critical_path(table), slice_critical_path(table))


@settings(max_examples=200, deadline=None)
@given(simulated_workers(), st.data())
def test_both_kernels_agree_on_simulated_workers_end_to_end(rows, data):
    native, reference = [], []
    for w in sorted({r["worker"] for r in rows}):
        table = pa.Table.from_pylist([r for r in rows if r["worker"] == w], schema=WORKER_ROWS)
        native.append(_core.worker_activities(table))
        reference.append(worker_activities(table))
    same(pa.concat_tables(native), pa.concat_tables(reference))
    activities = pa.concat_tables(native)
    start, end = pa.compute.min(activities["start"]).as_py(), pa.compute.max(activities["end"]).as_py()
    at = data.draw(st.integers(start + 1, end + 1), label="slice end")
    projected = cut([dict(a, slice=0, slice_start=start) for a in activities.to_pylist()], at)
    sliced = pa.Table.from_pylist(projected, schema=SLICED)
    same(_core.slice_critical_path(sliced), slice_critical_path(sliced))


# --- inputs of the wrong shape ----------------------------------------------------------------


def test_a_column_of_the_wrong_type_is_a_type_error_naming_it():
    table = pa.Table.from_pylist([row("operator", 0, 10)], schema=WORKER_ROWS)
    bad = table.set_column(2, "start", table["start"].cast(pa.int32()))
    with pytest.raises(TypeError, match="worker_activities: column `start` must be int64, not Int32"):
        _core.worker_activities(bad)
    sliced = pa.Table.from_pylist([act(0, "operator", 0, 10)], schema=SLICED)
    bad = sliced.set_column(2, "type", pa.array([1], pa.int64()))
    with pytest.raises(TypeError, match="slice_critical_path: column `type` must be string"):
        _core.slice_critical_path(bad)


def test_a_missing_column_or_a_null_the_kernel_needs_is_a_value_error():
    table = pa.Table.from_pylist([row("operator", 0, 10)], schema=WORKER_ROWS)
    with pytest.raises(ValueError, match="no column `wake`"):
        _core.worker_activities(table.drop_columns(["wake"]))
    with pytest.raises(ValueError, match="no column `slice_end`"):
        _core.slice_critical_path(SLICED.empty_table().drop_columns(["slice_end"]))
    nulls = pa.Table.from_pylist([row("operator", 0, 10), dict(row("park", 5, 8), start=None)], schema=WORKER_ROWS)
    with pytest.raises(ValueError, match="column `start` is null in row 1"):
        _core.worker_activities(nulls)


def test_overlapping_activities_of_one_worker_are_a_value_error():
    rows = [act(0, "operator", 0, 50), act(0, "user", 40, 60)]
    with pytest.raises(ValueError, match="activities of worker 0 overlap at 40"):
        _core.slice_critical_path(pa.Table.from_pylist(rows, schema=SLICED))


def test_anything_but_an_arrow_stream_is_a_type_error():
    with pytest.raises(TypeError, match="expected an Arrow table .* got list"):
        _core.worker_activities([{"row_type": "operator"}])

    class Liar:
        def __arrow_c_stream__(self, requested_schema=None):
            return "not a capsule"

    with pytest.raises(TypeError, match="returned no capsule"):
        _core.slice_critical_path(Liar())


# --- Arrow without copies ------------------------------------------------------------------------


def test_other_arrow_streams_and_large_strings_are_read_in_place():
    table = worker_table(random.Random(7), size=200)
    reference = worker_activities(table)
    same(_core.worker_activities(pa.RecordBatchReader.from_batches(table.schema, table.to_batches())), reference)
    large = table.cast(pa.schema([(f.name, pa.large_string() if f.type == pa.string() else f.type) for f in table.schema]))
    same(_core.worker_activities(large), reference)


def test_results_live_in_rust_memory_not_in_pyarrows_pool():
    table = worker_table(random.Random(11), size=5000)
    before = pa.total_allocated_bytes()
    native = _core.worker_activities(table)
    assert native.num_rows > 0 and pa.total_allocated_bytes() == before
    reference = worker_activities(table)
    assert pa.total_allocated_bytes() > before  # the reference builds its table in pyarrow's pool
    same(native, reference)


# --- the choice through analyze and the command line --------------------------------------------


def read(directory, order):
    return pq.read_table(directory).sort_by([(column, "ascending") for column in order]).to_pylist()


def test_analyze_gives_the_same_tables_with_either_kernels(spark, bfs_trace, tmp_path):
    results = {
        kernels: analyze(bfs_trace, out=tmp_path / kernels, slice="5ms", spark=spark, views=False, kernels=kernels)
        for kernels in ("rust", "python")
    }
    rust, python = results["rust"], results["python"]
    assert read(rust.tables["activities"], ["activity_id"]) == read(python.tables["activities"], ["activity_id"])
    order = ["slice", "step"]
    assert read(rust.tables["critical_path"], order) == read(python.tables["critical_path"], order)
    assert rust.top == python.top and rust.complete_slices == python.complete_slices == rust.slices > 1


def test_unknown_kernels_are_a_value_error_and_a_usage_error_at_the_command_line(tmp_path):
    with pytest.raises(ValueError, match="kernels must be one of rust, python, not 'fortran'"):
        analyze(tmp_path, out=tmp_path / "out", kernels="fortran")
    script = Path(sys.executable).parent / "timely-py"
    done = subprocess.run(
        [str(script), "analyze", str(tmp_path), "--out", str(tmp_path / "out"), "--kernels", "fortran"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "invalid choice: 'fortran'" in done.stderr
