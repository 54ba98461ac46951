"""Rescaling experiment 4: where the time of a join goes, from the trace's join phases.

Runs ``rescale_latency`` with ``--trace`` (2 processes x 2 workers, two 2-worker processes
join; modest rate by default, ``--runs`` times) and reads the ``rescale: ...`` activities
(``docs/rescaling.md``, "Tracing a join") of every process's trace (joins count from 1).
Each activity interval
belongs to the join whose ``rescale: connect`` started last before it (all processes are
threads of one program, so their clocks agree). Per join and phase it keeps the longest
interval sum over the workers of each side: ``joiner`` (the joining process's workers) and
``cluster`` (the workers that were there before), plus ``total`` (the joining process thread
started -> its first worker's ``bootstrap()`` returned, measured by the program) and
``traced`` (first connect start -> last joiner activity stop). Writes ``bootstrap.csv``
(every run), ``bootstrap_summary.csv`` (medians over runs) and ``bootstrap.png`` into
``--out``. The latency spike a join causes is measured without tracing by ``latency.py``.

    .venv/bin/python benches/rescaling/bootstrap.py                  # ~1 minute
"""

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

HERE = Path(__file__).resolve().parent
PHASES = ("connect", "back-fill", "state transfer", "capability hand-over", "range requests")
INITIAL, THREADS = 2, 2


def intervals(trace_dir):
    """(process, worker, phase, start_ns, stop_ns) of every rescale activity in ``trace_dir``."""
    import timely_py.trace

    found = []
    for process_dir in sorted(Path(trace_dir).iterdir()):
        table = timely_py.trace.read(process_dir, kinds=["activity_start", "activity_stop"],
                                     columns=["kind", "name", "time_ns"])  # fmt: skip
        open_at = defaultdict(list)
        for row in table.to_pylist():
            if not row["name"].startswith("rescale: "):
                continue
            key = (row["process"], row["worker"], row["name"][len("rescale: "):])
            if row["kind"] == "activity_start":
                open_at[key].append(row["time_ns"])
            elif open_at[key]:
                found.append((*key, open_at[key].pop(), row["time_ns"]))
    return found


def breakdown(found, joins):
    """Per join k: {(phase, side): longest per-worker sum in ms} and the traced span in ms."""
    connects = sorted({start for process, _, phase, start, _ in found if phase == "connect"})
    result = []
    for k in range(joins):
        low, high = connects[k], connects[k + 1] if k + 1 < len(connects) else float("inf")
        per_worker = defaultdict(float)
        joiner_stops = []
        for process, worker, phase, start, stop in found:
            if low <= start < high:
                side = "joiner" if process == INITIAL + k else "cluster"
                per_worker[(phase, side, worker)] += (stop - start) / 1e6
                if side == "joiner":
                    joiner_stops.append(stop)
        longest = defaultdict(float)
        for (phase, side, _), ms in per_worker.items():
            longest[(phase, side)] = max(longest[(phase, side)], ms)
        result.append((dict(longest), (max(joiner_stops) - low) / 1e6 if joiner_stops else None))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--joins", default="2,4")
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--cost", type=int, default=50000)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if not args.no_build:
        common.build(["rescale_latency"])
    joins = len(args.joins.split(","))
    print(f"load average before: {common.load()}")
    rows = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as trace_dir:
            command = [common.binary("rescale_latency"), "--duration", args.duration, "--joins", args.joins,
                       "--rate", args.rate, "--cost", args.cost, "--trace", trace_dir]  # fmt: skip
            _, comments = common.run_csv(command, timeout=args.duration * 3 + 60)
            totals = [(float(c[3]) - float(c[2])) * 1e3 for c in comments if c[0] == "join" and c[3]]
            for k, (phases, traced) in enumerate(breakdown(intervals(trace_dir), joins)):
                rows += [(run, k + 1, phase, side, ms) for (phase, side), ms in sorted(phases.items())]
                rows += [(run, k + 1, "traced", "joiner", traced), (run, k + 1, "total", "joiner", totals[k])]
    print(f"load average after: {common.load()}")
    common.write_csv(args.out / "bootstrap.csv", ["run", "join", "phase", "side", "ms"], rows)
    summary = summarize(rows)
    common.write_csv(args.out / "bootstrap_summary.csv", ["join", "phase", "side", "median_ms"], summary)
    for line in summary:
        print("join {} {:22} {:8} {:9.3f} ms".format(*line))
    plot(summary, joins, args.out / "bootstrap.png")


def summarize(rows):
    """Medians over runs per (join, phase, side), phases in protocol order."""
    order = {name: i for i, name in enumerate((*PHASES, "traced", "total"))}
    keys = sorted({(k, phase, side) for _, k, phase, side, _ in rows}, key=lambda t: (t[0], order[t[1]], t[2]))
    return [(*key, common.median(r[4] for r in rows if r[1:4] == key)) for key in keys]


def plot(summary, joins, path):
    fig, axes = common.figure(1, joins, width=5.0)
    for k, ax in enumerate(axes, start=1):
        lines = [line for line in summary if line[0] == k]
        ax.barh([f"{phase} ({side})" for _, phase, side, _ in lines], [ms for *_, ms in lines])
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("ms (median over runs)")
        ax.set_title(f"join {k}: process {INITIAL + k - 1} ({THREADS} workers)")
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
