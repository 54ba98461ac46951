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
from support.analysis_traces import ANALYSIS_TABLES as TABLES
from support.analysis_traces import BUILDERS, ordered, write_all
from timely_py import _core
from timely_py.analysis import activities as acts
from timely_py.analysis import analyze
from timely_py.analysis import pipeline
from timely_py.analysis.clocks import correct_clocks
from timely_py.analysis.events import load_events
from timely_py.analysis.waits import piece_rows



@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Every hand-built trace, by name."""
    return write_all(tmp_path_factory.mktemp("pieces"))


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
