"""A small trace's communications and profiles computed on the driver
(`analysis.driver_communications`: the message events collected once and joined in pyarrow;
`analysis.driver_profiles`: from the collected critical path and one query of the sliced
activities), and a large trace's per-worker path (`analysis.worker_files`: each worker's files
read by pyarrow in its own task, only the endpoints joined by Spark, the profiles on the
driver), against Spark's joins and queries over the events cached in Spark
(`analysis.activities.communications`, `analysis.profiles`): every table `analyze` writes,
schema (nullability included) and rows (sorted, floats compared exactly), on the hand-built
traces of `support.analysis_traces` (one of them with three workers, two with clock offsets
between processes) and on a traced BFS run of two processes; the ordered tables in Spark's
order; and the communications of random message events (duplicates, null keys, unmatched
sends) both ways."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.analysis_traces import BUILDERS, assert_same_tables, ordered, write_all
from timely_py.analysis import activities as acts
from timely_py.analysis import analyze, driver_communications, driver_profiles, pipeline


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Every hand-built trace, by name."""
    return write_all(tmp_path_factory.mktemp("driver_profiles"))


def by_spark_and_by_driver(spark, trace_dir, out, monkeypatch, slice="500ns"):
    """Every table `analyze` writes with the communications and profiles from Spark's joins and
    queries, then from the driver, then by the per-worker path."""
    with monkeypatch.context() as patched:
        patched.setattr(pipeline, "SMALL_TRACE_EVENTS", 0)  # no trace is small: Spark's queries
        by_spark = analyze(trace_dir, out=out / "spark", slice=slice, spark=spark, views=False, per_worker=False)
    with monkeypatch.context() as patched:
        patched.setattr(pipeline, "SMALL_TRACE_EVENTS", 1 << 62)  # every trace is small: the driver
        by_driver = analyze(trace_dir, out=out / "driver", slice=slice, spark=spark, views=False, per_worker=False)
    by_files = analyze(trace_dir, out=out / "files", slice=slice, spark=spark, views=False, per_worker=True)
    return by_spark, by_driver, by_files


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_driver_profiles_equal_sparks_on_hand_built_traces(spark, traces, name, tmp_path, monkeypatch):
    by_spark, by_driver, by_files = by_spark_and_by_driver(spark, traces[name], tmp_path, monkeypatch)
    assert_same_tables(by_spark, by_driver)
    assert_same_tables(by_spark, by_files)
    assert pq.read_table(by_driver.tables["critical_path"]).num_rows > 0


@pytest.mark.timeout(900)
def test_driver_profiles_equal_sparks_on_a_traced_bfs_run(spark, bfs_trace, tmp_path, monkeypatch):
    by_spark, by_driver, by_files = by_spark_and_by_driver(spark, bfs_trace, tmp_path, monkeypatch, slice="5ms")
    assert_same_tables(by_spark, by_driver)
    assert_same_tables(by_spark, by_files)
    assert by_files.workers == 4
    assert by_driver.slices > 1 and pq.read_table(by_driver.tables["imbalance"]).num_rows > by_driver.slices


@pytest.mark.timeout(60)
def test_a_slice_of_zero_length_edges_has_no_shares_and_nulls_sort_first():
    path = pa.table({
        "slice": [0, 0, 1], "step": [0, 1, 0], "type": ["operator", "unknown", "operator"], "worker": [1, None, 0],
        "source_worker": pa.nulls(3, pa.int64()), "operator": [4, None, 4], "name": ["Map", None, "Map"],
        "activity_id": [1, None, 2], "comm_id": pa.nulls(3, pa.int64()), "start": [10, 10, 20], "end": [10, 10, 30],
        "duration": [0, 0, 10], "complete": [True, True, False],
    })  # fmt: skip
    busy = pa.table({"slice": [0], "contributor": ["Map"], "type": ["operator"], "worker": [1], "busy_ns": [3]})
    tables = driver_profiles.all_profiles(path, busy, workers=2)
    shares = {(r["slice"], r["type"]): r["share"] for r in tables["profile_type"].to_pylist()}
    assert shares == {(0, "operator"): None, (0, "unknown"): None, (1, "operator"): 1.0}
    rows = tables["profile_contributor_worker"].to_pylist()
    assert [(r["contributor"], r["worker"]) for r in rows] == [("Map", 0), ("Map", 1), ("unknown", None)]
    assert [r["busy_ns"] for r in rows] == [0, 3, 0]
    first = tables["slices"].to_pylist()[0]
    assert (first["edges"], first["complete"], first["imbalance_ns"], first["imbalance"]) == (2, True, 0.0, 0.0)


def random_message_events(rng, count):
    """Message, progress and network events over few keys: duplicates, nulls and unmatched sends."""
    kinds = driver_communications.MESSAGE_KINDS
    maybe = lambda values: None if rng.random() < 0.05 else rng.choice(values)  # noqa: E731
    return [
        (rng.choice(kinds), rng.choice(["data", "progress", None]), maybe([0, 1]), maybe([0, 1, 2]), maybe([0, 1, 2, 3]),
         maybe([0, 1, 2]), rng.randrange(1000), rng.choice([0, 1]), rng.randrange(5))
        for _ in range(count)
    ]  # fmt: skip


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_communications_joined_on_the_driver_equal_sparks(spark, seed):
    rows = random_message_events(random.Random(seed), 400)
    schema = ("kind string, channel_kind string, channel long, source_worker long, target_worker long, seq long, "
              "t long, process long, records long")  # fmt: skip
    events = spark.createDataFrame(rows, schema)
    by_spark = acts.communications(events, 2).toArrow()
    by_driver = driver_communications.communications(events, 2).toArrow()
    assert by_driver.schema == by_spark.schema
    assert ordered(by_driver.to_pylist()) == ordered(by_spark.to_pylist())
    assert {r["type"] for r in by_spark.to_pylist()} == {"data_message", "progress_message"}
    assert any(r["net_send"] is not None for r in by_spark.to_pylist())
