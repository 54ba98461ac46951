"""Tracing a run from Python: `execute(..., trace_dir=...)`, `--trace DIR` on the command
line and through the launcher, event classes, the callback sink, user activities, and bad
settings. The files are read with pyarrow, as `docs/trace-format.md` describes them."""

import json
import subprocess
import sys
from collections import Counter

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
import timely_py as timely
from support.paths import EXAMPLES, ROOT
from support.ports import launcher_base_port

EPOCHS = 5
PER_EPOCH = 40


def exchange_main(worker):
    """Each worker sends PER_EPOCH records an epoch through an exchange, inside a user
    activity; returns the number of records sent."""
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.activity("build"):
        with worker.dataflow("traced") as scope:
            scope.input_from(inp).exchange(lambda x: x).map(lambda x: x + 1).probe_with(probe)
    with worker.activity("feed"):
        for epoch in range(EPOCHS):
            with worker.activity("epoch"):
                inp.send_batch(list(range(PER_EPOCH)))
            inp.advance_to(epoch + 1)
            while probe.less_than(inp.time):
                worker.step()
    return EPOCHS * PER_EPOCH


def read(directory):
    return ds.dataset(str(directory), format="parquet", partitioning="hive").to_table()


def metadata(directory, process=0):
    return json.loads((directory / f"process={process}" / "_process.json").read_text())


def per_worker(table, kind):
    rows = table.filter(pa.compute.equal(table["kind"], kind))
    return Counter(rows["worker"].to_pylist())


@pytest.mark.parametrize("workers", [1, 2])
def test_a_traced_run_writes_every_worker_s_events(tmp_path, workers):
    sent = timely.execute(exchange_main, workers=workers, trace_dir=tmp_path)
    assert sum(sent) == workers * EPOCHS * PER_EPOCH
    meta = metadata(tmp_path)
    assert meta["status"] == "complete" and meta["workers_per_process"] == workers
    table = read(tmp_path)
    assert set(table["worker"].to_pylist()) == set(range(workers))
    kinds = set(table["kind"].to_pylist())
    assert {"operator_created", "channel_created", "schedule_start", "schedule_stop",
            "message_send", "message_recv", "progress_send", "progress_recv",
            "activity_start", "activity_stop"} <= kinds
    # Records through the exchange channel: what was sent is what was received, and it is
    # everything the workers sent.
    created = table.filter(pa.compute.equal(table["kind"], "operator_created"))
    for worker in range(workers):
        mine = created.filter(pa.compute.equal(created["worker"], worker))
        assert {"Input", "Exchange", "Map", "Probe"} <= set(mine["name"].to_pylist())
    received = table.filter(pa.compute.equal(table["kind"], "message_recv"))
    sends = table.filter(pa.compute.equal(table["kind"], "message_send"))
    assert sum(received["records"].to_pylist()) == sum(sends["records"].to_pylist())
    assert sum(received["records"].to_pylist()) >= workers * EPOCHS * PER_EPOCH
    # Activities: every worker recorded build, feed and EPOCHS epochs, nested.
    starts = table.filter(pa.compute.equal(table["kind"], "activity_start"))
    for worker in range(workers):
        mine = starts.filter(pa.compute.equal(starts["worker"], worker))
        assert Counter(mine["name"].to_pylist()) == {"build": 1, "feed": 1, "epoch": EPOCHS}
    assert per_worker(table, "activity_start") == per_worker(table, "activity_stop")


def test_event_classes_switch_off(tmp_path):
    timely.execute(exchange_main, workers=2, trace_dir=tmp_path, trace_events="schedule,activities")
    kinds = set(read(tmp_path)["kind"].to_pylist())
    assert kinds <= {"schedule_start", "schedule_stop", "progress_push", "activity_start",
                     "activity_stop", "trace_wait"}
    assert {"schedule_start", "activity_start"} <= kinds
    assert metadata(tmp_path)["event_classes"] == ["schedule", "activities"]


