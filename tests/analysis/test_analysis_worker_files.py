"""The per-worker path of a large trace (`analysis.worker_files`: each worker's files read by
pyarrow in its own Python task, only the message endpoints handed to Spark's joins) against
the path of events cached in Spark with Spark's joins and profile queries (what a large trace
took before): every table `analyze` writes, schema and rows (sorted, floats exactly), the
ordered tables in Spark's order, on the hand-built traces of `support.analysis_traces` (clock
offsets between processes, three workers, every event kind) and on a traced BFS run of two
processes; and what one worker hands Spark."""

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.analysis_traces import BUILDERS, assert_same_tables, write_all
from timely_py.analysis import analyze, pipeline, worker_files
from timely_py.analysis.events import trace_info


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Every hand-built trace, by name."""
    return write_all(tmp_path_factory.mktemp("worker_files"))


def by_spark_and_by_files(spark, trace_dir, out, monkeypatch, slice="500ns"):
    """Every table `analyze` writes with the events cached in Spark and no driver shortcut
    (the large-trace path before the per-worker one), then with the per-worker path."""
    with monkeypatch.context() as patched:
        patched.setattr(pipeline, "SMALL_TRACE_EVENTS", 0)  # no trace is small: Spark's joins and queries
        by_spark = analyze(trace_dir, out=out / "spark", slice=slice, spark=spark, views=False, per_worker=False)
    by_files = analyze(trace_dir, out=out / "files", slice=slice, spark=spark, views=False, per_worker=True)
    return by_spark, by_files


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_per_worker_files_give_the_tables_of_spark_on_hand_built_traces(spark, traces, name, tmp_path, monkeypatch):
    by_spark, by_files = by_spark_and_by_files(spark, traces[name], tmp_path, monkeypatch)
    assert_same_tables(by_spark, by_files)
    assert pq.read_table(by_files.tables["activities"]).num_rows > 0


@pytest.mark.timeout(900)
def test_per_worker_files_give_the_tables_of_spark_on_a_traced_bfs_run(spark, bfs_trace, tmp_path, monkeypatch):
    by_spark, by_files = by_spark_and_by_files(spark, bfs_trace, tmp_path, monkeypatch, slice="5ms")
    assert_same_tables(by_spark, by_files)
    assert by_files.workers == 4 and pq.read_table(by_files.tables["communications"]).num_rows > 0


@pytest.mark.timeout(60)
def test_a_worker_hands_spark_its_endpoints_and_bounds_only(traces):
    trace = traces["two_processes"]
    processes = trace_info(trace).processes
    (row,) = [r for r in worker_files.worker_directories(trace) if r["worker"] == 1]
    columns = [name for name in worker_files.ENDPOINTS.names if name not in ("t", "process")]
    events = worker_files.read_worker(row["directory"], row["process"], row["worker"], columns, processes)
    handed = worker_files.endpoints(events)
    assert handed.schema == worker_files.ENDPOINTS
    kinds = handed["kind"].to_pylist()
    assert set(kinds) - {None} <= set(worker_files.MESSAGE_KINDS + worker_files.CATALOGUE_KINDS)
    assert "message_recv" in kinds and "schedule_start" not in kinds
    bounds = handed.filter(pc.is_null(handed["kind"]))["t"].to_pylist()
    assert bounds == [min(events["t"].to_pylist()), max(events["t"].to_pylist())]
    # process 1's clock runs 5 us ahead: its times are moved back onto process 0's
    assert events["t"].to_pylist() != events["time_ns"].to_pylist()


@pytest.mark.timeout(60)
def test_the_per_worker_path_runs_the_native_kernels_only(spark, traces, tmp_path):
    with pytest.raises(ValueError, match="native kernels"):
        analyze(traces["three_workers"], out=tmp_path, spark=spark, views=False, kernels="python", per_worker=True)


@pytest.mark.timeout(60)
def test_a_worker_directory_without_files_yet_has_no_events_and_no_endpoints(tmp_path):
    directory = tmp_path / "process=0" / "worker=3"
    directory.mkdir(parents=True)
    (row,) = worker_files.worker_directories(tmp_path)
    assert (row["process"], row["worker"]) == (0, 3)
    columns = [name for name in worker_files.ENDPOINTS.names if name not in ("t", "process")]
    events = worker_files.read_worker(str(directory), 0, 3, columns, {0: {}})
    assert events.num_rows == 0 and {"t", "ord", "worker", "kind", "address"} <= set(events.column_names)
    assert worker_files.endpoints(events).num_rows == 0
