"""Megaphone experiment 1: per-epoch latency over time while half of the bins migrate.

The shape of the Megaphone paper's figures 16-18, per migration strategy. Each run of
``megaphone_latency`` counts words (a count and ``--state-bytes`` bytes of state per key) on
2 workers fed ``--rate`` records/s in 1 ms epochs; at ``--migrate-at`` seconds half of the
bins move to the other worker, all at once, fluidly (one bin per epoch) or in batches of at
most 8 bins sent and received per worker, at consecutive epochs (``batched:8``, as ``plan``
returns them) or 10 epochs apart (``batched:8@10``, time to catch up between batches), or
each once the previous one is complete (``batched:8@done``, the controller watching the
probe). Two layouts: ``1x2`` (one process, 2 worker threads) and ``2x1`` (2 processes of 1
worker over loopback TCP, so state crosses the codec). Runs alternate between strategies and
layouts.

Writes into ``--out``: ``latency.csv.gz`` (gzip-compressed CSV, 4,000 rows per run: layout,
strategy, run, t_ms, latency_ms per epoch),
``migrations.csv`` (per run: bins moved, migration start/end/duration, steady median latency
before it, worst latency during it and ``runs.RECOVERY_MS`` after), ``latency_summary.csv``
(medians over runs) and ``latency.png`` (the first run of each, one panel per strategy and
layout, the migration shaded). Prints the summary and the load average. Measures only.

    .venv/bin/python benches/megaphone/latency.py            # ~3 minutes
    .venv/bin/python benches/megaphone/latency.py --quick    # a few seconds
"""

import argparse
import csv
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import runs  # noqa: E402
from runs import common  # noqa: E402

HERE = Path(__file__).resolve().parent


def arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategies", default="all-at-once,fluid,batched:8,batched:8@10,batched:8@done")
    parser.add_argument("--layouts", default="1x2,2x1")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bins", type=int, default=256)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--state-bytes", type=int, default=64)
    parser.add_argument("--rate", type=int, default=200_000)
    parser.add_argument("--duration", type=float, default=4.0)
    parser.add_argument("--migrate-at", type=float, default=2.0)
    parser.add_argument("--quick", action="store_true", help="a small fast run (for tests)")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.keys, args.rate, args.duration, args.migrate_at = 1, 20_000, 50_000, 1.0, 0.5
    args.strategies, args.layouts = args.strategies.split(","), args.layouts.split(",")
    return args


def measure(args):
    """``{(layout, strategy): [Run, ...]}``, the runs alternating."""
    results = {}
    for _ in range(args.runs):
        for layout in args.layouts:
            for strategy in args.strategies:
                flags = [*runs.LAYOUTS[layout], "--strategy", strategy, "--bins", args.bins, "--keys", args.keys,
                         "--state-bytes", args.state_bytes, "--rate", args.rate, "--duration", args.duration,
                         "--migrate-at", args.migrate_at]  # fmt: skip
                results.setdefault((layout, strategy), []).append(runs.run(flags))
    return results


def write(results, out):
    """The CSV files; returns the summary rows."""
    epochs, migrations, summary = [], [], []
    for (layout, strategy), done in results.items():
        for i, run in enumerate(done):
            epochs += [(layout, strategy, i, t, latency) for t, latency in run.epochs]
            migrations.append((layout, strategy, i, run.moved_bins, run.start_ms, run.end_ms,
                               run.duration_ms, run.steady_p50_ms(), run.max_ms(), run.state_mb))  # fmt: skip
        summary.append((layout, strategy, len(done), common.median(r.steady_p50_ms() for r in done),
                        common.median(r.max_ms() for r in done), common.median(r.duration_ms for r in done)))  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    with gzip.open(out / "latency.csv.gz", "wt", newline="") as compressed:
        writer = csv.writer(compressed)
        writer.writerow(["layout", "strategy", "run", "t_ms", "latency_ms"])
        writer.writerows(epochs)
    common.write_csv(out / "migrations.csv", ["layout", "strategy", "run", "moved_bins", "start_ms", "end_ms",
                                              "duration_ms", "steady_p50_ms", "max_ms", "state_mb"], migrations)  # fmt: skip
    common.write_csv(out / "latency_summary.csv", ["layout", "strategy", "runs", "steady_p50_ms", "max_ms",
                                                   "duration_ms"], summary)  # fmt: skip
    return summary


def plot(results, args):
    """One panel per strategy (columns) and layout (rows): the first run's latency over time."""
    fig, axes = common.figure(len(args.layouts), len(args.strategies), width=4.5, height=3.0)
    panels = [(layout, strategy) for layout in args.layouts for strategy in args.strategies]
    for ax, (layout, strategy) in zip(axes, panels):
        run = results[(layout, strategy)][0]
        ax.axvspan(run.start_ms / 1e3, run.end_ms / 1e3, color="tab:orange", alpha=0.25, label="migration")
        ax.plot([t / 1e3 for t, _ in run.epochs], [lat for _, lat in run.epochs], lw=0.6)
        ax.set_yscale("log")
        ax.set_title(f"{strategy}, {layout} (processes x workers)", fontsize=9)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("epoch latency (ms)")
        ax.legend(loc="upper left", fontsize=7)
    for row in range(len(args.layouts)):  # one latency scale per layout, to compare strategies
        cells = axes[row * len(args.strategies):(row + 1) * len(args.strategies)]
        low, high = min(ax.get_ylim()[0] for ax in cells), max(ax.get_ylim()[1] for ax in cells)
        for ax in cells:
            ax.set_ylim(low, high)
    fig.suptitle(f"Keyed count, {args.bins} bins, {results[panels[0]][0].state_mb:.0f} MB of state, half moved; "
                 f"{args.rate} records/s in 1 ms epochs", fontsize=10)  # fmt: skip
    fig.savefig(args.out / "latency.png", dpi=110)


def main():
    args = arguments()
    if not args.no_build:
        runs.build()
    print(f"load average before: {common.load()}")
    results = measure(args)
    print(f"load average after: {common.load()}")
    summary = write(results, args.out)
    plot(results, args)
    print("| layout | strategy | runs | steady p50 (ms) | max during migration (ms) | migration (ms) |")
    print("|---|---|---|---|---|---|")
    for row in summary:
        print("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
