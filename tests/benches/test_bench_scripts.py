"""The Python benchmark scripts still run and compute the right results.

Each script checks every system's output against the expected result and fails loudly
otherwise; these tests run them on small inputs (no timing is asserted).
"""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import RELEASE, ROOT, RUST_EXAMPLES, built
from support.ports import launcher_base_port

# Some scripts start clusters on the launcher's default ports (2101 and up): every test here
# holds their lock (conftest's `default_ports`), so no two such clusters start at once.
pytestmark = [pytest.mark.bench, pytest.mark.usefixtures("default_ports")]

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
    # The keyed count moves records between the two processes: they write its bytes.
    count = next(row for row in rows if row["workload"] == "count")
    assert all(total and total > 20000 for total in count["bytes_written"]["timely_py 2p"])


def test_bench_processes_one_by_one_records(tmp_path):
    subprocess.run(
        [sys.executable, str(BENCHES / "bench_processes.py"), "--records", "5000", "--reps", "1",
         "--batch", "1", "--no-bytewax", "--workloads", "count", "--processes", "2"],
        check=True, timeout=120, capture_output=True,
    )  # fmt: skip


def test_bench_routing_compares_two_builds():
    """Both "builds" are the installed package: every workload runs and checks its output."""
    import timely_py

    package_dir = str(Path(timely_py.__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, str(BENCHES / "bench_routing.py"), "--records", "5000", "--reps", "1",
         "--builds", f"a={package_dir},b={package_dir}"],
        check=True, timeout=120, capture_output=True, text=True,
    )  # fmt: skip
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    assert [row[0] for row in rows] == [
        "exchange/int", "exchange/float", "exchange/str", "exchange/tuple", "count/int", "count/str",
        "state_machine/int", "state_machine/str", "state_machine/tuple",
    ]
    assert all(float(row[1]) > 0 and float(row[2]) > 0 for row in rows)


def test_bench_trace_compare_times_both_versions(tmp_path):
    """The "older copy" is the installed trace package itself, on the crafted trace."""
    import timely_py.trace
    from support.tracedirs import write_crafted

    path = write_crafted(tmp_path / "t")
    package = Path(timely_py.trace.__file__).resolve().parent
    done = subprocess.run(
        [sys.executable, str(BENCHES / "bench_trace_compare.py"), str(package), str(path), "1"],
        check=True, timeout=120, capture_output=True, text=True,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[0].startswith("34 events; load average before:")
    assert lines[1].startswith("validate: baseline ") and ", current " in lines[1]
    assert "current, progress=False" in lines[2] and lines[3].startswith("load average after:")


def test_trace_overhead_measures_a_workload_off_and_traced():
    built(RUST_EXAMPLES / "hello")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "trace" / "overhead.py"), "--runs", "1", "--only", "hello"],
        check=True, timeout=300, capture_output=True, text=True,
    )  # fmt: skip
    rows = [line for line in done.stdout.splitlines() if line.startswith("| hello")]
    assert len(rows) == 1, done.stdout
    cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
    off, traced, events = float(cells[1]), float(cells[2]), int(cells[10].replace(",", ""))
    assert off > 0 and traced > 0 and events > 200_000 * 10  # hello records ~21 events per round
    # hello prints its own time, which leaves out start-up: less than the wall time.
    computed_off, computed_traced = float(cells[4]), float(cells[5])
    assert 0 < computed_off < off and 0 < computed_traced < traced
    assert cells[6].endswith("%")
    assert float(cells[8]) > 0  # bytes per event on disk


def test_trace_compare_times_each_build_off_and_traced():
    built(RUST_EXAMPLES / "hello")
    examples = str(RUST_EXAMPLES)
    done = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "trace" / "compare.py"), "--build", f"a={examples}",
         "--build", f"b={examples}", "--runs", "1", "--only", "hello"],
        check=True, timeout=300, capture_output=True, text=True,
    )  # fmt: skip
    rows = [line for line in done.stdout.splitlines() if line.startswith("| hello")]
    assert [row.split("|")[2].strip() for row in rows] == ["a", "b"], done.stdout
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        wall_off, wall_traced, cpu_off, computation_off = float(cells[2]), float(cells[3]), float(cells[5]), float(cells[8])
        assert 0 < computation_off < wall_off and wall_traced > 0 and cpu_off > 0
        assert cells[4].endswith("%") and cells[7].endswith("%") and cells[10].endswith("%")


