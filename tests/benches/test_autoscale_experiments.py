"""The autoscaling experiments of `benches/autoscale/` still run and report sane figures.

Short schedules (seconds, not the experiments' half minute); the scripts check that every
record is delivered exactly once (each by the run that committed its epoch) and fail
otherwise. Nothing here is timed: the assertions are on structure and on invariants of the
definitions (benches/autoscale/stepped.py).
"""

import json
import subprocess
import sys

import pytest
from support.paths import ROOT

pytestmark = [pytest.mark.bench, pytest.mark.cluster, pytest.mark.slow, pytest.mark.usefixtures("default_ports")]

BENCH = ROOT / "benches" / "autoscale"
SCHEDULE = "100:2,300:3,100:2"
RECORDS = 200 + 900 + 200


@pytest.mark.timeout(420)
def test_alternatives_reports_every_strategy(tmp_path):
    """Every strategy delivers every record once; the fixed clusters used exactly their size
    times the span in process-seconds; the stop-and-restart runs replay from where they
    stopped and each outage has a positive length; measures are within their bounds."""
    out = tmp_path / "alternatives.json"
    plot = tmp_path / "alternatives.png"
    done = subprocess.run(
        [sys.executable, str(BENCH / "alternatives.py"), "--schedule", SCHEDULE, "--json", str(out),
         "--plot", str(plot)],
        timeout=400, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    rows = {row["strategy"]: row for row in json.loads(out.read_text())["medians"]}
    assert list(rows) == ["autoscaled", "fixed-peak", "fixed-average", "stop-restart"]
    assert plot.stat().st_size > 10_000
    for name, row in rows.items():
        assert row["records"] == RECORDS, name
        assert 0 <= row["delayed"] <= RECORDS, name
        assert 0 <= row["above_target_s"] <= row["span_s"], name
        assert row["span_s"] > 6.9, name  # the last epoch is offered at 6.9 s
        assert len(row["phases"]) == 3 and all(p["p99"] >= p["p50"] > 0 for p in row["phases"]), name
        alive = max(count for _, count in row["processes"])
        assert 0 < row["process_seconds"] <= alive * row["span_s"] + 1e-6, name
    for name, size in (("fixed-peak", 3), ("fixed-average", 2)):
        row = rows[name]
        assert row["restarts"] == 0 and row["outages"] == []
        assert row["process_seconds"] == pytest.approx(size * row["span_s"], rel=0.02), name
    restart = rows["stop-restart"]
    assert len(restart["outages"]) == restart["restarts"] == len(restart["runs"]) - 1
    assert all(stop > start for start, stop in restart["outages"])
    for before, after in zip(restart["runs"], restart["runs"][1:]):
        assert after["start_epoch"] == before["replay_from"] >= before["start_epoch"]
        assert after["processes"] == int(before["decided"][0])
    assert "autoscaled" in done.stdout and "stop-restart" in done.stdout


@pytest.mark.timeout(300)
def test_skew_runs_both_policies_and_only_the_bins_aware_one_moves_bins(tmp_path):
    """benches/autoscale/skew.py, one short case: both runs deliver every record once; the
    pooled policy never decides to rebalance (it has no bins to judge by); bins reported
    after moves are all 16, each on one worker present; no run goes past max processes."""
    out = tmp_path / "skew.json"
    done = subprocess.run(
        [sys.executable, str(BENCH / "skew.py"), "--cases", "300:0.5", "--seconds", "6", "--json", str(out)],
        timeout=280, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert [row["offered_bins"] for row in rows] == [False, True]
    for row in rows:
        assert row["records"] == 1800
        assert 0 <= row["delayed"] <= 1800 and row["process_seconds"] > 0
        assert 1 <= row["most_processes"] <= 4
        for e in row["events"]:
            if e["kind"] == "bins":
                assert sum(e["bins_per_worker"]) == 16 and len(e["owners"]) == 16
    assert rows[0]["rebalances"] == 0
    assert all(e["action"] != "rebalance" for e in rows[0]["events"] if e["kind"] == "decision")
