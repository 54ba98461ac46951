"""The per-worker path of a large trace (`analysis.worker_files`: each worker's files read by
pyarrow in its own Python task, only the message endpoints handed to Spark's joins): what one
worker hands Spark, a worker directory without files yet, and that the path runs the native
kernels only. Its tables against Spark's path: `test_analysis_driver_profiles.py`."""

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.analysis_traces import write_all
from timely_py.analysis import analyze, worker_files
from timely_py.analysis.events import trace_info


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Every hand-built trace, by name."""
    return write_all(tmp_path_factory.mktemp("worker_files"))


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


class _Stop(Exception):
    """Ends a console-script run once `analyze` was called."""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("flags, per_worker", [([], None), (["--through-spark"], False)])
def test_the_console_script_reads_through_spark_when_asked(traces, tmp_path, monkeypatch, flags, per_worker):
    import concurrent.futures

    from timely_py import cli
    from timely_py.analysis import cli as analysis_cli
    from timely_py.analysis import pipeline

    calls = []

    def recording_analyze(*args, **options):
        calls.append(options)
        raise _Stop

    ready = concurrent.futures.Future()
    ready.set_result(object())
    sessions = []
    monkeypatch.setattr(analysis_cli, "session_soon", lambda **options: sessions.append(options) or ready)
    monkeypatch.setattr(pipeline, "analyze", recording_analyze)
    with pytest.raises(_Stop):
        cli.main(["analyze", str(traces["three_workers"]), "--out", str(tmp_path), *flags])
    assert calls[0]["per_worker"] is per_worker
    assert sessions[0]["sql"] is (per_worker is False)  # the per-worker path runs no SQL query


@pytest.mark.timeout(60)
def test_a_session_without_sql_gets_the_light_jvm_whatever_the_traces_size():
    from timely_py.analysis.session import SMALL_TRACE_JAVA_OPTIONS, SMALL_TRACE_SETTINGS, session_settings

    large = 10 * 1000 * 1000
    for settings, light in [(session_settings(events=large), False), (session_settings(events=large, sql=False), True),
                            (session_settings(events=10), True)]:  # fmt: skip
        assert (SMALL_TRACE_JAVA_OPTIONS in settings["spark.driver.extraJavaOptions"]) is light
        assert all((settings[key] == value) is light for key, value in SMALL_TRACE_SETTINGS.items())
