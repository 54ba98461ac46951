"""The analysis's per-partition kernels on hand-built inputs, without Spark: user-activity
precedence, the wait-state analysis per worker, the critical path per slice, and properties
of the critical path on random valid activity timelines, whole and cut by a slice's end
(anywhere, and where every running worker waits), and on simulated workers (hypothesis)."""

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from support.timelines import (
    act,
    assert_complete_path,
    cut,
    delivery,
    everyone_waits,
    row,
    simulated_workers,
    sliced_timelines,
    timelines,
    wait,
)
from timely_py.analysis.critical_path import critical_path, slice_critical_path
from timely_py.analysis.precedence import overlay
from timely_py.analysis.schemas import ACTIVITIES, CRITICAL_PATH, SLICED, WORKER_ROWS
from timely_py.analysis.waits import find_waits, worker_activities

# --- precedence ------------------------------------------------------------------------


def spans(segments):
    return [(s, e, i["type"], i.get("name")) for s, e, i in segments]


def test_inner_user_activities_take_precedence_over_outer_ones_and_over_operators():
    items = [
        {"type": "user", "name": "outer", "depth": 0, "start": 0, "end": 100},
        {"type": "user", "name": "inner", "depth": 1, "start": 20, "end": 40},
        {"type": "operator", "name": "Map", "start": 10, "end": 60},
        {"type": "operator", "name": "Sink", "start": 150, "end": 160},
    ]
    assert spans(overlay(items)) == [
        (0, 20, "user", "outer"), (20, 40, "user", "inner"), (40, 100, "user", "outer"), (150, 160, "operator", "Sink"),
    ]  # fmt: skip


def test_waiting_takes_precedence_over_user_activities():
    items = [
        {"type": "user", "name": "load", "depth": 0, "start": 0, "end": 100},
        {"type": "waiting", "start": 30, "end": 50},
    ]
    assert spans(overlay(items)) == [(0, 30, "user", "load"), (30, 50, "waiting", None), (50, 100, "user", "load")]


# --- wait states -------------------------------------------------------------------------


def waits_of(rows):
    return [(w["type"], w["start"], w["end"], w.get("ended_by")) for w in find_waits(rows)]


def test_a_park_ended_by_a_message_is_a_wait_until_the_message_arrived():
    rows = [
        row("operator", 0, 10, operator=1, useful=True),
        row("park", 20, 100, wake="data"),
        delivery(7, send=50, arrival=80, read=120),
        row("operator", 110, 130, operator=2, useful=True),
    ]
    assert waits_of(rows) == [("waiting", 10, 80, 7)]


def test_a_park_no_message_ended_is_waiting_for_input():
    rows = [
        row("operator", 0, 10, useful=True),
        row("park", 20, 100, wake="activation"),
        row("operator", 110, 130, useful=True),
    ]
    assert waits_of(rows) == [("waiting_for_input", 10, 110, None)]


def test_unproductive_steps_without_parking_are_waiting_the_thesis_heuristic():
    rows = [row("operator", 0, 10, useful=True)]
    rows += [row("step", 20 + 10 * i, 25 + 10 * i) for i in range(3)]
    rows += [row("operator", 21 + 10 * i, 24 + 10 * i, useful=False) for i in range(3)]
    rows += [delivery(3, send=40, arrival=52, read=70), row("operator", 60, 80, useful=True)]
    assert waits_of(rows) == [("waiting", 10, 52, 3)]


def test_a_short_stretch_within_a_step_is_not_waiting():
    rows = [row("step", 0, 100), row("operator", 10, 20, useful=True), row("operator", 30, 40, useful=True)]
    assert waits_of(rows) == []


def test_a_message_buffered_when_the_stretch_begins_means_no_wait():
    rows = [
        row("operator", 0, 10, useful=True),
        delivery(4, send=5, arrival=5, read=115),
        row("park", 20, 100, wake="timeout"),
        row("operator", 110, 130, useful=True),
    ]
    assert waits_of(rows) == []


def test_a_wake_by_data_with_unknown_arrival_ends_at_the_work_it_caused():
    rows = [
        row("operator", 0, 10, useful=True),
        row("park", 20, 100, wake="data"),
        delivery(9, send=50, arrival=115, read=115, known=False),
        row("operator", 110, 130, useful=True),
    ]
    assert waits_of(rows) == [("waiting", 10, 110, 9)]


