"""The native pieces kernel (`timely_py._core.worker_pieces`: one worker's events to its
wait-state rows) against the Spark queries it replaces (`activities.pieces` shaped by
`waits.piece_rows`): the same rows, and the same tables written by `analyze`, row for row
(sorted), on the hand-built traces of `support.analysis_traces`, on a traced BFS run, and on
a hand-built trace with every event kind the pieces read (nested user activities, parks
with wakes, scopes three deep, input sends, instants at one moment, unmatched marks, a
network event after the worker's last own one)."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.analysis_traces import (
    INPUT_CHANNEL,
    PROGRESS,
    SKEW,
    Trace,
    late_and_early,
    sleeping_sender,
    three_workers,
    two_processes,
)
from timely_py import _core
from timely_py.analysis import activities as acts
from timely_py.analysis import analyze
from timely_py.analysis import pipeline
from timely_py.analysis.clocks import correct_clocks
from timely_py.analysis.events import load_events
from timely_py.analysis.waits import piece_rows

#: A root scope, an Input, a loop scope (depth 1) around a scope (depth 2) around Map, and Sink.
DEEP_OPERATORS = [
    (0, "Dataflow", [0]), (1, "Input", [0, 1]), (2, "Loop", [0, 2]), (3, "Inner", [0, 2, 1]),
    (4, "Map", [0, 2, 1, 1]), (5, "Sink", [0, 3]),
]  # fmt: skip

TABLES = [
    "communications", "activities", "critical_path", "slices", "profile", "profile_type", "profile_operator",
    "profile_worker", "profile_contributor_worker", "imbalance", "slack",
]  # fmt: skip


def every_kind(directory):
    """Two processes of one worker (process 1's clock ahead) with every event kind the pieces read."""
    trace = Trace(1, {0: 0, 1: SKEW})
    to1, to0 = (dict(channel=0, source_worker=s, target_worker=t, seq=0, records=2) for s, t in ((0, 1), (1, 0)))
    for worker, t in ((0, 1000), (1, 1500)):
        trace.created(worker, t, DEEP_OPERATORS)
        trace.event(worker, t, "channel_created", channel=INPUT_CHANNEL, channel_kind="data", address=[0],
                    source_operator=1, source_port=0, target_operator=2, target_port=0)  # fmt: skip
    feed = dict(channel=INPUT_CHANNEL, source_worker=0, target_worker=0, records=3)
    trace.event(0, 1100, "message_send", seq=0, **feed)  # the program feeds its input
    trace.event(0, 1150, "message_send", seq=1, **feed)
    trace.event(0, 1200, "schedule_start", operator=0)
    trace.event(0, 1210, "schedule_start", operator=2)
    trace.event(0, 1220, "schedule_start", operator=3)
    trace.run(0, 4, 1230, 1300, True, [(1240, "message_recv", dict(feed, seq=0)), (1260, "message_send", to1)])
    trace.event(0, 1310, "activity_start", name="outer")
    trace.event(0, 1320, "activity_start", name="inner")
    trace.event(0, 1330, "activity_stop", name="inner")
    trace.event(0, 1340, "activity_stop", name="outer")
    trace.run(0, 4, 1350, 1400, False)
    trace.event(0, 1500, "activity_start", name="blink")  # empty, start and stop at one moment
    trace.event(0, 1500, "activity_stop", name="blink")
    trace.event(0, 1580, "schedule_stop", operator=3, useful=True)
    trace.event(0, 1590, "schedule_stop", operator=2, useful=True)
    trace.run(0, 5, 1592, 1598, True)
    trace.event(0, 1599, "progress_send", **PROGRESS)  # two instants at one moment
    trace.event(0, 1599, "progress_push", channel=1)
    trace.event(0, 1600, "schedule_stop", operator=0, useful=True)
    trace.park(0, 1700, 1900, "data")
    trace.event(0, 1850, "network_recv_end", channel_kind="data", bytes=64, **to0)
    trace.park(0, 1950, 1960, "timeout")
    trace.step(0, 2000, 2100, [(5, 2010, 2090, True, [(2020, "message_recv", to0)])])
    trace.event(0, 2200, "schedule_start", operator=5)  # never stopped
    trace.event(0, 2250, "unpark", wake="timeout")  # no park before it
    trace.event(0, 2260, "activity_stop", name="stray")  # no start before it
    trace.event(0, 2300, "network_send_start", channel_kind="data", bytes=64, **to1)  # not the worker's own
    trace.step(1, 1600, 1700, [(5, 1610, 1690, True)])
    trace.step(1, 1750, 1850, [(5, 1760, 1840, True, [(1800, "message_send", to0)])])
    trace.event(1, 1810, "network_send_start", channel_kind="data", bytes=64, **to0)
    trace.event(1, 1860, "progress_recv", target_worker=1, **PROGRESS)
    trace.event(1, 1900, "activity_start", name="load")
    trace.event(1, 2000, "activity_stop", name="load")
    trace.park(1, 2050, 2380, "data")
    trace.event(1, 2350, "network_recv_end", channel_kind="data", bytes=64, **to1)
    trace.event(1, 2385, "message_send", **dict(feed, source_worker=1, target_worker=1, seq=0))
    trace.step(1, 2390, 2500, [(5, 2400, 2490, True, [(2410, "message_recv", to1)])])
    return trace.write(directory, 2)


BUILDERS = {
    "every_kind": every_kind, "two_processes": two_processes, "three_workers": three_workers,
    "sleeping_sender": sleeping_sender, "late_and_early": late_and_early,
}  # fmt: skip


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Every hand-built trace, by name."""
    root = tmp_path_factory.mktemp("pieces")
    for name, build in BUILDERS.items():
        build(root / name)
    return {name: root / name for name in BUILDERS}


def ordered(rows):
    """Rows in one order that only depends on their values (nulls and all)."""
    return sorted(rows, key=repr)


def both_rows(spark, trace_dir):
    """One trace's worker rows (deliveries aside) by the Spark queries and by the native kernel."""
    raw, info = load_events(spark, trace_dir)
    events = correct_clocks(raw, info.processes).repartition("worker")
    known = acts.catalogue(events)
    spark_rows = piece_rows(acts.pieces(events, known)).toArrow().to_pylist()
    native_rows = acts.native_rows(events, known).toArrow().to_pylist()
    return ordered(spark_rows), ordered(native_rows)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_native_pieces_equal_the_spark_queries_on_hand_built_traces(spark, traces, name):
    reference, native = both_rows(spark, traces[name])
    assert native == reference and native


@pytest.mark.timeout(300)
def test_the_every_kind_trace_has_every_kind_of_row(spark, traces):
    _, rows = both_rows(spark, traces["every_kind"])
    kinds = {(r["row_type"], r["depth"]) for r in rows}
    expected = {("operator", None), ("step", None), ("scope", 1), ("scope", 2), ("park", None), ("instant", None)}
    expected |= {("user", 0), ("user", 1), ("input", None), ("lifetime", None), ("trace", None)}
    assert expected <= kinds
    lifetimes = {r["worker"]: (r["start"], r["end"]) for r in rows if r["row_type"] == "lifetime"}
    assert lifetimes[0] == (1000, 2260)  # the network event at 2300 is not the worker's own
    parks = sorted((r["start"], r["end"], r["wake"]) for r in rows if r["row_type"] == "park" and r["worker"] == 0)
    assert parks == [(1700, 1900, "data"), (1950, 1960, "timeout")]


@pytest.mark.timeout(600)
def test_native_pieces_equal_the_spark_queries_on_a_traced_bfs_run(spark, bfs_trace):
    reference, native = both_rows(spark, bfs_trace)
    assert native == reference and len(native) > 1000


def tables(result):
    return {name: ordered(pq.read_table(result.tables[name]).to_pylist()) for name in TABLES}


def old_and_new(spark, trace_dir, out, monkeypatch, slice="500ns"):
    """Every table `analyze` writes, by the previous path (Spark's pieces, native wait states)
    and by the new one (native pieces)."""
    new = analyze(trace_dir, out=out / "new", slice=slice, spark=spark, views=False)
    with monkeypatch.context() as patched:
        patched.setattr(pipeline.acts, "native_rows", lambda events, known: piece_rows(acts.pieces(events, known)))
        old = analyze(trace_dir, out=out / "old", slice=slice, spark=spark, views=False)
    return tables(old), tables(new)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_analyze_writes_the_same_tables_with_native_pieces(spark, traces, name, tmp_path, monkeypatch):
    old, new = old_and_new(spark, traces[name], tmp_path, monkeypatch)
    for table in TABLES:
        assert new[table] == old[table], table
    assert new["activities"] and new["critical_path"]


@pytest.mark.timeout(900)
def test_analyze_writes_the_same_tables_with_native_pieces_on_a_traced_bfs_run(spark, bfs_trace, tmp_path, monkeypatch):
    old, new = old_and_new(spark, bfs_trace, tmp_path, monkeypatch, slice="5ms")
    for table in TABLES:
        assert new[table] == old[table], table
    assert len(new["slices"]) > 1


# --- the kernel on its own ------------------------------------------------------------------

EVENTS = pa.schema(
    [("worker", pa.int64()), ("kind", pa.string()), ("t", pa.int64()), ("ord", pa.int64()), ("operator", pa.int64()),
     ("useful", pa.bool_()), ("wake", pa.string()), ("name", pa.string()), ("channel", pa.int64())]
)  # fmt: skip


def events_table(marks):
    rows = [dict(worker=3, kind=kind, t=t, ord=i, **columns) for i, (t, kind, columns) in enumerate(marks)]
    return pa.Table.from_pylist(rows, schema=EVENTS)


MARKS = [
    (10, "schedule_start", dict(operator=0)), (12, "schedule_start", dict(operator=7)),
    (15, "activity_start", dict(name="a")), (16, "activity_start", dict(name="b")), (17, "activity_stop", {}),
    (18, "activity_stop", {}), (20, "schedule_stop", dict(operator=7)), (25, "park", {}), (30, "unpark", dict(wake="io")),
    (30, "progress_recv", {}), (31, "message_send", dict(channel=4)), (32, "message_send", dict(channel=5)),
    (40, "schedule_stop", dict(operator=0, useful=True)), (50, "network_recv_end", {}), (None, None, {}),
]  # fmt: skip


def kernel(table):
    return _core.worker_pieces(table, {0: 0}, {4: 1}, 5, 60)


def test_the_kernel_reads_events_in_any_order_and_in_several_batches():
    expected = ordered(kernel(events_table(MARKS)).to_pylist())
    rows = events_table(MARKS).to_pylist()
    random.Random(7).shuffle(rows)
    table = pa.Table.from_batches(
        [pa.RecordBatch.from_pylist(rows[i : i + 4], schema=EVENTS) for i in range(0, len(rows), 4)]
    )
    assert ordered(kernel(table).to_pylist()) == expected
    got = {(r["row_type"], r["start"], r["end"], r["operator"], r["useful"], r["wake"], r["name"], r["depth"])
           for r in expected}  # fmt: skip
    assert got == {
        ("step", 10, 40, 0, True, None, None, None), ("operator", 12, 20, 7, False, None, None, None),
        ("user", 15, 18, None, None, None, "a", 0), ("user", 16, 17, None, None, None, "b", 1),
        ("park", 25, 30, None, None, "io", None, None), ("instant", 30, 30, None, None, None, None, None),
        ("input", 31, 31, 1, None, None, None, None), ("lifetime", 10, 40, None, None, None, None, None),
        ("trace", 5, 60, None, None, None, None, None),
    }  # fmt: skip


def test_the_kernel_refuses_missing_columns_and_null_times():
    with pytest.raises(ValueError, match="worker_pieces: the input has no column `channel`"):
        kernel(events_table(MARKS).drop_columns(["channel"]))
    with pytest.raises(ValueError, match="column `t` is null in row 0"):
        kernel(events_table([(None, "park", {})]))
    assert kernel(events_table([])).num_rows == 0
