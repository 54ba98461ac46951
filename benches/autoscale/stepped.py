"""Runs of `stepped_job.py` (the rate-step workload of the autoscaling experiments) under
each way of sizing the cluster, and what they cost: this module owns launching a run,
the stop-and-restart driver, reading a run's deliveries back (each record committed once,
by the run whose epoch it was) and the measures the experiments report.

Definitions (docs/autoscaling.md, "Measured"):

* a record is *offered* at its epoch's time on the schedule, ``t0 + epoch x 0.1 s``, and
  *delivered* when the map that waited for it appended it to its worker's file; its latency
  is the difference. Under stop-and-restart, a run's deliveries count for the epochs it
  *committed*: from the epoch it started at to the first epoch it had not delivered
  completely when it was killed (the epoch the next run replays from); the rest are
  discarded and delivered again by the next run;
* *time above target*: the length of the union of ``[offered + target, delivered]`` over
  the epochs, i.e. the time during which some record had waited longer than the target;
* *records delayed*: records whose latency exceeds the target;
* *process-seconds*: each process's lifetime (start of its interpreter to its exit or kill)
  clipped to ``[t0, last delivery]``.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "benches" / "autoscale" / "stepped_job.py"
EPOCH = 0.1


def schedule_of(spec: str) -> List[int]:
    """Records per epoch of ``RATE:SECONDS,...`` (as `stepped_job.py` computes it)."""
    epochs: List[int] = []
    for phase in spec.split(","):
        rate, seconds = (float(v) for v in phase.split(":"))
        epochs += [int(rate * EPOCH)] * int(round(seconds / EPOCH))
    return epochs


def phase_bounds(spec: str) -> List[float]:
    """The start of each phase, in seconds since t0, and the schedule's end."""
    bounds = [0.0]
    for phase in spec.split(","):
        bounds.append(bounds[-1] + float(phase.split(":")[1]))
    return bounds


def launch(out: Path, processes: int, mode: str, *, spec: str, sleep: float, low: int, high: int, base_port: int,
           t0: float = 0.0, start_epoch: int = 0, run: int = 0, observed: bool = False,
           extra: Sequence[str] = ()) -> subprocess.Popen:
    """Starts one run of the job under the launcher, in a session of its own (to kill it whole)."""
    # 0: ports the OS says are free, in a hostfile of this run's own. Not the launcher's
    # default range: other launchers (tests beside this one) pick free ports there too, and
    # one could take a port between this run's check and its processes' binds.
    ports = ["--base-port", str(base_port)] if base_port else ["--hostfile", str(free_hostfile(out, high + 4))]
    command = [sys.executable, "-m", "timely_py.launch", "-n", str(processes), *ports,
               "--max-processes", str(high + 4), str(JOB), "--out", str(out), "--mode", mode, "--schedule", spec,
               "--sleep", str(sleep), "--min", str(low), "--max", str(high), "--t0", f"{t0:.6f}",
               "--start-epoch", str(start_epoch), "--run", str(run)] + (["--observed"] if observed else []) + list(extra)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]))
    path = out / f"launcher-{run}.log"
    with open(path, "w") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    process.log_path = path  # type: ignore[attr-defined]
    return process


