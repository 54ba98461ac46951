"""Trace directories for the trace tools' tests: real ones, written by the engine's Rust
examples run with `--trace DIR`, and hand-made ones written with pyarrow from a
list of rows, laid out as docs/trace-format.md says.

`crafted_rows()` is a small consistent trace of two processes with one worker each that
uses every event kind; tests change a row or two to break one property at a time.
"""

import copy
import itertools
import json
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from timely_py.trace import reader

from support.paths import RUST_EXAMPLES, built
from support.ports import free_ports

#: The documented columns of a trace file (docs/trace-format.md, "Columns").
FILE_SCHEMA = reader.FILE_SCHEMA

#: Process 1's clock runs this far ahead of process 0's in the crafted trace.
CRAFTED_OFFSET_NS = 5_000


def process_json(process, processes, workers_per_process, status="complete", offset_ns=0, **extra):
    """The metadata of one process, as the format documents it."""
    clock = {"offset_ns": offset_ns, "error_ns": 10, "measured_at_ns": 1_000}
    meta = {
        "format_version": 1,
        "engine_version": "0.1.0",
        "program": "crafted",
        "argv": ["crafted"],
        "process": process,
        "processes": processes,
        "workers_per_process": workers_per_process,
        "start_time_ns": 1_000,
        "flush_interval_ns": 1_000_000_000,
        "event_classes": ["operators", "schedule", "messages", "progress", "network", "park", "activities"],
        "status": status,
        "end_time_ns": 9_000_000,
        "clock": clock,
        "clock_history": [clock],
    }
    meta.update(extra)
    return meta