def test_the_callback_sees_the_events_the_files_hold(tmp_path):
    batches = []
    timely.execute(exchange_main, workers=2, trace_dir=tmp_path,
                   trace_callback=lambda worker, batch: batches.append((worker, batch)))
    assert batches and all(isinstance(batch, pa.RecordBatch) for _, batch in batches)
    assert {worker for worker, _ in batches} == {0, 1}
    from_callback = Counter()
    for worker, batch in batches:
        from_callback.update((worker, kind) for kind in batch.column("kind").to_pylist())
    table = read(tmp_path)
    from_files = Counter(zip(table["worker"].to_pylist(), table["kind"].to_pylist()))
    assert from_callback == from_files


def test_a_callback_alone_writes_no_files(tmp_path):
    kinds = Counter()
    timely.execute(exchange_main, workers=1,
                   trace_callback=lambda worker, batch: kinds.update(batch.column("kind").to_pylist()))
    assert kinds["activity_start"] == EPOCHS + 2
    assert list(tmp_path.iterdir()) == []


def test_execute_from_args_takes_a_callback_with_and_without_files(tmp_path, monkeypatch):
    """The callback sink from the command line's entry point: alone it writes no files and
    honours TIMELY_TRACE_EVENTS; with --trace DIR it sees what the files hold."""
    monkeypatch.setenv("TIMELY_TRACE_EVENTS", "schedule,messages")
    alone = Counter()
    results = timely.execute_from_args(["-w", "2"], exchange_main,
                                       trace_callback=lambda worker, batch: alone.update(batch.column("kind").to_pylist()))
    assert results == [EPOCHS * PER_EPOCH] * 2 and list(tmp_path.iterdir()) == []
    assert alone["message_recv"] > 0 and alone["schedule_start"] > 0
    assert set(alone) <= {"schedule_start", "schedule_stop", "progress_push", "message_send", "message_recv",
                          "trace_wait"}
    monkeypatch.delenv("TIMELY_TRACE_EVENTS")
    both = Counter()
    timely.execute_from_args(["-w", "2", "--trace", str(tmp_path)], exchange_main,
                             trace_callback=lambda worker, batch: both.update(
                                 (worker, kind) for kind in batch.column("kind").to_pylist()))
    table = read(tmp_path)
    assert both == Counter(zip(table["worker"].to_pylist(), table["kind"].to_pylist()))


def test_execute_from_args_refuses_a_bad_flush_interval_for_a_callback(monkeypatch):
    monkeypatch.setenv("TIMELY_TRACE_FLUSH", "soon")
    with pytest.raises(ValueError, match="TIMELY_TRACE_FLUSH: expected a positive number of seconds"):
        timely.execute_from_args(["-w", "1"], exchange_main, trace_callback=lambda worker, batch: None)


def test_a_callback_that_raises_fails_the_run_with_its_exception():
    def callback(worker, batch):
        raise KeyError("no room for traces")

    with pytest.raises(KeyError, match="no room for traces"):
        timely.execute(exchange_main, workers=2, trace_callback=callback)


def test_an_untraced_run_records_activities_as_nothing():
    assert timely.execute(exchange_main, workers=2) == [EPOCHS * PER_EPOCH] * 2


def test_an_activity_cannot_be_entered_twice():
    def main(worker):
        activity = worker.activity("once")
        assert activity.name == "once" and repr(activity) == 'Activity("once")'
        with activity:
            with pytest.raises(RuntimeError, match="already running"):
                activity.__enter__()
        return True

    assert timely.execute(main) == [True]


@pytest.mark.parametrize("keywords, message", [
    ({"trace_events": "everything"}, "trace_dir or trace_callback"),
    ({"trace_dir": "x", "trace_events": "everything"}, "unknown trace event class"),
    ({"trace_dir": "x", "trace_flush": 0.0}, "positive number of seconds"),
    ({"trace_dir": "x", "trace_flush": float("nan")}, "positive number of seconds"),
])
def test_bad_trace_settings_are_clear_errors(keywords, message):
    with pytest.raises(ValueError, match=message):
        timely.execute(exchange_main, **keywords)


