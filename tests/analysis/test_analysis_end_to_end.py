"""The analysis end to end: `examples/bfs.py` traced on 2 processes of 2 workers and analysed
through `timely_py.analysis.analyze`, and the `timely-py analyze` console script on a small
hand-made trace."""

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from support.paths import ROOT
from support.tracedirs import write_crafted
from timely_py.analysis import analyze

SCRIPT = Path(sys.executable).parent / "timely-py"

def test_bfs_on_two_processes_analysed(spark, bfs_trace, tmp_path):
    result = analyze(bfs_trace, out=tmp_path / "out", slice="100ms", spark=spark)
    assert result.workers == 4 and result.slices >= 1
    assert result.complete_slices == result.slices, "every slice's path reaches the slice's start"
    slices = pq.read_table(result.tables["slices"]).to_pylist()
    assert all(s["critical_ns"] == s["length_ns"] > 0 for s in slices)
    path = pq.read_table(result.tables["critical_path"]).to_pylist()
    assert not [e for e in path if e["type"] == "waiting"]
    assert {e["worker"] for e in path} <= {0, 1, 2, 3}
    activities = pq.read_table(result.tables["activities"])
    assert set(activities.column("worker").to_pylist()) == {0, 1, 2, 3}
    names = {e["name"] for e in path if e["type"] == "operator"}
    assert names, "operators are on the critical path"
    comms = pq.read_table(result.tables["communications"]).to_pylist()
    remote = [c for c in comms if not c["local"]]
    assert remote and all(c["arrival"] <= c["read"] for c in comms)
    assert all(c["send"] <= c["arrival"] for c in comms if c["local"])  # remote ones: clocks differ slightly
    # The engine records the network frames, so every remote message has its buffer times.
    assert all(c["arrival_known"] and c["transfer_ns"] is not None for c in remote)
    assert all(c["send_buffer_ns"] >= 0 and c["recv_buffer_ns"] >= 0 for c in remote)
    assert "load graph" in set(activities.column("name").to_pylist()), "bfs.py's user activity"
    assert {key: len(paths) for key, paths in result.views.items()} == {"plots": 3, "viewer": 1, "perfetto": 1}
    assert all(path.is_file() and path.stat().st_size > 0 for paths in result.views.values() for path in paths)
    shares = [r.share for r in result.top]
    assert shares == sorted(shares, reverse=True) and all(0 < x <= 1 for x in shares)
    by_type = pq.read_table(result.tables["profile_type"]).to_pylist()
    assert sum(r["share"] for r in by_type) == pytest.approx(result.slices)


@pytest.mark.spark  # the console script starts its own Spark JVM
def test_the_console_script_analyses_a_small_trace(tmp_path):
    trace = write_crafted(tmp_path / "trace")
    done = subprocess.run(
        [str(SCRIPT), "analyze", str(trace), "--out", str(tmp_path / "out"), "--slice", "1ms",
         "--master", "local[1]", "--conf", "spark.sql.shuffle.partitions=2"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "top critical-path contributors" in done.stdout and "outer" in done.stdout
    assert "1 slices of 1 ms (1 with a complete critical path)" in done.stdout
    assert "[analyze] activities and waits" in done.stderr
    assert (tmp_path / "out" / "critical_path").is_dir()
    viewer = tmp_path / "out" / "viewer.html"
    assert f"trace viewer (open in a browser): {viewer}" in done.stdout.splitlines() and viewer.is_file()


def test_the_console_script_rejects_bad_settings(tmp_path):
    done = subprocess.run(
        [str(SCRIPT), "analyze", str(tmp_path), "--out", str(tmp_path / "out"), "--conf", "no-equals-sign"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2 and "--conf takes KEY=VALUE" in done.stderr
