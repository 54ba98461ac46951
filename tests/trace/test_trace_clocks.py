"""Clock offsets in a traced cluster run: process 1 measures its clock against process 0's
over the cluster's own connection, at start and then every clock interval
(`TIMELY_CLOCK_INTERVAL`, default 10 s), and its `_process.json` records every measurement.
Both processes run on this machine, on one clock, so every measured offset must lie within
its error bound; process 0 is the reference and keeps offset 0, error 0."""

import json
import os
import subprocess
import sys

from support.paths import CLUSTER_SCRIPTS, ROOT
from support.ports import launcher_base_port

ROUNDS = CLUSTER_SCRIPTS / "rounds.py"
#: The largest error accepted between two processes on loopback, even on a loaded machine.
MAX_ERROR_NS = 50_000_000


def traced_cluster(trace, base_port, rounds, interval=None):
    """Runs rounds.py (ROUNDS rounds of 20 ms) on 2 traced processes; returns each one's metadata."""
    env = dict(os.environ)
    env.pop("TIMELY_CLOCK_INTERVAL", None)
    if interval is not None:
        env["TIMELY_CLOCK_INTERVAL"] = str(interval)
    done = subprocess.run(
        [sys.executable, "-m", "timely_py.launch", "-n", "2", "-w", "1", "--base-port", str(base_port),
         "--trace", str(trace), str(ROUNDS), str(rounds), "0.02"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    return [json.loads((trace / f"process={p}" / "_process.json").read_text()) for p in (0, 1)]


def assert_measured(sample):
    assert 0 < sample["error_ns"] < MAX_ERROR_NS, sample
    assert abs(sample["offset_ns"]) <= sample["error_ns"], sample


def test_process_1_records_a_measurement_every_clock_interval(tmp_path):
    zero, one = traced_cluster(tmp_path / "trace", launcher_base_port(2), rounds=75, interval=0.25)
    history = one["clock_history"]
    # About 1.5 s of rounds at 0.25 s: several measurements, whatever the machine's load.
    assert len(history) >= 2, history
    for sample in history:
        assert_measured(sample)
    times = [sample["measured_at_ns"] for sample in history]
    assert times == sorted(times) and len(set(times)) == len(times), times
    assert one["start_time_ns"] <= times[0] <= times[-1] <= one["end_time_ns"]
    assert one["clock"] == history[-1]
    assert zero["clock"]["offset_ns"] == 0 and zero["clock"]["error_ns"] == 0
    assert zero["clock_history"] == []


def test_by_default_a_short_run_is_measured_once_at_start(tmp_path):
    zero, one = traced_cluster(tmp_path / "trace", launcher_base_port(2), rounds=25)
    assert len(one["clock_history"]) == 1, one["clock_history"]
    assert_measured(one["clock"])
    assert one["clock"] == one["clock_history"][0]
    assert zero["clock"]["offset_ns"] == 0 and zero["clock"]["error_ns"] == 0