def test_the_last_stretch_is_not_a_wait_and_its_park_stays_parked():
    rows = [row("operator", 0, 10, useful=True, operator=1), row("park", 20, 100, wake="timeout")]
    table = worker_activities(pa.Table.from_pylist(rows, schema=WORKER_ROWS))
    assert table.schema == ACTIVITIES
    assert [(r["type"], r["start"], r["end"]) for r in table.to_pylist()] == [("operator", 0, 10), ("parked", 20, 100)]
    assert table.column("activity_id").to_pylist() == [1 << 40, (1 << 40) | 1]


# --- critical path -------------------------------------------------------------------------


def edges(path):
    return [(e["type"], e["worker"], e["start"], e["end"]) for e in path]


def test_the_path_crosses_over_the_message_that_ended_a_wait_and_splits_the_sender():
    rows = [
        act(0, "operator", 0, 60, name="Source"), act(0, "operator", 70, 100, name="Tail"),
        wait(1, 0, 40, source=0, send=30), act(1, "operator", 50, 100, name="Sink"),
    ]  # fmt: skip
    path = critical_path(rows, 0)
    assert edges(path) == [
        ("operator", 0, 70, 100),
        ("unknown", 0, 60, 70),
        ("operator", 0, 0, 60),
    ]  # worker 0 is running and not waiting at the end: the lowest such worker starts
    rows[1] = act(0, "operator", 70, 90, name="Tail")
    assert edges(critical_path(rows, 0)) == [
        ("operator", 1, 50, 100), ("unknown", 1, 40, 50), ("data_message", 1, 30, 40), ("operator", 0, 0, 30),
    ]  # fmt: skip
    assert all(e["complete"] for e in critical_path(rows, 0))


def test_a_message_seemingly_sent_after_the_wait_it_ended_crosses_at_the_wait_end():
    rows = [act(0, "operator", 0, 100), wait(1, 0, 40, source=0, send=45), act(1, "operator", 40, 120)]
    path = critical_path(rows, 0)
    assert edges(path) == [("operator", 1, 40, 120), ("data_message", 1, 40, 40), ("operator", 0, 0, 40)]
    assert path[0]["complete"]


def test_messages_that_ended_no_wait_are_never_followed():
    rows = [act(0, "operator", 0, 100), act(1, "operator", 0, 10), act(1, "operator", 20, 100)]
    assert [e["type"] for e in critical_path(rows, 0)] == ["operator"]


def test_the_kernel_table_signature():
    rows = [act(0, "operator", 0, 50), wait(1, 0, 50, source=0, send=20), act(1, "operator", 50, 80)]
    table = slice_critical_path(pa.Table.from_pylist(rows, schema=SLICED))
    assert table.schema == CRITICAL_PATH
    assert table.column("step").to_pylist() == [0, 1, 2]
    assert sum(table.column("duration").to_pylist()) == 80


@settings(max_examples=300, deadline=None)
@given(timelines())
def test_critical_path_properties_on_random_valid_timelines(rows):
    assert_complete_path(critical_path(rows, 0), min(r["start"] for r in rows), max(r["end"] for r in rows))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([None, "in flight", "sent later"]).flatmap(sliced_timelines))
def test_critical_path_properties_on_random_timelines_cut_by_the_slice_end(rows):
    end = max(r["end"] for r in rows)
    path = critical_path(rows, 0)
    assert_complete_path(path, min(r["start"] for r in rows), end)
    if everyone_waits(rows, end):  # the walk starts by crossing a wait's message
        assert path[0]["type"] == "data_message"


# --- both kernels on random simulated workers ----------------------------------------------


@settings(max_examples=300, deadline=None)
@given(simulated_workers(), st.data())
def test_waits_then_critical_path_on_random_simulated_workers(rows, data):
    tables = []
    for w in sorted({r["worker"] for r in rows}):
        tables.append(
            worker_activities(pa.Table.from_pylist([r for r in rows if r["worker"] == w], schema=WORKER_ROWS))
        )
    activities = pa.concat_tables(tables).to_pylist()
    for worker in {a["worker"] for a in activities}:
        mine = sorted((a for a in activities if a["worker"] == worker), key=lambda a: a["start"])
        assert all(a["end"] <= b["start"] for a, b in zip(mine, mine[1:], strict=False)), "activities never overlap"
    start, end = min(a["start"] for a in activities), max(a["end"] for a in activities)
    at = data.draw(st.integers(start + 1, end + 1), label="slice end")  # cuts waits as slicing does
    sliced = cut([dict(a, slice=0, slice_start=start) for a in activities], at)
    assert_complete_path(critical_path(sliced, 0), start, max(a["end"] for a in sliced))