def write_trace(directory, rows, metas, parts_per_worker=1):
    """Writes `rows` (dicts with `process` and `worker` plus event columns) into a trace
    directory, each worker's rows in file order split over `parts_per_worker` files, and
    `metas` (process -> metadata dict) as the `_process.json` files. Returns the directory."""
    directory = Path(directory)
    for process, meta in metas.items():
        (directory / f"process={process}").mkdir(parents=True, exist_ok=True)
        (directory / f"process={process}" / "_process.json").write_text(json.dumps(meta))
    key = lambda row: (row["process"], row["worker"])  # noqa: E731
    for (process, worker), group in itertools.groupby(sorted(rows, key=key), key=key):
        events = [{k: v for k, v in row.items() if k not in ("process", "worker")} for row in group]
        folder = directory / f"process={process}" / f"worker={worker}"
        folder.mkdir(parents=True, exist_ok=True)
        size = -(-len(events) // parts_per_worker)
        for part in range(parts_per_worker):
            chunk = events[part * size : (part + 1) * size]
            pq.write_table(pa.Table.from_pylist(chunk, schema=FILE_SCHEMA), folder / f"part-{part:06d}.parquet")
    return directory


def crafted_metas(status=("complete", "complete"), offset_ns=CRAFTED_OFFSET_NS):
    return {p: process_json(p, 2, 1, status=status[p], offset_ns=p * offset_ns) for p in (0, 1)}


def _event(process, time_ns, kind, **columns):
    return {"process": process, "worker": process, "time_ns": time_ns, "kind": kind, **columns}


def crafted_rows(offset_ns=CRAFTED_OFFSET_NS):
    """Worker 0 (process 0) runs `Source`, which sends one message to worker 1 (process 1)
    inside user activities, broadcasts one progress batch, parks and is woken; worker 1 runs
    `Sink`, which receives both. Network events link the two processes. Process 1's clock is
    `offset_ns` ahead of process 0's."""
    message = dict(channel=0, source_worker=0, target_worker=1, seq=0)
    progress = dict(channel=1, address=[0], source_worker=0, seq=0, records=2)
    rows = []
    for w in (0, 1):
        t = 1_000 + w * offset_ns
        rows += [
            _event(w, t, "operator_created", operator=0, address=[0], name="Dataflow"),
            _event(w, t + 10, "operator_created", operator=1, address=[0, 1], name="Source"),
            _event(w, t + 20, "operator_created", operator=2, address=[0, 2], name="Sink"),
            _event(w, t + 30, "channel_created", channel=0, channel_kind="data", address=[0],
                   source_operator=1, source_port=0, target_operator=2, target_port=0),
            _event(w, t + 40, "channel_created", channel=1, channel_kind="progress", address=[0]),
        ]  # fmt: skip
    t0, t1 = 2_000, 2_000 + offset_ns
    rows += [
        _event(0, t0, "activity_start", name="outer"),
        _event(0, t0 + 100, "schedule_start", operator=0),
        _event(0, t0 + 110, "schedule_start", operator=1),
        _event(0, t0 + 120, "activity_start", name="inner"),
        _event(0, t0 + 130, "message_send", records=3, **message),
        _event(0, t0 + 140, "activity_stop", name="inner"),
        _event(0, t0 + 150, "schedule_stop", operator=1, useful=True),
        _event(0, t0 + 160, "schedule_stop", operator=0, useful=True),
        _event(0, t0 + 170, "progress_send", **progress),
        _event(0, t0 + 175, "progress_recv", target_worker=0, **progress),
        _event(0, t0 + 180, "network_send_start", channel_kind="data", bytes=40, **message),
        _event(0, t0 + 190, "network_send_start", channel=1, channel_kind="progress", source_worker=0,
               target_worker=1, seq=0, bytes=32),
        _event(0, t0 + 200, "trace_wait", duration_ns=5),
        _event(0, t0 + 300, "park", duration_ns=1_000),
        _event(0, t0 + 400, "unpark", wake="timeout"),
        _event(0, t0 + 500, "activity_stop", name="outer"),
        _event(0, t0 + 600, "operator_shutdown", operator=1),
        _event(1, t1 + 250, "network_recv_end", channel_kind="data", bytes=40, **message),
        _event(1, t1 + 260, "network_recv_end", channel=1, channel_kind="progress", source_worker=0,
               target_worker=1, seq=0, bytes=32),
        _event(1, t1 + 300, "schedule_start", operator=2),
        _event(1, t1 + 310, "message_recv", records=3, **message),
        _event(1, t1 + 320, "schedule_stop", operator=2, useful=True),
        _event(1, t1 + 330, "progress_recv", target_worker=1, **progress),
        _event(1, t1 + 340, "progress_push", operator=2),
    ]  # fmt: skip
    return rows


def write_crafted(directory, rows=None, metas=None, **options):
    """The crafted trace (or `rows`/`metas` derived from it) written to `directory`."""
    rows = crafted_rows() if rows is None else rows
    metas = crafted_metas() if metas is None else metas
    return write_trace(directory, copy.deepcopy(rows), metas, **options)


def start_traced(program, directory, args, processes=1, flush_seconds=None):
    """Starts the Rust example `program` (hello, wordcount, loops, exchange) with `args`,
    traced into `directory`, as `processes` processes on loopback; returns the Popen objects.
    Process p's standard output goes to the file `output_file(directory, p)`."""
    binary = built(RUST_EXAMPLES / program)
    env = dict(os.environ, TIMELY_CLUSTER_SECRET="trace-tests")
    for variable in ("TIMELY_TRACE_DIR", "TIMELY_TRACE_EVENTS", "TIMELY_TRACE_FLUSH"):
        env.pop(variable, None)
    args = [*args, "--trace", str(directory)]
    if flush_seconds is not None:
        args += ["--trace-flush", str(flush_seconds)]
    commands = [[str(binary), *args]]
    if processes > 1:
        hostfile = Path(directory).parent / f"{Path(directory).name}.hosts"
        hostfile.write_text("".join(f"127.0.0.1:{port}\n" for port in free_ports(processes)))
        cluster = ["-n", str(processes), "-h", str(hostfile)]
        commands = [[str(binary), *args, *cluster, "-p", str(p)] for p in range(processes)]
    procs = []
    for process, command in enumerate(commands):
        with open(output_file(directory, process), "w") as output:
            procs.append(subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.PIPE))
    return procs


def output_file(directory, process):
    """Where `start_traced` writes the standard output of `process`."""
    return Path(directory).parent / f"{Path(directory).name}.stdout-{process}"


def run_traced(program, directory, args, processes=1):
    """Runs a traced example to completion (at most 120 s); returns the trace directory."""
    procs = start_traced(program, directory, args, processes)
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    return Path(directory)
