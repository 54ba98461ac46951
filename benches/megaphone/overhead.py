"""Megaphone experiment 3: steady-state overhead against a plain exchange and count, by bins.

Runs the crate's example ``crates/megaphone/examples/overhead.rs`` once with every variant:
``exchange`` (exchange by key, a ``HashMap`` count) and ``state_machine`` counting the same
words with each number of bins in ``--bins``, no migration. The example feeds ``--epochs``
epochs of ``--records`` records (keys from 100,000) on ``--workers`` workers and waits for
each epoch, so a run's time is the sum of per-epoch latencies; it runs the variants
interleaved, ``--runs`` times each. This driver reads every run's time from its output.

Writes into ``--out``: ``overhead.csv`` (variant, bins, run, ms), ``overhead_summary.csv``
(median ms and its ratio to ``exchange`` per variant) and ``overhead.png`` (the ratio against
bins, every run's ratio to the median exchange run as dots). Prints the summary and the load
average. Measures only.

    .venv/bin/python benches/megaphone/overhead.py           # ~2 minutes
    .venv/bin/python benches/megaphone/overhead.py --quick   # a few seconds
"""

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runs import common  # noqa: E402

HERE = Path(__file__).resolve().parent
EXAMPLE = common.RELEASE / "examples" / "overhead"


def arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bins", default="1,4,16,64,256,1024,4096")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="a small fast run (for tests)")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    if args.quick:
        args.bins, args.epochs, args.records, args.runs = "1,4096", 20, 5_000, 1
    args.bins = [int(b) for b in args.bins.split(",")]
    return args


def measure(args):
    """``{variant: [ms, ...]}`` from one run of the example (variants in the order given)."""
    variants = ["exchange"] + [str(b) for b in args.bins]
    command = [EXAMPLE, args.epochs, args.records, args.runs, args.workers, ",".join(variants)]
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, check=True,
                          timeout=60 + args.runs * len(variants) * args.epochs)  # fmt: skip
    # Each variant's line: name, median, ratio, then every run's time.
    times = {}
    for line in done.stdout.splitlines():
        cells = line.split()
        if cells and (cells[0] == "exchange" or cells[0].startswith("megaphone/")):
            times[cells[0]] = [float(ms) for ms in cells[3:]]
    if len(times) != len(variants) or any(len(ms) != args.runs for ms in times.values()):
        raise RuntimeError(f"unexpected output of the overhead example:\n{done.stdout}")
    return times


def bins_of(variant):
    return "" if variant == "exchange" else int(variant.split("/")[1])


def main():
    args = arguments()
    if not args.no_build:
        common.build(["overhead"], package="timely-megaphone", examples=True)
    print(f"load average before: {common.load()}")
    times = measure(args)
    print(f"load average after: {common.load()}")
    baseline = common.median(times["exchange"])
    rows = [(v, bins_of(v), i, ms) for v, all_ms in times.items() for i, ms in enumerate(all_ms)]
    common.write_csv(args.out / "overhead.csv", ["variant", "bins", "run", "ms"], rows)
    summary = [(v, bins_of(v), len(ms), common.median(ms), round(common.median(ms) / baseline, 3))
               for v, ms in times.items()]  # fmt: skip
    common.write_csv(args.out / "overhead_summary.csv", ["variant", "bins", "runs", "median_ms", "ratio"], summary)
    plot(times, baseline, args)
    print("| variant | median (ms) | ratio to exchange |")
    print("|---|---|---|")
    for variant, _, _, ms, ratio in summary:
        print(f"| {variant} | {ms:.1f} | {ratio:.2f} |")


def plot(times, baseline, args):
    fig, (ax,) = common.figure(1, 1, width=6.0, height=3.6)
    megaphone = [(bins_of(v), ms) for v, ms in times.items() if v != "exchange"]
    for bins, all_ms in megaphone:
        ax.scatter([bins] * len(all_ms), [ms / baseline for ms in all_ms], s=8, color="tab:gray", alpha=0.6)
    ax.plot([b for b, _ in megaphone], [common.median(ms) / baseline for _, ms in megaphone], marker="o",
            label="state_machine (median)")  # fmt: skip
    ax.axhline(1.0, color="black", lw=0.8, ls="--", label="exchange + HashMap (median)")
    ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("bins")
    ax.set_ylabel("run time / exchange's median")
    ax.set_title(f"Word count, {args.epochs} epochs of {args.records} records, {args.workers} workers, "
                 f"{args.runs} interleaved runs", fontsize=9)  # fmt: skip
    ax.legend(fontsize=8)
    fig.savefig(args.out / "overhead.png", dpi=110)


if __name__ == "__main__":
    main()
