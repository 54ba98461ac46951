"""Follow mode of the analysis (`timely_py.analysis.follow`, `timely-py analyze --follow`):
slices are emitted while a traced run is still going, each the same as the batch analysis's
once the run has finished; a finished trace is followed to its end; prefixes of a finished
trace (as a reader sees a run being written) emit only slices that are already final; the
follower stops at its timeout and on Ctrl-C."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from support.growing_trace import GrowingTrace, activities_spanning
from support.paths import CLUSTER_SCRIPTS, ROOT
from support.ports import launcher_base_port
from support.processes import python_subprocess
from support.tracedirs import FILE_SCHEMA, write_crafted
from timely_py.analysis import analyze, follow

SCRIPT = Path(sys.executable).parent / "timely-py"
ROUNDS = CLUSTER_SCRIPTS / "rounds_until_file.py"


def batch_paths(out):
    """slice -> the batch analysis's critical path edges of that slice, latest first."""
    paths = {}
    for edge in pq.read_table(Path(out) / "critical_path").to_pylist():
        paths.setdefault(edge["slice"], []).append(edge)
    return {index: sorted(edges, key=lambda e: e["step"]) for index, edges in paths.items()}


# The follower gives up after 400 s, the run after 120 s more, then the batch analysis runs:
# the default 300 s guard killed this test on a loaded machine before its own bounds did.
@pytest.mark.timeout(900)
def test_a_live_run_is_followed_and_its_slices_match_the_batch_analysis(spark, tmp_path):
    trace, stop = tmp_path / "trace", tmp_path / "stop"
    port = launcher_base_port(2)
    # Clock measurements every second: a slice is final only once both processes' clocks were
    # measured after its end (docs/critical-path.md, "Follow mode"), which this exercises.
    run = subprocess.Popen(
        [sys.executable, "-m", "timely_py.launch", "-n", "2", "-w", "1", "--base-port", str(port),
         "--trace", str(trace), str(ROUNDS), str(stop), "0.02", "240"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TIMELY_CLOCK_INTERVAL": "1"},
    )  # fmt: skip
    try:
        while not trace.is_dir():
            assert run.poll() is None, run.communicate()
            time.sleep(0.05)
        follower = follow(trace, out=tmp_path / "out", slice="500ms", spark=spark, poll=0.2, timeout=400, views=False)
        emitted = []
        for result in follower:
            if not emitted:
                assert run.poll() is None, "the first slice came while the run was going"
                stop.write_text("")
            emitted.append(result)
        output, errors = run.communicate(timeout=120)
    finally:
        stop.write_text("")
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, errors
    assert follower.stopped_by == "finished" and follower.final is not None
    indices = [r.index for r in emitted]
    assert len(emitted) >= 2 and indices == sorted(set(indices)), "each slice once, in order"
    assert all(r.complete and 0 < r.critical_ns <= r.end - r.start for r in emitted)
    batch = analyze(trace, out=tmp_path / "batch", slice="500ms", spark=spark, views=False)
    expected = batch_paths(batch.out)
    assert sorted(expected) == indices
    for result in emitted:
        assert result.edges.to_pylist() == expected[result.index], f"slice {result.index} differs"
        written = pq.read_table(result.files["critical_path"]).to_pylist()
        assert written == expected[result.index]
    assert batch_paths(follower.final.out) == expected, "the follower's last batch wrote the batch tables"


@pytest.fixture(scope="module")
def rounds_trace(tmp_path_factory):
    """`rounds.py` (80 rounds of 10 ms) traced on 2 processes x 2 workers, clocks measured
    every 0.25 s, and its batch analysis in slices of 50 ms."""
    return _traced_rounds(tmp_path_factory.mktemp("rounds") / "trace", rounds=80, clock_interval=0.25)


def _traced_rounds(trace, rounds, clock_interval):
    """`rounds.py` (`rounds` rounds of 10 ms) traced into `trace` on 2 processes x 2 workers."""
    done = python_subprocess(
        ["-m", "timely_py.launch", "-n", "2", "-w", "2", "--base-port", str(launcher_base_port(2)),
         "--trace", str(trace), str(CLUSTER_SCRIPTS / "rounds.py"), str(rounds), "0.01"],
        timeout=300, env={**os.environ, "TIMELY_CLOCK_INTERVAL": str(clock_interval)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return trace


@pytest.fixture(scope="module")
def rounds_paths(spark, rounds_trace, tmp_path_factory):
    out = tmp_path_factory.mktemp("rounds-batch")
    return batch_paths(analyze(rounds_trace, out=out, slice="50ms", spark=spark, views=False).out)


@pytest.mark.parametrize("kernels", ["rust", "python"])
def test_a_finished_trace_is_followed_to_its_end(spark, rounds_trace, rounds_paths, tmp_path, kernels):
    follower = follow(rounds_trace, out=tmp_path / "out", slice="50ms", spark=spark, views=False, kernels=kernels)
    emitted = list(follower)
    assert follower.stopped_by == "finished"
    assert [r.index for r in emitted] == sorted(rounds_paths)
    assert {r.index: r.edges.to_pylist() for r in emitted} == rounds_paths
    assert all(r.top and r.top[0].share >= r.top[-1].share for r in emitted)


def _prefix(source, target, cut_ns, lag_ns):
    """The trace at `source` as a follower could see it while it was written: each worker's
    own events up to `cut_ns` after the run's first event (plus one worker a little behind), its
    network rows up to `lag_ns` earlier, and every process still `running`, with only the
    clock measurements made by then."""
    table = ds.dataset(source, partitioning="hive").to_table()
    first = min(table.column("time_ns").to_pylist())
    for meta_file in Path(source).glob("process=*/_process.json"):
        meta = json.loads(meta_file.read_text())
        cut = first + cut_ns
        meta["status"] = "running"
        meta["clock_history"] = [m for m in meta["clock_history"] if m["measured_at_ns"] <= cut]
        (target / meta_file.parent.name).mkdir(parents=True)
        (target / meta_file.parent.name / "_process.json").write_text(json.dumps(meta))
    for file in Path(source).glob("process=*/worker=*/part-*.parquet"):
        worker = int(file.parent.name.split("=")[1])
        rows = pq.read_table(file).to_pylist()
        cut = first + cut_ns - (worker == 1) * lag_ns
        kept = [r for r in rows if r["time_ns"] <= (cut - lag_ns if r["kind"].startswith("network_") else cut)]
        if kept:
            folder = target / file.parent.parent.name / file.parent.name
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(kept, schema=FILE_SCHEMA), folder / file.name)
    return target


@pytest.mark.parametrize("cut_ms", [400, 700])
def test_a_prefix_of_a_run_emits_only_final_slices(spark, rounds_trace, rounds_paths, tmp_path, cut_ms):
    expected = rounds_paths
    prefix = _prefix(rounds_trace, tmp_path / "prefix", cut_ms * 1_000_000, 3_000_000)
    follower = follow(prefix, out=tmp_path / "out", slice="50ms", spark=spark, timeout=0.1, views=False)
    emitted = list(follower)
    assert follower.stopped_by == "timeout" and follower.final is None
    assert emitted, "a prefix this long has final slices"
    assert max(r.index for r in emitted) < cut_ms // 50, "no slice past what was written"
    for result in emitted:
        assert result.edges.to_pylist() == expected[result.index], f"slice {result.index} differs"


def test_nothing_is_emitted_before_every_worker_wrote(spark, tmp_path):
    trace = write_crafted(tmp_path / "trace")
    (trace / "process=1" / "worker=1" / "part-000000.parquet").unlink()
    for meta_file in trace.glob("process=*/_process.json"):
        meta_file.write_text(meta_file.read_text().replace('"complete"', '"running"'))
    started = time.monotonic()
    follower = follow(trace, out=tmp_path / "out", slice="1ms", spark=spark, poll=0.1, timeout=2)
    assert list(follower) == [] and follower.stopped_by == "timeout" and follower.final is None
    assert time.monotonic() - started < 120


def test_bad_arguments_are_errors(tmp_path):
    with pytest.raises(ValueError, match="not a directory"):
        follow(tmp_path / "missing", out=tmp_path / "out")
    with pytest.raises(ValueError, match="positive"):
        follow(tmp_path, out=tmp_path / "out", timeout=0)
    with pytest.raises(ValueError, match="slice"):
        follow(tmp_path, out=tmp_path / "out", slice="0s")
    with pytest.raises(ValueError, match="kernels"):
        follow(tmp_path, out=tmp_path / "out", kernels="java")


@pytest.mark.spark  # the console script starts its own Spark JVM
def test_the_console_script_stops_on_ctrl_c(tmp_path):
    trace = write_crafted(tmp_path / "trace")
    for meta_file in trace.glob("process=*/_process.json"):
        meta_file.write_text(meta_file.read_text().replace('"complete"', '"running"'))
    command = subprocess.Popen(
        [str(SCRIPT), "analyze", str(trace), "--out", str(tmp_path / "out"), "--slice", "1ms", "--follow",
         "--poll", "0.2", "--master", "local[1]", "--conf", "spark.sql.shuffle.partitions=2"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for line in command.stderr:
            if "[analyze] follow batch" in line:
                break
        time.sleep(0.5)
        command.send_signal(signal.SIGINT)
        output, _ = command.communicate(timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
    assert command.returncode == 130, output
    assert "follow stopped (Ctrl-C)" in output


@pytest.mark.spark  # the console script starts its own Spark JVM
def test_the_console_script_follows_a_finished_trace(tmp_path):
    trace = write_crafted(tmp_path / "trace")
    done = python_subprocess(
        ["-m", "timely_py.cli", "analyze", str(trace), "--out", str(tmp_path / "out"), "--slice", "1ms",
         "--follow", "--timeout", "300", "--no-views", "--master", "local[1]"],
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("slice 0 (") and "outer" in lines[0]
    assert "top critical-path contributors" in done.stdout


#: The tables `analyze` writes.
RUN_TABLES = (
    "communications", "activities", "critical_path", "slices", "profile", "profile_type", "profile_operator",
    "profile_worker", "profile_contributor_worker", "imbalance", "slack",
)  # fmt: skip


def _rows(table_dir):
    """A written table's rows, in an order of their own (tables written by Spark have none)."""
    return sorted(pq.read_table(table_dir).to_pylist(), key=repr)


@pytest.fixture(scope="module")
def long_rounds_trace(tmp_path_factory):
    """`rounds.py` (200 rounds of 10 ms) traced on 2 processes x 2 workers, clocks measured
    every 0.05 s (so the horizon trails what is written by little)."""
    return _traced_rounds(tmp_path_factory.mktemp("long-rounds") / "trace", rounds=200, clock_interval=0.05)


# A few minutes of Spark on a loaded machine: the trace, a batch per growth, the analysis.
@pytest.mark.timeout(900)
def test_a_growing_trace_is_followed_batch_by_batch_with_its_state_carried(spark, long_rounds_trace, tmp_path):
    growing = GrowingTrace(long_rounds_trace, tmp_path / "trace")
    span_ms = max(pc.max(t["time_ns"]).as_py() for t in growing.rows.values()) // 1_000_000 - growing.first // 1_000_000
    cuts = list(range(120, span_ms, 90))
    growing.grow(cuts[0] * 1_000_000)
    follower = follow(growing.target, out=tmp_path / "out", slice="50ms", spark=spark, poll=0.05, timeout=600,
                      views=False)  # fmt: skip

    def write_the_rest():
        for cut in cuts[1:]:
            batches = len(follower.batches)
            growing.grow(cut * 1_000_000)
            deadline = time.monotonic() + 120
            while len(follower.batches) == batches and time.monotonic() < deadline:
                time.sleep(0.02)
        growing.finish()

    writer = threading.Thread(target=write_the_rest, daemon=True)
    writer.start()
    emitted, live_batches = [], []
    for result in follower:
        emitted.append(result)
        if follower.final is None:
            live_batches.append(len(follower.batches))
    writer.join(timeout=60)
    assert follower.stopped_by == "finished"
    batch = analyze(growing.target, out=tmp_path / "batch", slice="50ms", spark=spark, views=False)
    expected = batch_paths(batch.out)
    assert [r.index for r in emitted] == sorted(expected), "each slice once, in order"
    for result in emitted:
        assert result.edges.to_pylist() == expected[result.index], f"slice {result.index} differs"
    # The last batch wrote the run's tables from the carried state: the batch analysis's, row for row.
    for name in RUN_TABLES:
        assert _rows(follower.final.out / name) == _rows(batch.out / name), name
    # Slices came from several live batches, each resuming from the state the one before left.
    assert len(set(live_batches)) >= 3, live_batches
    live = {r.index for r in emitted[: len(live_batches)]}
    origin = emitted[0].start - emitted[0].index * 50_000_000
    boundaries = [growing.first + cut * 1_000_000 for cut in cuts]
    spanning = [a for a in activities_spanning(batch.out, boundaries) if (a["start"] - origin) // 50_000_000 in live]
    assert spanning, "an activity emitted live spans the end of what a batch had read"
    # The batches' kernels were handed about their new events (and those since the horizon), not
    # everything written so far: re-analysing the whole trace would hand the k-th batch k times
    # a batch's events (the second half of the batches together about 0.75 x batches x theirs),
    # and all of them together about half the batches times the trace.
    worked = [b for b in follower.batches if b.kernel_rows]
    assert len(worked) >= 8, follower.batches
    later = worked[len(worked) // 2 :]
    assert sum(b.kernel_rows for b in later) < 4 * sum(b.new_events for b in later), follower.batches
    assert sum(b.kernel_rows for b in worked) < 3 * growing.events, follower.batches
