"""The native Perfetto writer (`write_perfetto(..., kernels="rust")`, the default) against the
Python reference writer (`kernels="python"`): the same file, byte for byte, on every
hand-built trace and on a real BFS run, and on tables crafted with the values a JSON writer
gets wrong (escapes, non-ASCII names, empty names, nulls, times past 2**53 ns)."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.analysis_traces import write_all
from timely_py import _core
from timely_py.analysis import analyze
from timely_py.analysis.perfetto_export import ACTIVITY_COLUMNS, PATH_COLUMNS, write_perfetto
from timely_py.analysis.schemas import ACTIVITIES, CRITICAL_PATH


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Every hand-built trace, by name."""
    return write_all(tmp_path_factory.mktemp("perfetto_native"))


def both_writers(out, trace):
    """The file each writer writes for the analysis in `out` of `trace`."""
    python = write_perfetto(out, trace, kernels="python").read_bytes()
    rust = write_perfetto(out, trace, kernels="rust").read_bytes()
    return python, rust


@pytest.mark.timeout(600)
def test_the_native_writer_writes_the_python_writers_file_on_the_suites_traces(spark, traces, bfs_trace, tmp_path):
    for name, trace in [*traces.items(), ("bfs", bfs_trace)]:
        out = tmp_path / name
        analyze(trace, out=out, slice="500ns" if name != "bfs" else "5ms", spark=spark, views=False)
        python, rust = both_writers(out, trace)
        assert python == rust, name
        events = json.loads(rust)["traceEvents"]
        assert len(events) > len(pq.read_table(out / "activities")) > 0, name
        assert json.loads(python) == json.loads(rust)


def _write(out, name, schema, rows):
    (out / name).mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), out / name / "part-00000.parquet")


def _activity(worker, activity_id, start, end, name, **more):
    row = {"worker": worker, "activity_id": activity_id, "type": "operator", "start": start, "end": end,
           "operator": 1, "name": name, "useful": True, "ended_by": None, "ended_by_type": None,
           "ended_by_worker": None}  # fmt: skip
    return {**row, **more}


@pytest.mark.timeout(60)
def test_odd_values_are_written_as_the_python_writer_writes_them(traces, tmp_path):
    hostile = 'quote " backslash \\ newline \n tab \t nul \x00 del \x7f é 漢 😀 </script>'
    big = 2**60 + 12_345  # past 2**53 ns from the origin: the quotient is rounded once
    activities = [
        _activity(0, 1, 1_000, 2_500, hostile),
        _activity(0, 2, 2_500, 2_500, "", useful=None, operator=None),  # empty name: the type is the name
        _activity(1, 3, 1_000, big, None, type="waiting", ended_by=7, ended_by_type="data_message",
                  ended_by_worker=0),  # fmt: skip
        _activity(1, 4, big, big + 999, "late"),
    ]
    path = [
        {"slice": 0, "step": 1, "type": "operator", "worker": 0, "source_worker": None, "name": hostile,
         "activity_id": 1, "comm_id": None, "start": 1_000, "end": 2_500, "complete": True},
        {"slice": 0, "step": 0, "type": "data_message", "worker": 1, "source_worker": 0, "name": None,
         "activity_id": None, "comm_id": 5, "start": 2_500, "end": big, "complete": None},
        {"slice": 0, "step": 2, "type": "progress_message", "worker": 0, "source_worker": None, "name": "",
         "activity_id": None, "comm_id": 6, "start": 3_000, "end": 3_001, "complete": False},
    ]  # fmt: skip
    out = tmp_path / "out"
    _write(out, "activities", ACTIVITIES, [{**a, "depth": None, "ended_by_send": None} for a in activities])
    _write(out, "critical_path", CRITICAL_PATH, [{**p, "operator": None, "duration": 1} for p in path])
    _write(out, "slices", pa.schema([("slice", pa.int64()), ("start", pa.int64()), ("end", pa.int64())]),
           [{"slice": 0, "start": 1_000, "end": big + 999}])  # fmt: skip
    python, rust = both_writers(out, traces["two_processes"])
    assert python == rust
    events = json.loads(rust)["traceEvents"]
    assert [e["name"] for e in events if e["ph"] == "X"][:2] == [hostile, "operator"]
    assert [e["ph"] for e in events if e.get("cat") == "critical_path" and e["ph"] in "sf"] == ["s", "f"]


@pytest.mark.timeout(60)
def test_a_missing_column_is_a_value_error_and_a_wrong_type_a_type_error(tmp_path):
    activities = pa.Table.from_pylist([_activity(0, 1, 0, 1, "a")]).select(ACTIVITY_COLUMNS)
    path = pa.table({name: pa.array([], pa.int64()) for name in PATH_COLUMNS})
    target = str(tmp_path / "perfetto.json")
    with pytest.raises(ValueError, match="no column `end`"):
        _core.write_perfetto_trace(target, "", activities.drop_columns(["end"]), path, 0, 1, 9)
    floats = activities.set_column(3, "start", pa.array([0.5]))
    with pytest.raises(TypeError, match="column `start`"):
        _core.write_perfetto_trace(target, "", floats, path, 0, 1, 9)
    with pytest.raises(ValueError, match="per_process must be positive"):
        _core.write_perfetto_trace(target, "", activities, path, 0, 0, 9)
