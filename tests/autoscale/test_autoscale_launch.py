"""The autoscaler in a real cluster under the launcher: process 0 reads its own workers'
trace events in-process, sees the map (5 ms of sleep per record, a simulated remote call:
on 2 cores only work that waits scales with processes) unable to keep up with the 400
records/s worker 0 offers on 2 processes of 1 worker (at most about 2 x 190 records/s), and
asks the launcher for a third process; when the rate steps down to 80 records/s, it makes
that process leave again. The results stay exact against a sequential reference. In
metrics-only mode the same run decides the same and starts nothing."""

import re

import pytest
from support.cluster import write_hostfile
from support.launched import Launched

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(180)]

SCRIPT = "tests/autoscale/scripts/sleepy_autoscaled.py"
RATE, SECONDS, SLEEP = 400, 10, 0.005


def results(out):
    """`(x, y, worker, process)` of every `[p] worker W: seen X -> Y` line."""
    found = re.findall(r"^\[(\d+)\] worker (\d+): seen (\d+) -> (\d+)$", out, re.MULTILINE)
    return sorted((int(x), int(y), int(w), int(p)) for p, w, x, y in found)


def autoscale_lines(out):
    """Worker 0's decisions that change the count, in order (`scale out from 2 to 3 ...`)."""
    return re.findall(r"^\[0\] autoscale: (scale (?:out|in) from .*)$", out, re.MULTILINE)


def assert_exact(out, offered=int(RATE * 0.1) * int(SECONDS / 0.1)):
    """Every record offered is mapped exactly once, as a sequential run maps it."""
    got = results(out)
    assert [(x, y) for x, y, _, _ in got] == [(x, 3 * x + 1) for x in range(offered)]
    return got


def test_the_autoscaler_adds_a_process_and_results_stay_exact(tmp_path):
    hostfile, _ = write_hostfile(tmp_path, 4)
    with Launched(tmp_path, "-n", 2, "--hostfile", hostfile, "--max-processes", 4,
                  SCRIPT, RATE, SECONDS, SLEEP, 2, 3) as run:
        assert run.status(timeout=120) == 0, run.out()[-3000:] + run.err()
    out, err = run.out(), run.err()
    decision = re.search(r"^\[0\] autoscale: scale out from 2 to 3 processes: Map#\d+ is at utilisation "
                         r"([\d.]+), above 0.85, and needs (\d+) processes$", out, re.MULTILINE)
    assert decision, out[-3000:]
    assert float(decision.group(1)) > 0.85 and int(decision.group(2)) >= 3
    assert "outcome: started" in out
    assert "[launch] process 2 started: it joins the cluster through worker 0" in err
    assert "process 3 started" not in err, "one scale-out only: max_processes is 3"
    assert re.search(r"^\[0\] worker 0: epoch \d+, workers present \[0, 1, 2\], [\d.]+ s$", out, re.MULTILINE)
    # The scale-out is the only action, but at high load a scale-in may follow late in the run:
    # the autoscaler observes the input's rate, which a worker 0 starved of CPU holds down
    # (offering less than it should), so it sees 3 processes as too many. Never a second
    # scale-out (max 3).
    said = autoscale_lines(out)
    assert said[0].startswith("scale out from 2 to 3"), said
    assert all(line.startswith("scale in from 3 to 2") for line in said[1:]), said
    done = re.search(rf"^\[0\] worker 0: done, {RATE * SECONDS} records, (\d) actions, (\d) processes$", out, re.M)
    assert done and int(done.group(1)) == len(said), (said, out[-500:])
    assert int(done.group(2)) in ((3,) if len(said) == 1 else (2, 3)), (said, out[-500:])
    got = assert_exact(out)
    assert any(w == 2 for _, _, w, _ in got), "the joined process took no share"


def test_metrics_only_in_a_cluster_decides_but_starts_nothing(tmp_path):
    hostfile, _ = write_hostfile(tmp_path, 3)
    with Launched(tmp_path, "-n", 2, "--hostfile", hostfile, "--max-processes", 3,
                  SCRIPT, RATE, SECONDS, SLEEP, 2, 3, "metrics") as run:
        assert run.status(timeout=120) == 0, run.out()[-3000:] + run.err()
    out, err = run.out(), run.err()
    assert re.search(r"^\[0\] autoscale: scale out from 2 to 3 processes \(metrics only: not done\)", out, re.M), \
        out[-3000:]
    assert "outcome: started" not in out and "process 2 started" not in err
    assert f"[0] worker 0: done, {RATE * SECONDS} records, 0 actions, 2 processes" in out
    offered = int(RATE * 0.1) * int(SECONDS / 0.1)
    got = results(out)
    assert [(x, y) for x, y, _, _ in got] == [(x, 3 * x + 1) for x in range(offered)]


def test_a_rate_step_down_makes_the_added_process_leave_again(tmp_path):
    """2 -> 3 -> 2: 400 records/s for 6 s, then 80 records/s for 9 s. After the join and the
    stabilisation interval the map's utilisation on 3 processes falls below the band, and
    the autoscaler removes process 2 (the highest, never its own), which leaves cleanly."""
    hostfile, _ = write_hostfile(tmp_path, 3)
    with Launched(tmp_path, "-n", 2, "--hostfile", hostfile, "--max-processes", 3,
                  SCRIPT, RATE, 6, SLEEP, 2, 3, "step=80:9") as run:
        assert run.status(timeout=120) == 0, run.out()[-3000:] + run.err()
    out, err = run.out(), run.err()
    scale_out = out.find("[0] autoscale: scale out from 2 to 3 processes")
    scale_in = out.find("[0] autoscale: scale in from 3 to 2 processes: Map#")
    assert 0 <= scale_out < scale_in, out[-3000:]
    assert re.search(r"^\[0\] autoscale: scale in from 3 to 2 processes: Map#\d+, the busiest operator, is at "
                     r"utilisation [\d.]+, below 0.49, and needs [12] process", out, re.M)
    assert "[launch] process 2 leaves the cluster (asked by a remove request)" in err
    assert "[launch] process 2 left the cluster" in err
    grew = out.find("[0] worker 0: epoch")
    assert re.search(r"^\[0\] worker 0: epoch \d+, workers present \[0, 1\], [\d.]+ s$", out[grew:], re.M), out[-3000:]
    offered = 40 * 60 + 8 * 90
    assert f"[0] worker 0: done, {offered} records, 2 actions, 2 processes" in out
    got = assert_exact(out, offered)
    assert any(w == 2 for _, _, w, _ in got), "the joined process took no share"