def test_trace_compare_rejects_a_build_without_a_directory():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "trace" / "compare.py"), "--build", "only-a-name"],
        timeout=60, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and "expected NAME=EXAMPLES_DIRECTORY" in done.stderr


def test_analysis_throughput_times_both_kernels(tmp_path):
    out = tmp_path / "throughput.json"
    subprocess.run(
        [sys.executable, str(ROOT / "benches" / "analysis" / "throughput.py"), "--rounds", "300", "--runs", "1",
         "--warmup-rounds", "0", "--slice", "2ms", "--driver-memory", "1g", "--trace", str(tmp_path / "trace"),
         "--json", str(out)],
        check=True, timeout=600, capture_output=True,
    )  # fmt: skip
    figures = json.loads(out.read_text())
    assert figures["run"]["events"] > 300 * 10 and figures["run"]["run_s"] > 0
    assert figures["kernel_inputs"]["worker_rows"] > 0 and figures["kernel_inputs"]["slices"] >= 1
    for kernels in ("rust", "python"):
        (analysis,) = figures["analysis"][kernels]
        assert analysis["total_s"] > 0 and any("slices and critical paths" in stage for stage in analysis["stages"])
        assert all(len(times) == 1 and times[0] > 0 for times in figures["kernels"][kernels].values())


