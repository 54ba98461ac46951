"""Megaphone experiment 2: worst latency and migration duration against bins and state size.

For every number of bins in ``--bins`` and every state size in ``--states`` (``KEYS:BYTES``:
that many keys, each with a count and BYTES bytes of state), one run of ``megaphone_latency``
(2 workers in one process, ``--rate`` records/s in 1 ms epochs) moves half of the bins to the
other worker at ``--migrate-at`` seconds, all at once and in batches (``batched:N`` with
``N = max(1, bins / 32)``: each worker sends a quarter of the bins, so 8 batches, or fewer
with fewer than 32 bins). Runs alternate between strategies, bins and sizes, ``--runs`` times.

Writes into ``--out``: ``sweep.csv`` (per run: bins, keys, state bytes and MB, strategy,
migration duration, steady median latency, worst latency during the migration and
``runs.RECOVERY_MS`` after it), ``sweep_summary.csv`` (medians over runs) and ``sweep.png``
(worst latency and duration against bins, one line per strategy and state size). Prints the
summary and the load average. Measures only.

    .venv/bin/python benches/megaphone/sweep.py              # ~5 minutes
    .venv/bin/python benches/megaphone/sweep.py --quick      # a few seconds
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import runs  # noqa: E402
from runs import common  # noqa: E402

HERE = Path(__file__).resolve().parent


def arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bins", default="16,64,256,1024,4096")
    parser.add_argument("--states", default="1000000:0,1000000:32,1000000:128", help="KEYS:BYTES,...")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--rate", type=int, default=200_000)
    parser.add_argument("--duration", type=float, default=2.5)
    parser.add_argument("--migrate-at", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true", help="a small fast run (for tests)")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    if args.quick:
        args.bins, args.states, args.runs = "16,256", "20000:0,20000:256", 1
        args.rate, args.duration, args.migrate_at = 50_000, 0.8, 0.4
    args.bins = [int(b) for b in args.bins.split(",")]
    args.states = [tuple(int(n) for n in s.split(":")) for s in args.states.split(",")]
    return args


def strategies(bins):
    """The strategies compared at ``bins`` bins."""
    return ["all-at-once", f"batched:{max(1, bins // 32)}"]


def measure(args):
    """Rows of ``sweep.csv``, the runs alternating."""
    rows = []
    for i in range(args.runs):
        for keys, state_bytes in args.states:
            for bins in args.bins:
                for strategy in strategies(bins):
                    run = runs.run(["--bins", bins, "--keys", keys, "--state-bytes", state_bytes, "--strategy", strategy,
                                    "--rate", args.rate, "--duration", args.duration, "--migrate-at", args.migrate_at])  # fmt: skip
                    rows.append({"bins": bins, "keys": keys, "state_bytes": state_bytes, "state_mb": run.state_mb,
                                 "strategy": strategy.split(":")[0], "per_worker": strategy.partition(":")[2],
                                 "run": i, "moved_bins": run.moved_bins, "duration_ms": round(run.duration_ms, 3),
                                 "steady_p50_ms": run.steady_p50_ms(), "max_ms": run.max_ms()})  # fmt: skip
    return rows


def summarize(rows):
    """Medians over runs per (state, bins, strategy)."""
    groups = {}
    for row in rows:
        groups.setdefault((row["keys"], row["state_bytes"], row["state_mb"], row["bins"], row["strategy"]), []).append(row)
    return [
        (*key, len(group), common.median(r["steady_p50_ms"] for r in group), common.median(r["max_ms"] for r in group),
         common.median(r["duration_ms"] for r in group))
        for key, group in groups.items()
    ]  # fmt: skip


def plot(summary, path):
    """Worst latency and migration duration against bins: a line per strategy and state size."""
    fig, (worst, duration) = common.figure(1, 2, width=5.5, height=3.6)
    lines = sorted({(row[2], row[4]) for row in summary})
    for state_mb, strategy in lines:
        points = sorted((row[3], row[7], row[8]) for row in summary if (row[2], row[4]) == (state_mb, strategy))
        style = dict(marker="o" if strategy == "all-at-once" else "s", ls="-" if strategy == "all-at-once" else "--")
        label = f"{strategy}, {state_mb:g} MB"
        worst.plot([p[0] for p in points], [p[1] for p in points], label=label, **style)
        duration.plot([p[0] for p in points], [p[2] for p in points], label=label, **style)
    for ax, what in ((worst, "max latency during migration (ms)"), (duration, "migration duration (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bins")
        ax.set_ylabel(what)
        ax.grid(True, which="both", alpha=0.3)
    worst.legend(fontsize=7)
    fig.suptitle("Half of the bins moved between 2 workers (median over runs)", fontsize=10)
    fig.savefig(path, dpi=110)


def main():
    args = arguments()
    if not args.no_build:
        runs.build()
    print(f"load average before: {common.load()}")
    rows = measure(args)
    print(f"load average after: {common.load()}")
    header = list(rows[0])
    common.write_csv(args.out / "sweep.csv", header, [[row[h] for h in header] for row in rows])
    summary = summarize(rows)
    common.write_csv(args.out / "sweep_summary.csv", ["keys", "state_bytes", "state_mb", "bins", "strategy", "runs",
                                                      "steady_p50_ms", "max_ms", "duration_ms"], summary)  # fmt: skip
    plot(summary, args.out / "sweep.png")
    print("| state (MB) | bins | strategy | steady p50 (ms) | max (ms) | migration (ms) |")
    print("|---|---|---|---|---|---|")
    for row in summary:
        print(f"| {row[2]:g} | {row[3]} | {row[4]} | {row[6]:.2f} | {row[7]:.1f} | {row[8]:.1f} |")


if __name__ == "__main__":
    main()