def test_an_unwritable_trace_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(RuntimeError, match="cannot start the trace"):
        timely.execute(exchange_main, trace_dir=blocker / "trace")


def test_an_example_traces_with_the_trace_flag(tmp_path):
    trace = tmp_path / "trace"
    done = subprocess.run([sys.executable, str(EXAMPLES / "wordcount.py"), "-w", "2", "--trace", str(trace)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    meta = metadata(trace)
    assert meta["status"] == "complete" and meta["program"].endswith("wordcount.py")
    assert set(read(trace)["worker"].to_pylist()) == {0, 1}


def test_the_launcher_traces_every_process(tmp_path):
    trace = tmp_path / "trace"
    done = subprocess.run(
        [sys.executable, "-m", "timely_py.launch", "-n", "2", "-w", "2", "--base-port", str(launcher_base_port(2)),
         "--trace", str(trace), str(EXAMPLES / "hello.py")],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for process in (0, 1):
        meta = metadata(trace, process)
        assert meta["status"] == "complete" and meta["processes"] == 2 and meta["process"] == process
    table = read(trace)
    assert set(table["worker"].to_pylist()) == {0, 1, 2, 3}
    kinds = table["kind"].to_pylist()
    # The network threads of both processes record the frames they move.
    assert kinds.count("network_send_start") > 0 and kinds.count("network_recv_end") > 0
    senders = {p for p, k in zip(table["process"].to_pylist(), kinds) if k == "network_send_start"}
    assert senders == {0, 1}


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_a_leave_is_traced_and_the_trace_validates(tmp_path):
    """examples/scale_in.py under the launcher: process 1's worker records its leave as the
    activity `rescale: leave`, and the validator knows that progress batches sent after it
    left were not meant for it (without that, thousands of them count as unmatched); the
    summary lists the leave with its duration."""
    from timely_py.trace import summary, validate

    trace = tmp_path / "trace"
    done = subprocess.run(
        [sys.executable, "-m", "timely_py.launch", "-n", "3", "-w", "1", "--base-port", str(launcher_base_port(3)),
         "--trace", str(trace), str(EXAMPLES / "scale_in.py"), "12", "4"],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    table = read(trace)
    kinds, names, workers = table["kind"].to_pylist(), table["name"].to_pylist(), table["worker"].to_pylist()
    left = {(w, k) for k, n, w in zip(kinds, names, workers) if n == "rescale: leave"}
    assert left == {(1, "activity_start"), (1, "activity_stop")}, left
    violations = validate(trace)
    assert violations == [], "\n".join(map(str, violations))
    phases = summary(trace).rescaling
    assert [(p.worker, p.name) for p in phases] == [(1, "rescale: leave")], phases
    assert phases[0].duration_ns is not None and phases[0].duration_ns > 0
    assert "joins and leaves:" in summary(trace).format()


EXAMPLE_NAMES = ["hello", "wordcount", "loops", "bfs"]
LAYOUTS = {
    "1 worker": ["-w", "1"],
    "2 workers": ["-w", "2"],
    "2 processes x 2 workers": ["--launch", "-n", "2", "-w", "2"],
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_traces_of_every_python_example_are_valid(tmp_path, example, layout):
    from timely_py.trace import read as read_trace
    from timely_py.trace import summary, validate

    trace = tmp_path / "trace"
    flags = LAYOUTS[layout]
    script = str(EXAMPLES / f"{example}.py")
    if flags[0] == "--launch":
        command = [sys.executable, "-m", "timely_py.launch", *flags[1:], "--base-port", str(launcher_base_port(2)),
                   "--trace", str(trace), script]
    else:
        command = [sys.executable, script, *flags, "--trace", str(trace)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert validate(trace) == []
    table = read_trace(trace, kinds=["operator_created"])
    workers = 4 if flags[0] == "--launch" else int(flags[1])
    assert set(table["worker"].to_pylist()) == set(range(workers))