def test_the_bfs_experiment_writes_profiles_side_by_side(tmp_path):
    script = ROOT / "benches" / "analysis" / "experiment_bfs.py"
    done = subprocess.run(
        [sys.executable, str(script), "--nodes", "2000", "--edges", "5000", "--reps", "1", "--slice", "100ms",
         "--out", str(tmp_path), "--base-port", str(launcher_base_port(2))],
        timeout=900, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = list(csv.DictReader((tmp_path / "summary.csv").open()))
    assert [(r["config"], r["workers"]) for r in summary] == [("1w", "1"), ("2w", "2"), ("4w", "4"), ("2px2w", "4")]
    assert all(r["complete"] == "True" and float(r["critical_ms"]) > 0 for r in summary)
    assert float(summary[0]["communication_share"]) == 0 < float(summary[3]["communication_share"])
    profiles = list(csv.DictReader((tmp_path / "profiles.csv").open()))
    for config in ("1w", "2px2w"):
        shares = [float(r["share"]) for r in profiles if r["config"] == config]
        assert sum(shares) == pytest.approx(1.0)
    assert {"load graph", "Aggregate"} <= {r["contributor"] for r in profiles}
    assert (tmp_path / "profiles.png").stat().st_size > 10_000


def test_step_gaps_measures_the_gaps_between_steps():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "analysis" / "step_gaps.py"), "--workers", "1", "2", "--switch",
         "0.005", "--reps", "1", "--nodes", "5000", "--edges", "12000"],
        timeout=300, capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    rows = [line.strip("|").split("|") for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    assert [cells[0].strip() for cells in rows] == ["1", "2"]
    assert all(int(cells[5]) > 0 for cells in rows), "every run has gaps between steps"


RESCALING = ROOT / "benches" / "rescaling"


def run_rescaling(script, *args):
    """Runs a rescaling experiment driver with small arguments; returns its stdout."""
    done = subprocess.run(
        [sys.executable, str(RESCALING / script), *[str(a) for a in args]],
        timeout=600, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_rescaling_overhead_compares_two_builds(tmp_path):
    """Both "builds" are this worktree's examples: every workload and process count is measured."""
    built(RUST_EXAMPLES / "hello")
    examples = RUST_EXAMPLES
    run_rescaling("overhead.py", "--old", examples, "--runs", "1", "--rounds", "200", "--records", "2000",
                  "--exchange-rounds", "1", "--no-build", "--out", tmp_path)  # fmt: skip
    summary = list(csv.DictReader((tmp_path / "overhead.csv").open()))
    assert [(r["workload"], r["processes"]) for r in summary] == [
        ("hello", "1"), ("hello", "2"), ("exchange", "1"), ("exchange", "2")
    ]
    assert all(float(r["old_median"]) > 0 and float(r["new_median"]) > 0 for r in summary)
    assert (tmp_path / "overhead.png").stat().st_size > 5_000


def test_rescaling_latency_measures_every_record_across_two_joins(tmp_path):
    built(RELEASE / "rescale_latency")
    out = run_rescaling("latency.py", "--runs", "1", "--duration", "3", "--joins", "1,2", "--cost", "100",
                        "--saturating-rate", "3000", "--sleep-rate", "1000", "--sleep-us", "50", "--warmup", "0.3", "--no-build",
                        "--out", tmp_path)  # fmt: skip
    assert "load average before:" in out
    windows = list(csv.DictReader((tmp_path / "latency.csv").open()))
    assert {r["scenario"] for r in windows} == {"modest", "saturating", "sleep", "modest-born-4p", "keyed-sleep"}
    # The modest run injects 2000 records/s for 3 s: every one is measured (the binary itself
    # fails on a lost or duplicated record).
    assert 5800 <= sum(int(r["records"]) for r in windows if r["scenario"] == "modest") <= 6000
    joins = list(csv.DictReader((tmp_path / "joins.csv").open()))
    assert [r["join"] for r in joins if r["scenario"] == "modest"] == ["1", "2"]
    # The keyed variant (a Megaphone word count, rebalanced after each join) counts every record too.
    assert [r["join"] for r in joins if r["scenario"] == "keyed-sleep"] == ["1", "2"]
    assert 2900 <= sum(int(r["records"]) for r in windows if r["scenario"] == "keyed-sleep") <= 3000
    assert all(float(r["spawned_s"]) < float(r["bootstrapped_s"]) for r in joins)
    summary = {r["scenario"]: r for r in csv.DictReader((tmp_path / "latency_summary.csv").open())}
    assert float(summary["modest"]["join_over_steady"]) > 0
    assert summary["modest-born-4p"]["join_p99_us"] == ""


def test_rescaling_state_samples_the_progress_state_per_workload(tmp_path):
    built(RELEASE / "rescale_state")
    out = run_rescaling("state.py", "--runs", "1", "--rounds", "300", "--every", "100", "--records", "10",
                        "--workers", "1,2", "--no-build", "--out", tmp_path)  # fmt: skip
    rows = list(csv.DictReader((tmp_path / "state.csv").open()))
    series = {(r["workload"], r["workers"]) for r in rows}
    assert series == {(w, n) for w in ("exchange", "loop", "notify") for n in ("1", "2")}
    assert {r["round"] for r in rows} == {"0", "100", "200", "299"}
    exchange = [int(r["pointstamps"]) for r in rows if r["workload"] == "exchange"]
    assert all(0 < size < 20 for size in exchange), "hello's state stays a handful of pointstamps"
    assert "growth_per_1000_rounds" in out


def test_rescaling_bootstrap_breaks_a_traced_join_into_phases(tmp_path):
    built(RELEASE / "rescale_latency")
    run_rescaling("bootstrap.py", "--runs", "1", "--duration", "2", "--joins", "0.7,1.2", "--rate", "500",
                  "--cost", "100", "--no-build", "--out", tmp_path)  # fmt: skip
    summary = list(csv.DictReader((tmp_path / "bootstrap_summary.csv").open()))
    for join in ("1", "2"):
        phases = {(r["phase"], r["side"]): float(r["median_ms"]) for r in summary if r["join"] == join}
        assert {("connect", "joiner"), ("state transfer", "joiner"), ("state transfer", "cluster"),
                ("back-fill", "cluster"), ("range requests", "joiner"), ("total", "joiner")} <= set(phases)  # fmt: skip
        assert 0 < phases[("connect", "joiner")] <= phases[("traced", "joiner")]
    assert (tmp_path / "bootstrap.png").stat().st_size > 5_000


def test_rescale_latency_loop_variant_loses_nothing_across_joins():
    """Joiners receive a loop's progress state (which grows with the rounds, docs/rescaling.md
    experiment 3): the run still completes and every record arrives exactly once."""
    built(RELEASE / "rescale_latency")
    done = subprocess.run(
        [str(RELEASE / "rescale_latency"), "--duration", "2.5", "--joins", "1,1.8",
         "--rate", "1000", "--cost", "100", "--loops", "3"],
        timeout=120, capture_output=True, text=True, check=True,
    )  # fmt: skip
    comments = [line[2:].split(",") for line in done.stdout.splitlines() if line.startswith("# ")]
    assert [c[1] for c in comments if c[0] == "join"] == ["1", "2"]
    (records,) = [c for c in comments if c[0] == "records"]
    assert int(records[1]) == int(records[2]) > 2000


def test_rescaling_spike_compares_the_join_of_two_builds():
    """Both "builds" are this worktree's binary: each run gives the three levels and a bootstrap
    (on a cluster of one worker per process: the shape after ``--`` reaches every run)."""
    built(RELEASE / "rescale_latency")
    binary = RELEASE / "rescale_latency"
    out = run_rescaling("spike.py", "--build", f"a={binary}", "--build", f"b={binary}", "--runs", "1",
                        "--rate", "500", "--cost", "100", "--join", "1.6", "--duration", "2.5",
                        "--", "--threads", "1", "--injectors", "2")  # fmt: skip
    lines = out.splitlines()
    header = "build,bootstrap_ms,before_p99_us,join_p99_us,after_p99_us,join_over_before,join_over_after"
    summary = lines[lines.index(header) + 1:]
    assert [row.split(",")[0] for row in summary] == ["a", "b"]
    assert all(float(value) > 0 for row in summary for value in row.split(",")[1:])


def test_rescaling_leave_measures_a_leave_against_a_control():
    """One run with a leave and one control: the leave's time and the three levels come out,
    and every record arrived once (rescale_latency fails the run otherwise)."""
    built(RELEASE / "rescale_latency")
    out = run_rescaling("leave.py", "--runs", "1", "--rate", "500", "--cost", "100", "--leave", "1.5",
                        "--duration", "3")  # fmt: skip
    lines = out.splitlines()
    header = ("runs,evacuate_ms,leave_ms,before_p99_us,leave_p99_us,after_p99_us,control_before_p99_us,"
              "control_after_p99_us")
    (summary,) = lines[lines.index(header) + 1:]
    values = [float(v) for v in summary.split(",")]
    assert values[0] == 1 and values[1] == 0 and 0 < values[2] < 1500, summary
    assert all(v > 0 for v in values[3:]), summary


def test_rescaling_leave_with_an_evacuation_moves_the_bins_first():
    """With `--evacuate` worker 0 moves the leaver's Megaphone bins off it (batched, one step
    after the other) before it leaves: the evacuation takes time, and the counts stay exact."""
    built(RELEASE / "rescale_latency")
    out = run_rescaling("leave.py", "--runs", "1", "--rate", "500", "--cost", "100", "--leave", "1.5",
                        "--duration", "3", "--evacuate", "--", "--keyed", "64", "--keys", "500")  # fmt: skip
    lines = out.splitlines()
    header = ("runs,evacuate_ms,leave_ms,before_p99_us,leave_p99_us,after_p99_us,control_before_p99_us,"
              "control_after_p99_us")
    values = [float(v) for v in lines[lines.index(header) + 1].split(",")]
    assert values[1] > 0 and 0 < values[2] < 1500, values


def test_autoscale_overhead_runs_every_configuration(tmp_path):
    """benches/autoscale/overhead.py on a small workload: every configuration's counts are
    checked by the script; the traced ones deliver events."""
    out = tmp_path / "overhead.json"
    subprocess.run(
        [sys.executable, str(ROOT / "benches" / "autoscale" / "overhead.py"), "--runs", "1", "--epochs", "100",
         "--records", "20", "--json", str(out)],
        check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    rows = {row["configuration"]: row for row in json.loads(out.read_text())["rows"]}
    assert list(rows) == ["plain", "traced, callback does nothing", "autoscaler, metrics only"]
    assert rows["plain"]["events_per_second"] is None
    assert rows["autoscaler, metrics only"]["events_per_second"] > 0


def test_autoscale_shares_runs_every_configuration():
    """benches/autoscale/shares.py on a small workload: the script checks that every record
    was made once in every run; the table has a rate per worker count and way of making."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "autoscale" / "shares.py"), "--runs", "1", "--epochs", "2",
         "--records", "10", "--make", "0.0001"],
        check=True, timeout=120, capture_output=True, text=True,
    )  # fmt: skip
    rows = [line.split() for line in done.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [row[0] for row in rows] == ["1", "2", "3"] and all(float(v) > 0 for row in rows for v in row[1:])


@pytest.mark.cluster
@pytest.mark.slow
def test_autoscale_convergence_runs_the_three_phases(tmp_path):
    """benches/autoscale/convergence.py, short phases: the script checks that every record
    is mapped exactly once; its report has the three phases, and decisions in the first two
    (the last may still wait for a join or leave of the second on a loaded machine)."""
    out = tmp_path / "convergence.json"
    subprocess.run(
        [sys.executable, str(ROOT / "benches" / "autoscale" / "convergence.py"), "--phases", "4,10,6",
         "--base-port", str(launcher_base_port(5)), "--json", str(out)],
        check=True, timeout=240, capture_output=True,
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert [p["phase"] for p in report["phases"]] == [0, 1, 2]
    assert all(p["first_decision"] is not None for p in report["phases"][:2]), report["events"]
    assert report["phases"][1]["count"] >= report["phases"][0]["count"]
