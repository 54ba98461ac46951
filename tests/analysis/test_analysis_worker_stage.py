"""Stages 2 and 3 in one native pass per worker (`analysis.worker_stage`: events and
deliveries cogrouped by worker, pieces and wait states in one call) against the path it
replaces (the native pieces as rows back in Spark, unioned with the deliveries, shuffled by
worker again and given to the native wait-state kernel): the same activities and the same
tables written by `analyze`, row for row (sorted), on the hand-built traces of
`support.analysis_traces` and on a traced BFS run; and the deliveries shaped in pyarrow as
Spark shapes them."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.analysis_traces import ANALYSIS_TABLES as TABLES
from support.analysis_traces import BUILDERS, ordered, write_all
from timely_py.analysis import activities as acts
from timely_py.analysis import analyze, pipeline, worker_stage
from timely_py.analysis.clocks import correct_clocks
from timely_py.analysis.events import load_events
from timely_py.analysis.schemas import WORKER_ROWS
from timely_py.analysis.waits import delivery_rows, wait_states



@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Every hand-built trace, by name."""
    return write_all(tmp_path_factory.mktemp("worker_stage"))


def two_passes(events, communications, known):
    """The previous path: native pieces back to Spark, unioned with the deliveries, regrouped
    by worker for the native wait-state kernel."""
    return wait_states(acts.native_rows(events, known).unionByName(delivery_rows(communications)), "rust")


def both_activities(spark, trace_dir):
    """One trace's activities (before names are added) by the two passes and by the one."""
    raw, info = load_events(spark, trace_dir)
    events = correct_clocks(raw, info.processes).repartition("worker").cache()
    known = acts.catalogue(events)
    communications = acts.communications(events, info.workers_per_process)
    before = two_passes(events, communications, known).toArrow().to_pylist()
    after = worker_stage.worker_activities(events, communications, known).toArrow().to_pylist()
    events.unpersist()
    return ordered(before), ordered(after)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_one_pass_gives_the_activities_of_two_on_hand_built_traces(spark, traces, name):
    before, after = both_activities(spark, traces[name])
    assert after == before and after
    assert {r["type"] for r in after} & {"waiting", "waiting_for_input"} or name == "late_and_early"


def tables(result):
    return {name: ordered(pq.read_table(result.tables[name]).to_pylist()) for name in TABLES}


def old_and_new(spark, trace_dir, out, monkeypatch, slice="500ns"):
    """Every table `analyze` writes, by the previous path (two passes) and by the new one."""
    new = analyze(trace_dir, out=out / "new", slice=slice, spark=spark, views=False)
    with monkeypatch.context() as patched:
        patched.setattr(pipeline.worker_stage, "worker_activities", two_passes)
        old = analyze(trace_dir, out=out / "old", slice=slice, spark=spark, views=False)
    return tables(old), tables(new)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_analyze_writes_the_same_tables_in_one_pass(spark, traces, name, tmp_path, monkeypatch):
    old, new = old_and_new(spark, traces[name], tmp_path, monkeypatch)
    for table in TABLES:
        assert new[table] == old[table], table
    assert new["activities"] and new["critical_path"]


@pytest.mark.timeout(900)
def test_analyze_writes_the_same_tables_in_one_pass_on_a_traced_bfs_run(spark, bfs_trace, tmp_path, monkeypatch):
    old, new = old_and_new(spark, bfs_trace, tmp_path, monkeypatch, slice="5ms")
    for table in TABLES:
        assert new[table] == old[table], table
    assert len(new["slices"]) > 1 and len(new["communications"]) > 100


@pytest.mark.timeout(300)
def test_deliveries_are_shaped_as_spark_shapes_them(spark):
    communications = spark.createDataFrame(
        [(11, "data_message", 3, 0, 1, 2, 5, None, 7, 6, 9, False, True, None, 0, 3)],
        "comm_id long, type string, channel long, source_worker long, target_worker long, seq long, records long, "
        "net_send long, net_recv long, send long, read long, local boolean, arrival_known boolean, "
        "send_buffer_ns long, transfer_ns long, arrival long",
    )
    spark_rows = delivery_rows(communications).toArrow().to_pylist()
    arrow_rows = worker_stage.delivery_rows(worker_stage.deliveries(communications).toArrow()).to_pylist()
    assert arrow_rows == spark_rows
    assert arrow_rows[0]["worker"] == 1 and arrow_rows[0]["start"] == 9 and arrow_rows[0]["comm_type"] == "data_message"
    empty = worker_stage.delivery_rows(worker_stage.deliveries(communications.limit(0)).toArrow())
    assert empty.num_rows == 0 and empty.schema == WORKER_ROWS


@pytest.mark.timeout(60)
def test_the_kernel_of_a_worker_without_deliveries_still_gives_its_activities():
    from timely_py.analysis.kernels import native_worker_stage

    events = pa.table({
        "worker": [3, 3], "kind": ["schedule_start", "schedule_stop"], "t": [10, 20], "ord": [0, 1],
        "operator": [7, 7], "useful": [None, True], "wake": pa.nulls(2, pa.string()), "name": pa.nulls(2, pa.string()),
        "channel": pa.nulls(2, pa.int64()),
    })  # fmt: skip
    empty = pa.table({new: pa.array([], WORKER_ROWS.field(new).type) for _, new in worker_stage.DELIVERY_COLUMNS})
    kernel = native_worker_stage({}, {}, 10, 20, worker_stage.delivery_rows)
    rows = kernel(events, empty).to_pylist()
    assert [(r["type"], r["start"], r["end"], r["operator"]) for r in rows] == [("operator", 10, 20, 7)]
