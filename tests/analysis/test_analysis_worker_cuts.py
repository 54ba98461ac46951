"""The workers' tasks cut their own activities into slices (`analysis.worker_cuts`) and the
driver puts the slices together (`driver_slices.run_tables_of_cuts`): every table equals
what the driver makes from the whole run's activities (`driver_slices.run_tables`), row for
row in the same order, on hand-built traces' activities at several slice lengths, with the
cut kept in files as the tasks keep it; and an analysis leaves no cut behind. The first job's
events kept for the second (`worker_files.keep_events`) read back the same."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.analysis_traces import write_all
from timely_py.analysis import analyze, driver_slices, worker_cuts, worker_files


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Every hand-built trace, by name."""
    return write_all(tmp_path_factory.mktemp("worker_cuts"))


@pytest.fixture(scope="module")
def analysed(spark, traces, tmp_path_factory):
    """The activities of two hand-built traces (as the workers' tasks wrote them), and the
    first event's time, by trace name."""
    found = {}
    for name in ("three_workers", "two_processes"):
        out = tmp_path_factory.mktemp(f"cuts_{name}")
        analyze(traces[name], out=out, slice="500ns", spark=spark, views=False, per_worker=True)
        assert not (out / worker_cuts.CUTS).exists()  # the driver removed the tasks' cuts
        activities = pq.read_table(out / "activities")
        found[name] = activities, min(activities["start"].to_pylist())
    return found


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["three_workers", "two_processes"])
@pytest.mark.parametrize("length", [7, 100, 500, 10**9])
def test_the_workers_cuts_give_the_drivers_tables(analysed, name, length, tmp_path):
    activities, origin = analysed[name]
    whole = driver_slices.run_tables(activities, length, origin, 3)
    cuts, slices, busy = [], [], []
    for worker in sorted(set(activities["worker"].to_pylist())):
        mine = activities.filter(pa.compute.equal(activities["worker"], worker))
        cut, rows, worker_busy = worker_cuts.worker_cut(mine, length, origin)
        path = str(tmp_path / f"{worker}.arrow")
        worker_cuts.write_cut(cut, path)
        cuts.append(worker_cuts.read_cut(path))
        slices.append(rows)
        busy.append(worker_cuts.busy_bytes(worker_busy))
    assert sum(len(rows) for rows in slices) >= len({r[0] for rows in slices for r in rows}) >= 1
    by_cuts = driver_slices.run_tables_of_cuts(cuts, slices, worker_cuts.busy_of(busy), 3)
    assert sorted(by_cuts) == sorted(whole)
    for table in whole:
        assert by_cuts[table].schema == whole[table].schema, table
        if table == "imbalance" or table.startswith("profile") or table == "slices" or table == "critical_path":
            assert by_cuts[table].to_pylist() == whole[table].to_pylist(), table
        else:
            assert sorted(map(repr, by_cuts[table].to_pylist())) == sorted(map(repr, whole[table].to_pylist())), table


@pytest.mark.timeout(60)
def test_a_worker_without_activities_cuts_nothing():
    empty = worker_files.activity_table_schema().empty_table()
    cut, rows, busy = worker_cuts.worker_cut(empty, 100, 0)
    assert cut.num_rows == 0 and rows == [] and busy.num_rows == 0
    assert cut.schema.names == worker_cuts.CUT.names


@pytest.mark.timeout(60)
def test_kept_events_read_back_the_same_once(tmp_path):
    pieces = pa.table({"kind": ["a", None, "b"], "t": [3, 1, 2], "useful": [True, None, False]})
    path = str(tmp_path / "kept.arrow")
    worker_files.keep_events(pieces, path)
    assert worker_files.kept_events(path).equals(pieces)
    assert worker_files.kept_events(path) is None  # used once: the file is gone
