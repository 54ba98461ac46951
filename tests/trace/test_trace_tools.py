"""timely_py.trace on real traces: the engine's examples run traced (1 worker, 2 workers,
2 processes, and a 2-process run killed with SIGKILL), read with each filter, validated,
summarised and exported for Perfetto, through the Python API and the `timely-py` script."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import timely_py as timely
import timely_py.trace as trace
from support.paths import RUST_EXAMPLES, built
from support.tracedirs import output_file, run_traced, start_traced
from timely_py.cli import main as cli_main

SCRIPT = Path(sys.executable).parent / "timely-py"


@pytest.fixture(scope="session")
def programs():
    """The engine's Rust examples (scripts/test.sh builds them)."""
    for program in PROGRAMS:
        built(RUST_EXAMPLES / program)


#: The layouts every example runs in: (arguments, processes).
LAYOUTS = {"1w": (["-w", "1"], 1), "2w": (["-w", "2"], 1), "2p": (["-w", "2"], 2)}
#: The examples and their own arguments (exchange: a record count that 4 workers do not
#: share evenly, so each receives its own number).
PROGRAMS = {"hello": ["30", "--quiet"], "wordcount": ["3", "40"], "loops": ["200", "1000"], "exchange": ["2001", "3"]}
#: name -> (program, arguments, processes): every example in every layout, and hello on 2
#: processes of 1 worker.
RUNS = {
    f"{program}-{layout}": (program, PROGRAMS[program] + LAYOUTS[layout][0], LAYOUTS[layout][1])
    for program in PROGRAMS
    for layout in LAYOUTS
}
RUNS["hello-2p1w"] = ("hello", ["30", "-w", "1", "--quiet"], 2)
#: program -> (the operator whose input channel's records are counted, the line of the
#: program's output that reports them, whether each process reports its own share; if not,
#: process 0 reports them all).
REPORTS = {
    "hello": ("Exchange", r"^(\d+) rounds in", False),
    "wordcount": ("WordCount", r"^epoch \d+: (\d+) words", False),
    "loops": ("Exchange", r"^(\d+) of \d+ nodes reached", False),
    "exchange": ("Exchange", r"^\d+ workers: (\d+) records received", True),
}


@pytest.fixture(scope="session")
def traces(programs, tmp_path_factory):
    """Every run of RUNS, traced into its own directory."""
    base = tmp_path_factory.mktemp("traces")
    return {name: run_traced(program, base / name, args, processes) for name, (program, args, processes) in RUNS.items()}


def workers_of(name):
    _, args, processes = RUNS[name]
    return processes * int(args[args.index("-w") + 1])


# --- read -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RUNS))
def test_read_returns_every_worker_sorted_by_worker_then_time(traces, name):
    table = trace.read(traces[name])
    assert table.schema.names == trace.SCHEMA.names
    workers, times = table.column("worker").to_pylist(), table.column("time_ns").to_pylist()
    assert sorted(set(workers)) == list(range(workers_of(name)))
    assert list(zip(workers, times)) == sorted(zip(workers, times))
    kinds = Counter(table.column("kind").to_pylist())
    assert kinds["schedule_start"] == kinds["schedule_stop"] > 0
    assert kinds["message_send"] == kinds["message_recv"] > 0


