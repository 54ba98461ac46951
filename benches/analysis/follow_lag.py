"""Follow mode's lag: how long after a slice's end `timely-py analyze --follow` emits it, on a
traced run as a user starts one (the run and the follower started together).

Starts `tests/cluster/scripts/rounds_until_file.py` traced on `-n 2 -w 1` (rounds of input ->
exchange -> probe, `--pause` seconds apart) and, at the same moment, the console script
`timely-py analyze TRACE --follow --slice S --no-views --master local[2]` in a fresh process
(its session's start included), with the `timely_py` of `--python` (`PYTHONPATH`: a checkout's
`python/`). After `--seconds` it creates the run's stop file and waits for both. Each emitted
slice is a file `OUT/follow/slices/slice-N.parquet` (written under a dot name and renamed when
the slice is emitted): its lag is the file's time minus the slice's end (the trace's first
event plus (N + 1) slice lengths; the trace's clock is the Unix epoch, `docs/trace-format.md`).
Prints a JSON object (the follower's progress lines go to WORK/follower.log): the lag per slice, the final report's delay after the run's end (the
follower's exit minus the run's), and the load average at the start.

    .venv/bin/python benches/analysis/follow_lag.py --python python --seconds 90 --slice 5s --json lag.json
    .venv/bin/python benches/analysis/follow_lag.py --plot lag.png before=main.json after=lag.json
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = ROOT / "tests" / "cluster" / "scripts" / "rounds_until_file.py"


def parse_duration(text):
    units = {"ms": 1e-3, "s": 1.0}
    for unit in ("ms", "s"):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * units[unit]
    return float(text)


def first_event_s(trace):
    """The trace's first event, in seconds since the epoch (process 0's clock; the processes
    of one machine agree within microseconds)."""
    files = [str(p) for p in Path(trace).rglob("*.parquet")]
    times = ds.dataset(files, format="parquet").to_table(columns=["time_ns"]).column("time_ns")
    return pc.min(times).as_py() / 1e9


def plot(path, labelled):
    """Lag against slice end, one line per ``label=figures.json``, into the PNG ``path``."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4), layout="constrained")
    axes = figure.subplots()
    for item in labelled:
        label, _, name = item.partition("=")
        figures = json.loads(Path(name).read_text())
        slices = figures["slices"]
        axes.plot([x["end_s"] for x in slices], [x["lag_s"] for x in slices], marker="o", label=f"{label} (load {figures['load']:.0f})")
    bound = 2 * figures["slice_s"] + 5
    axes.axhline(bound, color="grey", linestyle="--", label=f"goal: {bound:.0f} s")
    axes.set(xlabel="slice end (s after the run started)", ylabel="lag (s)", ylim=(0, None))
    axes.set_title("timely-py analyze --follow: lag per slice")
    axes.legend()
    figure.savefig(path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plot", default=None, help="only plot the LABEL=JSON files given into this PNG")
    parser.add_argument("inputs", nargs="*", help="with --plot: LABEL=FIGURES.json")
    parser.add_argument("--python", default=str(ROOT / "python"), help="the timely_py checkout's python/ to follow with")
    parser.add_argument("--seconds", type=float, default=90.0, help="how long the traced run goes on")
    parser.add_argument("--slice", default="5s")
    parser.add_argument("--pause", default="0.005", help="seconds between the run's rounds")
    parser.add_argument("--port", type=int, default=23400)
    parser.add_argument("--work", default=None, help="directory for the trace and the output (default: a new temporary one)")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    if args.plot:
        return plot(args.plot, args.inputs)
    work = Path(args.work or tempfile.mkdtemp(prefix="follow_lag_"))
    work.mkdir(parents=True, exist_ok=True)
    trace, out, stop = work / "trace", work / "out", work / "stop"
    load = os.getloadavg()[0]
    env = {**os.environ, "PYTHONPATH": str(Path(args.python).resolve())}
    started = time.time()
    run = subprocess.Popen(
        [sys.executable, "-m", "timely_py.launch", "-n", "2", "-w", "1", "--base-port", str(args.port),
         "--trace", str(trace), str(ROUNDS), str(stop), args.pause, str(args.seconds + 60)],
        cwd=str(work), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    while not trace.is_dir():
        time.sleep(0.01)
    script = Path(sys.executable).parent / "timely-py"
    follower = subprocess.Popen(
        [str(script), "analyze", str(trace), "--out", str(out), "--slice", args.slice, "--follow", "--no-views",
         "--master", "local[2]", "--poll", "0.5"],
        cwd=str(work), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(max(0.0, started + args.seconds - time.time()))
    stop.write_text("")
    run.wait(timeout=120)
    run_ended = time.time()
    output, errors = follower.communicate(timeout=900)
    follower_ended = time.time()
    (work / "follower.log").write_text(errors)
    if run.returncode != 0 or follower.returncode != 0:
        sys.exit(f"run {run.returncode}, follower {follower.returncode}: {errors[-3000:]}")
    origin, length = first_event_s(trace), parse_duration(args.slice)
    lags = []
    for path in sorted((out / "follow" / "slices").glob("slice-*.parquet")):
        index = int(path.stem.split("-")[1])
        end = origin + (index + 1) * length
        lags.append({"slice": index, "end_s": round(end - started, 2), "emitted_s": round(path.stat().st_mtime - started, 2),
                     "lag_s": round(path.stat().st_mtime - end, 2)})  # fmt: skip
    figures = {
        "python": args.python, "slice_s": length, "run_s": round(run_ended - started, 2), "load": load,
        "slices": lags, "final_after_run_s": round(follower_ended - run_ended, 2),
        "median_lag_s": statistics.median([x["lag_s"] for x in lags]) if lags else None,
        "max_lag_s": max([x["lag_s"] for x in lags], default=None),
        "batches": errors.count("follow batch: activities and horizon"),
    }  # fmt: skip
    print(json.dumps(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
