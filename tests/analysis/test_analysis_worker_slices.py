"""A large trace's per-worker path with the activities written by the workers' tasks
(`analysis.worker_files.write_tables`, `analysis.driver_slices`): the catalogue and the
communications the driver makes from the endpoints against Spark's (`analysis.activities`),
schema and sorted rows, on every hand-built trace of `support.analysis_traces` and on a traced
BFS run; the files it writes (one activities file per worker, an output directory emptied
first); and every table against the `--through-spark` path (`per_worker=False`) on the BFS run
cut into many slices; the driver's slack summary against Spark's query. The hand-built traces' tables: `test_analysis_driver_profiles.py`."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.analysis_traces import BUILDERS, assert_same_tables, ordered, write_all
from timely_py.analysis import activities as acts
from timely_py.analysis import analyze, driver_slices, profiles, worker_files
from timely_py.analysis.events import trace_info
from timely_py.analysis.schemas import SLACK


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Every hand-built trace, by name."""
    return write_all(tmp_path_factory.mktemp("worker_slices"))


def endpoints_of(spark, trace_dir):
    """The endpoints every worker's task hands the driver, as one Arrow table."""
    processes = {int(p): dict(meta) for p, meta in trace_info(trace_dir).processes.items()}
    found = worker_files.endpoints_table(worker_files.worker_partitions(spark, trace_dir), processes)
    assert found.schema == worker_files.ENDPOINTS
    return found


def assert_driver_equals_spark(spark, trace_dir):
    """The driver's catalogue and communications of `trace_dir`'s endpoints equal Spark's."""
    found = endpoints_of(spark, trace_dir)
    frame = spark.createDataFrame(found)
    assert worker_files.catalogue_of(found) == acts.catalogue(frame)
    per_process = trace_info(trace_dir).workers_per_process
    by_driver = worker_files.communications_of(found, per_process)
    by_spark = acts.communications(frame, per_process).toArrow()
    assert by_driver.schema == by_spark.schema
    assert ordered(by_driver.to_pylist()) == ordered(by_spark.to_pylist())
    return by_driver


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(BUILDERS))
def test_the_drivers_catalogue_and_communications_equal_sparks(spark, traces, name):
    assert_driver_equals_spark(spark, traces[name])


@pytest.mark.timeout(600)
def test_the_drivers_communications_equal_sparks_on_a_traced_bfs_run(spark, bfs_trace):
    communications = assert_driver_equals_spark(spark, bfs_trace)
    kinds = set(communications["type"].to_pylist())
    assert kinds == {"data_message", "progress_message"}
    assert not all(communications["local"].to_pylist())  # messages between the two processes


@pytest.mark.timeout(300)
def test_each_worker_writes_its_activities_into_an_emptied_directory(spark, traces, tmp_path):
    stray = tmp_path / "activities" / "part-00099.parquet"
    stray.parent.mkdir(parents=True)
    stray.write_text("left by an earlier run")
    result = analyze(traces["three_workers"], out=tmp_path, slice="500ns", spark=spark, views=False, per_worker=True)
    files = sorted(p.name for p in (tmp_path / "activities").iterdir())
    assert files == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    for worker, name in enumerate(files):
        assert set(pq.read_table(tmp_path / "activities" / name)["worker"].to_pylist()) == {worker}
    assert result.tables["communications"] == tmp_path / "communications"
    assert pq.read_table(tmp_path / "communications").num_rows > 0


@pytest.mark.timeout(900)
def test_the_per_worker_tables_equal_the_through_spark_paths_on_many_slices(spark, bfs_trace, tmp_path):
    through_spark = analyze(bfs_trace, out=tmp_path / "spark", slice="1ms", spark=spark, views=False, per_worker=False)
    by_files = analyze(bfs_trace, out=tmp_path / "files", slice="1ms", spark=spark, views=False, per_worker=True)
    assert by_files.slices == through_spark.slices > 5
    assert_same_tables(through_spark, by_files)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", [1, 2])
def test_the_drivers_slack_summary_equals_sparks(spark, seed):
    rng = random.Random(seed)
    names = ["Map", "Join", "Input", "Probe", "Übung"]
    rows = [(rng.choice(names), rng.random() < 0.3, rng.choice([0, 0, 5, rng.randrange(1000)])) for _ in range(300)]
    rows += [("AllCritical", True, 7), ("AllCritical", True, 3), ("One", False, 9)]  # no slack off the path; one row
    marked = pa.table({"contributor": [r[0] for r in rows], "critical": [r[1] for r in rows],
                       "slack_ns": [r[2] for r in rows]})  # fmt: skip
    by_spark = profiles.slack_summary(spark.createDataFrame(marked)).toArrow()
    by_driver = driver_slices.slack_summary(marked, SLACK)
    assert by_driver.schema == by_spark.schema
    assert by_driver.to_pylist() == by_spark.to_pylist()  # in Spark's order
    assert {r["contributor"]: r["median_slack_ns"] for r in by_driver.to_pylist()}["AllCritical"] is None


@pytest.mark.timeout(300)
def test_a_small_trace_takes_the_per_worker_path_by_default(spark, traces, tmp_path):
    # One activities file per worker (the workers' tasks wrote them), and the same tables as
    # the path through Spark's SQL.
    by_default = analyze(traces["three_workers"], out=tmp_path / "default", slice="500ns", spark=spark, views=False)
    files = sorted(p.name for p in (tmp_path / "default" / "activities").iterdir())
    assert files == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    through_spark = analyze(
        traces["three_workers"], out=tmp_path / "spark", slice="500ns", spark=spark, views=False, per_worker=False
    )
    assert_same_tables(through_spark, by_default)