def free_hostfile(out: Path, count: int) -> Path:
    """A hostfile in `out` with `count` loopback ports the OS reports free."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        ports = [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    path = out / "hostfile"
    path.write_text("".join(f"127.0.0.1:{port}\n" for port in ports))
    return path


def wait(process: subprocess.Popen, timeout: float) -> None:
    """Waits for a run; on failure or timeout the error carries the end of its launcher log."""
    try:
        rc = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise RuntimeError(f"a run took more than {timeout:.0f} s{log_tail(process)}")
    if rc != 0:
        raise RuntimeError(f"a run failed ({rc}){log_tail(process)}")


def log_tail(process: subprocess.Popen, size: int = 3000) -> str:
    """The last `size` characters of the launcher log `launch` gave `process`."""
    path: Optional[Path] = getattr(process, "log_path", None)
    if path is None or not path.exists():
        return ""
    return f"; the end of {path.name}:\n" + path.read_text(errors="replace")[-size:]


def run_plain(out: Path, processes: int, mode: str, *, timeout: float = 300, **job: Any) -> Dict[str, Any]:
    """A fixed cluster (`mode="fixed"`) or the live autoscaler (`"auto"`), one run."""
    out.mkdir(parents=True, exist_ok=True)
    wait(launch(out, processes, mode, **job), timeout)
    t0 = float((out / "t0").read_text())
    return {"t0": t0, "runs": [{"run": 0, "start_epoch": 0, "processes": processes, "ended": time.time()}]}


def run_restart(out: Path, processes: int, *, spec: str, timeout: float = 300, **job: Any) -> Dict[str, Any]:
    """Stop-and-restart rescaling: a run with the autoscaler in metrics-only mode; at its
    first decision to change the count the driver kills the run (every process, SIGKILL) and
    starts a new one with the count decided, replaying from the first epoch the killed run
    had not delivered completely; the schedule goes on meanwhile (records fall due during the
    outage and are fed at once by the next run)."""
    out.mkdir(parents=True, exist_ok=True)
    schedule = schedule_of(spec)
    runs: List[Dict[str, Any]] = []
    t0, start_epoch, run, deadline = 0.0, 0, 0, time.monotonic() + timeout
    base_port = job.pop("base_port")
    while True:
        began = time.time()
        child = launch(out, processes, "restart", spec=spec, t0=t0, start_epoch=start_epoch, run=run,
                       base_port=base_port + 10 * (run % 8) if base_port else 0, **job)
        marker = out / f"restart-{run}"
        entry: Dict[str, Any] = {"run": run, "start_epoch": start_epoch, "processes": processes, "began": began}
        while child.poll() is None and not marker.exists():
            if time.monotonic() > deadline:
                os.killpg(child.pid, signal.SIGKILL)
                raise RuntimeError("stop-and-restart took longer than its timeout")
            time.sleep(0.02)
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            entry["ended"] = entry["killed"] = time.time()
            entry["decided"] = marker.read_text().split()[1:]
        else:
            wait(child, 1)
            entry["ended"] = time.time()
        if not t0:
            t0 = float((out / "t0").read_text())
        runs.append(entry)
        if "killed" not in entry:
            break
        delivered = read_run(out, run)
        start_epoch = first_incomplete(schedule, delivered, start_epoch)
        entry["replay_from"] = start_epoch
        processes = int(entry["decided"][0])
        run += 1
        if start_epoch >= len(schedule):
            break
    return {"t0": t0, "runs": runs}


def read_run(out: Path, run: int) -> Dict[int, List[float]]:
    """Every delivery of run `run`: record -> the times it was delivered (complete lines only)."""
    delivered: Dict[int, List[float]] = {}
    for name in glob.glob(str(out / f"delivered-{run}-w*.log")):
        for line in Path(name).read_text().split("\n")[:-1]:
            parts = line.split()
            if len(parts) == 2:
                delivered.setdefault(int(parts[0]), []).append(float(parts[1]))
    return delivered


def first_incomplete(schedule: Sequence[int], delivered: Dict[int, List[float]], start: int) -> int:
    """The first epoch from `start` on with a record that `delivered` lacks."""
    record = sum(schedule[:start])
    for epoch in range(start, len(schedule)):
        for x in range(record, record + schedule[epoch]):
            if x not in delivered:
                return epoch
        record += schedule[epoch]
    return len(schedule)


def committed(out: Path, spec: str, runs: List[Dict[str, Any]]) -> Dict[int, float]:
    """Record -> delivery time of the copy that counts, checking that each record was
    delivered exactly once by the run that committed its epoch."""
    schedule = schedule_of(spec)
    offsets = [0]
    for count in schedule:
        offsets.append(offsets[-1] + count)
    result: Dict[int, float] = {}
    for index, entry in enumerate(runs):
        stop = runs[index + 1]["start_epoch"] if index + 1 < len(runs) else entry.get("replay_from", len(schedule))
        delivered = read_run(out, entry["run"])
        for x in range(offsets[entry["start_epoch"]], offsets[stop]):
            times = delivered.get(x, [])
            if len(times) != 1:
                raise AssertionError(f"record {x} was delivered {len(times)} times by run {entry['run']}")
            result[x] = times[0]
    if sorted(result) != list(range(offsets[-1])):
        raise AssertionError("a record of the schedule was never delivered")
    return result


def lifetimes(out: Path, runs: List[Dict[str, Any]]) -> List[List[float]]:
    """``[start, end]`` of every process of every run; a process without an end (killed)
    ends when its run was seen to end."""
    result = []
    for entry in runs:
        starts: Dict[str, float] = {}
        ends: Dict[str, float] = {}
        path = out / f"processes-{entry['run']}.log"
        for line in path.read_text().splitlines():
            pid, what, at = line.split()
            (starts if what == "start" else ends)[pid] = float(at)
        for pid, start in starts.items():
            result.append([start, min(ends.get(pid, entry["ended"]), entry["ended"])])
    return result


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(out: Path, spec: str, result: Dict[str, Any], target: float) -> Dict[str, Any]:
    """The measures of one strategy's run(s) (the module's definitions)."""
    schedule = schedule_of(spec)
    t0, runs = result["t0"], result["runs"]
    times = committed(out, spec, runs)
    epoch_of: List[int] = []
    for epoch, count in enumerate(schedule):
        epoch_of += [epoch] * count
    latency = {x: t - (t0 + epoch_of[x] * EPOCH) for x, t in times.items()}
    end = max(times.values())
    late: List[List[float]] = []
    for epoch in range(len(schedule)):
        records = [x for x in range(sum(schedule[:epoch]), sum(schedule[: epoch + 1]))]
        if records:
            done = max(times[x] for x in records)
            if done > t0 + epoch * EPOCH + target:
                late.append([t0 + epoch * EPOCH + target, done])
    above = union_length(late)
    process_seconds = sum(max(0.0, min(e, end) - max(s, t0)) for s, e in lifetimes(out, runs))
    bounds = phase_bounds(spec)
    phases = []
    for index in range(len(bounds) - 1):
        inside = [latency[x] for x in latency if bounds[index] <= epoch_of[x] * EPOCH < bounds[index + 1]]
        phases.append({"start": bounds[index], "p50": percentile(inside, 0.5), "p99": percentile(inside, 0.99),
                       "max": max(inside) if inside else float("nan")})
    seconds = int(bounds[-1])
    timeline = []
    for second in range(seconds):
        inside = [latency[x] for x in latency if second <= epoch_of[x] * EPOCH < second + 1]
        timeline.append(percentile(inside, 0.99) if inside else None)
    outages = []
    for index, entry in enumerate(runs[:-1]):
        following = read_run(out, runs[index + 1]["run"])
        first = min(min(v) for v in following.values()) if following else end
        outages.append([entry["killed"] - t0, first - t0])
    return {
        "records": len(times), "above_target_s": above, "process_seconds": process_seconds,
        "delayed": sum(1 for v in latency.values() if v > target), "span_s": end - t0, "phases": phases,
        "p99_per_second": timeline, "processes": step_function(lifetimes(out, runs), t0, end),
        "restarts": len(runs) - 1, "outages": outages,
        "events": events(out, runs),
    }


def union_length(intervals: List[List[float]]) -> float:
    """The length of the union of `intervals`."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total


