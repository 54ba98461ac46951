"""The Python benchmark scripts still run and compute the right results.

Each script checks every system's output against the expected result and fails loudly
otherwise; these tests run them on small inputs (no timing is asserted).
"""

import json
import subprocess
import sys

from conftest import ROOT

BENCHES = ROOT / "benches" / "python"


def test_bench_processes_runs_one_and_two_processes(tmp_path):
    out = tmp_path / "times.json"
    subprocess.run(
        [sys.executable, str(BENCHES / "bench_processes.py"), "--records", "20000", "--reps", "1",
         "--no-bytewax", "--json", str(out)],
        check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    rows = json.loads(out.read_text())["rows"]
    assert [row["workload"] for row in rows] == ["map+filter", "count"]
    for row in rows:
        assert set(row["median_seconds"]) == {"plain", "timely_py 1p", "timely_py 2p"}
        assert all(seconds > 0 for seconds in row["median_seconds"].values())


def test_bench_processes_one_by_one_records(tmp_path):
    subprocess.run(
        [sys.executable, str(BENCHES / "bench_processes.py"), "--records", "5000", "--reps", "1",
         "--batch", "1", "--no-bytewax", "--workloads", "count", "--processes", "2"],
        check=True, timeout=120, capture_output=True,
    )  # fmt: skip
