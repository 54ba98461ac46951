"""Fixtures shared by every suite, and the markers that sort tests into tiers.

Helpers live in the `support` package (`tests/support/`); this file holds only fixtures:
the worker counts multi-worker tests run with, one local SparkSession per pytest process
(so one per pytest-xdist worker), and one traced BFS cluster run for the analysis tests.

Markers (registered in `pyproject.toml`, checked with `--strict-markers`): `cluster` (starts
processes that talk over loopback), `spark` (starts a Spark JVM), `browser` (drives headless
Chromium), `bench` (runs a benchmark script), `slow` (takes over about 10 s). The quick tier
(`bash scripts/test.sh --quick`) leaves out `spark`, `browser`, `bench` and `slow`.
"""

import fcntl
import subprocess
import sys

import pytest
from support.dataflows import WORKER_COUNTS
from support.paths import EXAMPLES, ROOT
from support.ports import launcher_base_port


@pytest.fixture(params=WORKER_COUNTS, ids=lambda n: f"w{n}")
def workers(request):
    """Every multi-worker test runs once per worker count in `WORKER_COUNTS`."""
    return request.param


@pytest.fixture
def default_ports(tmp_path_factory):
    """Holds the one lock of the launcher's default ports (2101 and up) while the test runs:
    tests that start clusters there take it, so under pytest-xdist no two of them run at
    once. The lock file lives in the run's shared temporary root, which every xdist worker
    of the run sees."""
    lock = tmp_path_factory.getbasetemp().parent / "default-ports.lock"
    with open(lock, "w") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession (2 cores, few partitions) shared by every analysis test of this
    pytest process, with the settings of a small trace (every test's trace is small)."""
    from timely_py.analysis import get_session

    session = get_session(
        master="local[2]",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2", "spark.driver.memory": "1g"},
        events=0,
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def bfs_trace(tmp_path_factory):
    """`examples/bfs.py` traced once on 2 processes x 2 workers, for every analysis test."""
    trace = tmp_path_factory.mktemp("bfs") / "trace"
    done = subprocess.run(
        [sys.executable, "-m", "timely_py.launch", "-n", "2", "-w", "2", "--base-port", str(launcher_base_port(2)),
         "--trace", str(trace), str(EXAMPLES / "bfs.py"), "2000", "6000"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return trace


def pytest_collection_modifyitems(items):
    """Marks what a test's fixtures start: the `spark` fixture a Spark JVM, `bfs_trace` a
    cluster (and the analysis tests that take it start Spark themselves)."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "spark" in names:
            item.add_marker(pytest.mark.spark)
        if "bfs_trace" in names:
            item.add_marker(pytest.mark.cluster)