def step_function(spans: List[List[float]], t0: float, end: float) -> List[List[float]]:
    """``[seconds since t0, processes alive]`` at each change, clipped to ``[t0, end]``."""
    changes = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    alive, points = 0, []
    for at, delta in changes:
        alive += delta
        points.append([max(0.0, min(at, end) - t0), alive])
    return points


def events(out: Path, runs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The decisions and membership changes the runs logged, in seconds since t0."""
    result = []
    for entry in runs:
        path = out / f"events-{entry['run']}.jsonl"
        if path.exists():
            result += [dict(json.loads(line), run=entry["run"]) for line in path.read_text().splitlines()]
    return result


def sized(rate: float, sleep: float, target: float = 0.7) -> int:
    """Processes of 1 worker that `rate` records/s need at `target` utilisation, one record
    costing `sleep` s: ``ceil(rate x sleep / target)``."""
    need = rate * sleep / target
    return max(1, int(need) + (need > int(need)))


def strategies(spec: str, sleep: float) -> Dict[str, int]:
    """The process counts of the fixed clusters: for the peak rate and for the average."""
    rates = [float(p.split(":")[0]) for p in spec.split(",")]
    lengths = [float(p.split(":")[1]) for p in spec.split(",")]
    average = sum(r * s for r, s in zip(rates, lengths)) / sum(lengths)
    return {"peak": sized(max(rates), sleep), "average": sized(average, sleep)}
