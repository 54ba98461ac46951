"""Megaphone experiment 2: worst latency and migration duration against bins and state size.

For every number of bins in ``--bins`` and every state size in ``--states`` (``KEYS:BYTES``:
that many keys, each with a count and BYTES bytes of state), one run of ``megaphone_latency`` (2
workers: ``--layout 1x2`` in one process, ``2x1`` in two over loopback; ``--rate`` records/s in
1 ms epochs) moves half of the bins to the other worker at ``--migrate-at`` seconds, all at once
and in batches (``batched:N`` with ``N = max(1, bins / 32)``: each worker sends a quarter of the
bins, so 8 batches, or fewer with fewer than 32 bins), the batches at consecutive epochs
(``batched``) or ``--gap`` epochs apart (``batched@GAP``). Runs alternate between strategies,
bins and sizes, ``--runs`` times.

Writes into ``--out`` (LAYOUT is ``--layout``): ``sweep_LAYOUT.csv`` (per run: bins, keys, state
bytes and MB, strategy, migration duration, steady median latency, worst latency during the
migration and ``runs.RECOVERY_MS`` after it), ``sweep_LAYOUT_summary.csv`` (medians over runs)
and ``sweep_LAYOUT.png`` (worst latency and duration against bins, one line per strategy and
state size). Prints the summary and the load average. Measures only.

    .venv/bin/python benches/megaphone/sweep.py              # ~10 minutes
    .venv/bin/python benches/megaphone/sweep.py --layout 2x1 # the same across 2 processes
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
    parser.add_argument("--states", default="100000:0,1000000:0,100000:1024,1000000:128", help="KEYS:BYTES,...")
    parser.add_argument("--layout", default="1x2", choices=sorted(runs.LAYOUTS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gap", type=int, default=10, help="epochs (ms) between batches of batched@GAP")
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


def strategies(bins, gap):
    """The strategies compared at ``bins`` bins, as the binary's ``--strategy``."""
    per_worker = max(1, bins // 32)
    return ["all-at-once", f"batched:{per_worker}", f"batched:{per_worker}@{gap}"]


def label(strategy):
    """``(name, per_worker)`` of a ``--strategy``: ``batched:8@10`` is ``("batched@10", "8")``."""
    name, _, rest = strategy.partition(":")
    per_worker, _, gap = rest.partition("@")
    return name + (f"@{gap}" if gap else ""), per_worker


def measure(args):
    """Rows of ``sweep_LAYOUT.csv``, the runs alternating."""
    rows = []
    for i in range(args.runs):
        for keys, state_bytes in args.states:
            for bins in args.bins:
                for strategy in strategies(bins, args.gap):
                    run = runs.run([*runs.LAYOUTS[args.layout], "--bins", bins, "--keys", keys, "--state-bytes", state_bytes, "--strategy", strategy,
                                    "--rate", args.rate, "--duration", args.duration, "--migrate-at", args.migrate_at])  # fmt: skip
                    rows.append({"layout": args.layout, "bins": bins, "keys": keys, "state_bytes": state_bytes, "state_mb": run.state_mb,
                                 "strategy": label(strategy)[0], "per_worker": label(strategy)[1],
                                 "run": i, "moved_bins": run.moved_bins, "duration_ms": run.duration_ms,
                                 "steady_p50_ms": run.steady_p50_ms(), "max_ms": run.max_ms()})  # fmt: skip
    return rows


SUMMARY = ["layout", "keys", "state_bytes", "state_mb", "bins", "strategy", "runs", "steady_p50_ms", "max_ms",
           "duration_ms"]  # fmt: skip


def summarize(rows):
    """Medians over runs per (layout, state, bins, strategy), as dicts with the ``SUMMARY`` keys."""
    groups = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in SUMMARY[:6]), []).append(row)
    return [
        dict(zip(SUMMARY, (*key, len(group), *(common.median(r[k] for r in group) for k in SUMMARY[7:]))))
        for key, group in groups.items()
    ]


STYLES = {"all-at-once": dict(marker="o", ls="-"), "batched": dict(marker="s", ls="--")}


def plot(summary, path):
    """Worst latency and migration duration against bins: a line per strategy and state size."""
    fig, (worst, duration) = common.figure(1, 2, width=5.5, height=3.8)
    lines = sorted({(r["keys"], r["state_bytes"], r["state_mb"], r["strategy"]) for r in summary})
    colors = {state: f"C{i}" for i, state in enumerate(sorted({line[:2] for line in lines}))}  # one per state
    for keys, state_bytes, state_mb, strategy in lines:
        points = sorted((r["bins"], r["max_ms"], r["duration_ms"]) for r in summary
                        if (r["keys"], r["state_bytes"], r["strategy"]) == (keys, state_bytes, strategy))  # fmt: skip
        style = dict(STYLES.get(strategy, dict(marker="^", ls=":")), color=colors[(keys, state_bytes)])
        label = f"{strategy}, {keys:,} keys x {state_bytes} B ({state_mb:g} MB)"
        worst.plot([p[0] for p in points], [p[1] for p in points], label=label, **style)
        duration.plot([p[0] for p in points], [p[2] for p in points], label=label, **style)
    for ax, what in ((worst, "max latency during migration (ms)"), (duration, "migration duration (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bins")
        ax.set_ylabel(what)
        ax.grid(True, which="both", alpha=0.3)
    fig.legend(*worst.get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=7)
    fig.suptitle(f"Half of the bins moved between 2 workers ({summary[0]['layout']}, median over runs)", fontsize=10)
    fig.savefig(path, dpi=110)


def main():
    args = arguments()
    if not args.no_build:
        runs.build()
    print(f"load average before: {common.load()}")
    rows = measure(args)
    print(f"load average after: {common.load()}")
    header = list(rows[0])
    common.write_csv(args.out / f"sweep_{args.layout}.csv", header, [[row[h] for h in header] for row in rows])
    summary = summarize(rows)
    rows_out = [[r[k] for k in SUMMARY] for r in summary]
    common.write_csv(args.out / f"sweep_{args.layout}_summary.csv", SUMMARY, rows_out)
    plot(summary, args.out / f"sweep_{args.layout}.png")
    print("| keys | bytes/key | state (MB) | bins | strategy | steady p50 (ms) | max (ms) | migration (ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in summary:
        print(f"| {r['keys']:,} | {r['state_bytes']} | {r['state_mb']:g} | {r['bins']} | {r['strategy']} | "
              f"{r['steady_p50_ms']:.2f} | {r['max_ms']:.1f} | {r['duration_ms']:.1f} |")


if __name__ == "__main__":
    main()