def test_read_filters_by_process_worker_kind_and_time(traces):
    path = traces["hello-2p"]
    everything = trace.read(path)
    assert set(trace.read(path, processes=[1]).column("process").to_pylist()) == {1}
    assert set(trace.read(path, processes=[1]).column("worker").to_pylist()) == {2, 3}
    assert set(trace.read(path, workers=[0, 3]).column("worker").to_pylist()) == {0, 3}
    assert trace.read(path, processes=[0], workers=[3]).num_rows == 0
    sends = trace.read(path, kinds=["message_send", "park"])
    assert set(sends.column("kind").to_pylist()) == {"message_send", "park"}
    expected = sum(1 for k in everything.column("kind").to_pylist() if k in ("message_send", "park"))
    assert sends.num_rows == expected
    times = sorted(everything.column("time_ns").to_pylist())
    start, end = times[len(times) // 4], times[3 * len(times) // 4]
    window = trace.read(path, start_ns=start, end_ns=end).column("time_ns").to_pylist()
    assert window and all(start <= t < end for t in window)
    assert len(window) == sum(1 for t in times if start <= t < end)


def test_read_selects_columns_and_keeps_the_ordering_columns(traces):
    table = trace.read(traces["hello-2w"], columns=["kind", "operator"])
    assert table.schema.names == ["time_ns", "kind", "operator", "process", "worker"]
    with pytest.raises(ValueError, match="unknown trace columns"):
        trace.read(traces["hello-2w"], columns=["no_such_column"])


def test_metadata_describes_each_process(traces):
    meta = trace.metadata(traces["hello-2p"])
    assert sorted(meta) == [0, 1]
    assert all(m["status"] == "complete" and m["processes"] == 2 and m["workers_per_process"] == 2 for m in meta.values())


# --- validate, summary ------------------------------------------------------------------


def nested_activities(worker):
    """A Python dataflow fed inside nested user activities."""
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        scope.input_from(inp).exchange(lambda x: x).map(lambda x: x + 1).probe_with(probe)
    with worker.activity("feed"):
        for epoch in range(5):
            with worker.activity("epoch"):
                inp.send_batch(list(range(20)))
            inp.advance_to(epoch + 1)
            while probe.less_than(inp.time):
                worker.step()


def test_a_python_traced_run_has_no_violations_and_exports_nested_activities(tmp_path):
    timely.execute(nested_activities, workers=2, trace_dir=tmp_path)
    assert trace.validate(tmp_path) == []
    slices = [e for e in trace.perfetto_events(tmp_path) if e["ph"] == "X"]
    for worker in (0, 1):
        mine = [e for e in slices if e["tid"] == worker]
        assert Counter(e["name"] for e in mine if e["cat"] == "activity") == {"feed": 1, "epoch": 5}
        assert slices_nest(mine)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_real_traces_have_no_violations(traces, name):
    assert [str(v) for v in trace.validate(traces[name])] == []


def records_into(path, name):
    """Records received, over all workers, on the data channels into the operators named
    `name` (found through worker 0's operator_created and channel_created events)."""
    created = trace.read(path, workers=[0], kinds=["operator_created", "channel_created"]).to_pylist()
    targets = [r["address"] for r in created if r["kind"] == "operator_created" and r["name"] == name]
    channels = {
        r["channel"]
        for r in created
        if r["kind"] == "channel_created" and r["channel_kind"] == "data"
        and any(r["address"] == t[:-1] and r["target_operator"] == t[-1] for t in targets)
    }  # fmt: skip
    assert targets and channels, (name, targets, channels)
    received = trace.read(path, kinds="message_recv", columns=["channel", "records"]).to_pylist()
    return sum(r["records"] for r in received if r["channel"] in channels)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_records_received_sum_to_what_the_program_reports(traces, name):
    program, _, processes = RUNS[name]
    operator, pattern, each_process = REPORTS[program]
    outputs = [output_file(traces[name], p).read_text() for p in range(processes if each_process else 1)]
    reported = [int(n) for text in outputs for n in re.findall(pattern, text, flags=re.MULTILINE)]
    assert reported, outputs
    assert sum(reported) == records_into(traces[name], operator)


def test_summary_counts_what_read_returns(traces):
    path = traces["hello-2p1w"]
    table = trace.read(path)
    result = trace.summary(path)
    assert result.events_per_kind == dict(Counter(table.column("kind").to_pylist()))
    assert result.events == table.num_rows
    assert [w.worker for w in result.workers] == [0, 1]
    assert [w.events for w in result.workers] == [table.column("worker").to_pylist().count(w) for w in (0, 1)]
    files = list(path.glob("process=*/worker=*/part-*.parquet"))
    assert result.files == len(files) and result.bytes == sum(f.stat().st_size for f in files)
    assert result.processes == {0: "complete", 1: "complete"}
    assert result.duration_ns > 0


def test_the_console_script_summarises_and_validates(traces):
    path = str(traces["hello-2w"])
    summary = subprocess.run([str(SCRIPT), "trace", "summary", path], capture_output=True, text=True, check=True)
    counts = Counter(trace.read(path).column("kind").to_pylist())
    lines = summary.stdout.splitlines()
    assert f"{sum(counts.values())} events" in lines[1]
    row = next(line for line in lines if line.startswith("schedule_start"))
    assert row.split() == ["schedule_start", str(counts["schedule_start"])]
    checked = subprocess.run([str(SCRIPT), "trace", "validate", path], capture_output=True, text=True)
    assert (checked.returncode, checked.stdout.strip()) == (0, "no violations")


def test_the_console_script_reports_a_bad_directory(tmp_path, capsys):
    assert cli_main(["trace", "summary", str(tmp_path / "missing")]) == 2
    assert "no trace directory" in capsys.readouterr().err
    assert cli_main(["trace", "validate", str(tmp_path)]) == 2
    assert "not a trace directory" in capsys.readouterr().err


# --- a run killed mid-way ---------------------------------------------------------------


def test_a_killed_run_leaves_complete_files_and_validates_as_incomplete(programs, tmp_path):
    path = tmp_path / "killed"
    procs = start_traced("hello", path, ["100000000", "-w", "2", "--quiet"], processes=2, flush_seconds=0.05)
    try:
        deadline = time.monotonic() + 60
        while len(list(path.glob("process=1/worker=*/part-*.parquet"))) < 4:
            assert time.monotonic() < deadline, "no trace files appeared"
            assert all(p.poll() is None for p in procs), "the run ended early"
            time.sleep(0.05)
        procs[1].send_signal(signal.SIGKILL)
        procs[1].wait(timeout=10)
        procs[0].wait(timeout=60)  # process 0 stops: its peer is lost
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for file in path.glob("process=*/worker=*/part-*.parquet"):
        assert pq.read_table(file).num_rows > 0, file
    meta = trace.metadata(path)
    assert meta[1]["status"] == "running"
    assert meta[0]["status"] == "failed"
    violations = trace.validate(path)
    kinds = Counter(v.kind for v in violations)
    assert kinds["incomplete run"] == 1 and kinds["failed run"] == 1
    assert not {"unmatched send", "unmatched receive", "unreadable file", "part gap"} & set(kinds)
    assert trace.read(path).num_rows > 0
    assert trace.summary(path).processes == {0: "failed", 1: "running"}


# --- Perfetto export --------------------------------------------------------------------


def slices_nest(slices):
    """Whether the complete events of one track are pairwise nested or disjoint."""
    open_ends = []
    for event in sorted(slices, key=lambda e: (e["ts"], -e["dur"])):
        while open_ends and open_ends[-1] <= event["ts"] + 1e-6:
            open_ends.pop()
        end = event["ts"] + event["dur"]
        if open_ends and end > open_ends[-1] + 1e-6:
            return False
        open_ends.append(end)
    return True


@pytest.mark.parametrize("name", ["wordcount-2w", "loops-2w", "hello-2p", "wordcount-2p", "loops-2p"])
def test_the_perfetto_export_is_trace_event_json_whose_slices_nest(traces, tmp_path, name):
    output = tmp_path / "run.json"
    status = cli_main(["trace", "export", str(traces[name]), "--format", "perfetto", "-o", str(output)])
    assert status == 0
    document = json.loads(output.read_text())
    assert document["displayTimeUnit"] == "ns"
    events = document["traceEvents"]
    assert all(e["ph"] in {"X", "s", "f", "M", "i"} and isinstance(e["pid"], int) for e in events)
    table = trace.read(traces[name])
    tracks = defaultdict(list)
    for event in events:
        if event["ph"] == "X":
            assert event["dur"] >= 0 and event["ts"] >= 0 and event["name"]
            tracks[(event["pid"], event["tid"])].append(event)
    assert sorted(tracks) == sorted(set(zip(table.column("process").to_pylist(), table.column("worker").to_pylist())))
    assert all(slices_nest(slices) for slices in tracks.values())
    kinds = Counter(table.column("kind").to_pylist())
    named = Counter(e["cat"] for slices in tracks.values() for e in slices)
    assert named["operator"] == kinds["schedule_start"] and named["idle"] == kinds["park"]
    created = {r["name"] for r in table.to_pylist() if r["kind"] == "operator_created"}
    assert {e["name"] for e in events if e.get("cat") == "operator"} <= created
    assert_flows(events, kinds, trace.metadata(traces[name]))
    names = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == set(tracks)


def assert_flows(events, kinds, processes):
    """One flow per data message and per progress batch's receiver, from the sender's track
    to the receiver's, not going back by more than the clocks' error bounds."""
    flows = defaultdict(dict)
    for event in events:
        if event["ph"] in "sf":
            assert event["ph"] not in flows[event["id"]]
            flows[event["id"]][event["ph"]] = event
    by_category = Counter(pair["s"]["cat"] for pair in flows.values())
    assert by_category == {"message": kinds["message_send"], "progress": kinds["progress_recv"]}
    per_process = processes[0]["workers_per_process"]
    batches = Counter(
        tuple(pair["s"]["args"][k] for k in ("channel", "source_worker", "seq"))
        for pair in flows.values()
        if pair["s"]["cat"] == "progress"
    )
    assert len(batches) == kinds["progress_send"]
    assert set(batches.values()) == {per_process * len(processes)}  # every worker receives every batch
    slack = max(m["clock"]["error_ns"] for m in processes.values()) / 1000 + 1e-3
    for pair in flows.values():
        send, receive = pair["s"], pair["f"]
        assert receive["bp"] == "e" and send["cat"] == receive["cat"]
        assert send["tid"] == send["args"]["source_worker"] and receive["tid"] == send["args"]["target_worker"]
        assert (send["pid"], receive["pid"]) == (send["tid"] // per_process, receive["tid"] // per_process)
        assert receive["ts"] >= send["ts"] - slack, pair


def test_process_module_runs_the_cli(traces):
    result = subprocess.run(
        [sys.executable, "-m", "timely_py.cli", "trace", "validate", str(traces["hello-1w"])],
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    assert (result.returncode, result.stdout.strip()) == (0, "no violations")


# --- network events ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hello-2p", "wordcount-2p", "exchange-2p", "hello-2p1w"])
def test_every_message_that_crosses_processes_has_its_network_events_in_order(traces, name):
    """Each data message and progress batch sent to another process is framed once: its
    network_send_start follows its send on the sender, its network_recv_end precedes its
    receive on the receiver (same process, same clock), and the frames carry bytes."""
    table = trace.read(traces[name])
    per_process = trace.metadata(traces[name])[0]["workers_per_process"]
    rows = defaultdict(list)
    for row in table.to_pylist():
        rows[row["kind"]].append(row)
    assert rows["network_send_start"] and all(r["bytes"] > 0 for r in rows["network_send_start"])
    process_of = lambda worker: worker // per_process  # noqa: E731
    sent = {(r["channel"], r["source_worker"], r["target_worker"], r["seq"]): r for r in rows["network_send_start"]}
    received = {(r["channel"], r["source_worker"], r["target_worker"], r["seq"]): r for r in rows["network_recv_end"]}
    assert len(sent) == len(rows["network_send_start"]) and len(received) == len(rows["network_recv_end"])
    crossing = [r for r in rows["message_send"] if process_of(r["source_worker"]) != process_of(r["target_worker"])]
    for message in crossing:
        key = (message["channel"], message["source_worker"], message["target_worker"], message["seq"])
        assert sent[key]["channel_kind"] == "data" and message["time_ns"] <= sent[key]["time_ns"], key
    arrivals = {(r["channel"], r["source_worker"], r["target_worker"], r["seq"]): r for r in rows["message_recv"]}
    for key, frame in received.items():
        if frame["channel_kind"] == "data":
            assert frame["time_ns"] <= arrivals[key]["time_ns"], key
    workers = workers_of(name)
    for batch in rows["progress_send"]:
        remote = {process_of(w) for w in range(workers)} - {process_of(batch["source_worker"])}
        for process in remote:
            key = (batch["channel"], batch["source_worker"], process * per_process, batch["seq"])
            assert sent[key]["channel_kind"] == "progress" and batch["time_ns"] <= sent[key]["time_ns"], key
    data_frames = sum(1 for r in rows["network_send_start"] if r["channel_kind"] == "data")
    assert data_frames == len(crossing)


def test_the_network_class_switches_network_events_off(programs, tmp_path):
    path = run_traced("hello", tmp_path / "t", ["30", "--quiet", "-w", "2", "--trace-events", "all,-network"], 2)
    kinds = Counter(trace.read(path, columns=["kind"]).column("kind").to_pylist())
    assert kinds["progress_send"] > 0 and kinds["network_send_start"] == kinds["network_recv_end"] == 0
    assert trace.validate(path) == []
