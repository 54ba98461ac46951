"""Rescaling experiment 2 (and the latency half of 4): per-record latency over time across joins.

Runs ``rescale_latency`` (``benches/src/bin/rescale_latency.rs``): 2 processes x 2 workers,
then a 2-worker process joins at each of ``--joins`` seconds (2 -> 3 -> 4 processes); the
first 4 workers inject records at a fixed total rate, each record goes through an exchange
and a stateless map (a hash loop of ``--cost`` rounds, or a ``--sleep-us`` sleep) and its
latency is measured at the end. Scenarios (each run ``--runs`` times, alternating):

- ``modest``: a rate the initial workers handle easily (the issue's 2x-p99 target applies);
- ``saturating``: a rate that keeps the 2 cores busy with the hash loop;
- ``sleep``: per-record work that is a sleep, at a rate that saturates 4 workers but not 6
  or 8, so more workers can help even on 2 cores;
- ``modest-born-4p``: the control, the modest run on 4 processes from the start, no joins
  (its steady p99 is what the modest run's level after the joins compares to);
- ``keyed-sleep``: the sleep scenario with keyed state: the map is a Megaphone word count
  (``--keyed 256``) and worker 0 rebalances its bins over every worker (batched) each time the
  cluster grows, so the joined workers take over state (the seed's Megaphone experiment,
  ``docs/megaphone.md``).

Writes ``latency.csv`` (per scenario, run and 100 ms window: records, p50, p99, max in us),
``joins.csv`` (when each join was spawned and its first worker bootstrapped),
``latency_summary.csv`` and ``latency.png`` (per-window medians over runs of p50/p99, joins
marked) into ``--out``, and prints the summary with the load average. It measures only.

    .venv/bin/python benches/rescaling/latency.py                 # ~2.5 minutes
    .venv/bin/python benches/rescaling/latency.py --runs 5 --duration 30 --joins 10,20
"""

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

HERE = Path(__file__).resolve().parent


def scenarios(args):
    """Scenario name -> the binary's workload flags."""
    return {
        "modest": ["--rate", args.modest_rate, "--cost", args.cost],
        "saturating": ["--rate", args.saturating_rate, "--cost", args.cost],
        "sleep": ["--rate", args.sleep_rate, "--cost", 0, "--sleep-us", args.sleep_us],
        # The control: the modest run on a cluster born with the size the joins reach.
        "modest-born-4p": ["--rate", args.modest_rate, "--cost", args.cost, "--initial", 2 + len(args.joins),
                           "--joins", ""],
        "keyed-sleep": ["--rate", args.sleep_rate, "--cost", 0, "--sleep-us", args.sleep_us, "--keyed", 256,
                        "--strategy", "batched"],
    }


def run_once(args, flags):
    """One run: (windows as dicts with floats, joins as (k, spawned_s, bootstrapped_s))."""
    joins = ",".join(str(t) for t in args.joins)
    command = [common.binary("rescale_latency"), "--duration", args.duration, "--joins", joins, *flags]
    rows, comments = common.run_csv(command, timeout=args.duration * 3 + 60)
    windows = [{key: float(value) for key, value in row.items()} for row in rows]
    marks = [(int(c[1]), float(c[2]), float(c[3]) if c[3] else None) for c in comments if c[0] == "join"]
    return windows, marks


def window_medians(runs):
    """Per window start: the medians over runs of p50 and p99 (us)."""
    by_window = defaultdict(list)
    for windows, _ in runs:
        for window in windows:
            by_window[window["window_s"]].append(window)
    return {
        start: (common.median(w["p50_us"] for w in ws), common.median(w["p99_us"] for w in ws))
        for start, ws in sorted(by_window.items())
    }


def summarize(runs, args, window_s):
    """Medians over runs of: the median window p99 from ``--warmup`` seconds to the first join (the
    whole run if none), the worst window p99 during a join (from its spawn to 0.5 s after its
    bootstrap), and the median window p99 from ``--warmup`` after the last bootstrap to the end."""

    def p99_between(windows, low, high, pick):
        values = [w["p99_us"] for w in windows if low <= w["window_s"] and w["window_s"] + window_s <= high]
        return pick(values) if values else None

    steady, during, after = [], [], []
    for windows, marks in runs:
        first = marks[0][1] if marks else args.duration
        last = marks[-1][2] or marks[-1][1] if marks else None
        steady.append(p99_between(windows, args.warmup, first, common.median))
        spikes = [p99_between(windows, s - window_s, (b or s) + 0.5, max) for _, s, b in marks]
        during.append(max((s for s in spikes if s is not None), default=None))
        after.append(p99_between(windows, last + args.warmup, args.duration, common.median) if marks else None)
    return common.median(steady), common.median(during), common.median(after)


def plot(results, args, path):
    fig, axes = common.figure(len(results), 1, width=8.0)
    for ax, (name, runs) in zip(axes, results.items()):
        medians = window_medians(runs)
        starts = list(medians)
        ax.plot(starts, [m[0] / 1e3 for m in medians.values()], label="p50")
        ax.plot(starts, [m[1] / 1e3 for m in medians.values()], label="p99")
        for k, spawned, done in runs[0][1]:
            ax.axvline(spawned, color="black", linestyle="--", linewidth=0.8)
            if done is not None:
                ax.axvline(done, color="grey", linestyle=":", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_title(f"{name}: {' '.join(str(f) for f in scenarios(args)[name] if f != '')}")
        ax.set_ylabel("latency (ms)")
        ax.legend(loc="upper left")
    axes[-1].set_xlabel("time (s); dashed: join spawned, dotted: joiner bootstrapped")
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=12.0)
    parser.add_argument("--joins", type=lambda s: [float(t) for t in s.split(",")], default=[4.0, 8.0])
    parser.add_argument("--cost", type=int, default=50000, help="hash-loop rounds per record")
    parser.add_argument("--modest-rate", type=int, default=2000)
    parser.add_argument("--saturating-rate", type=int, default=16000)
    parser.add_argument("--sleep-us", type=int, default=200)
    parser.add_argument("--sleep-rate", type=int, default=16000)
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds left out of a steady phase")
    parser.add_argument("--only", nargs="*", help="scenarios to run (default: all)")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if not args.no_build:
        common.build(["rescale_latency"])
    chosen = {n: f for n, f in scenarios(args).items() if not args.only or n in args.only}
    print(f"load average before: {common.load()}")
    results = {name: [] for name in chosen}
    for run in range(args.runs):
        for name, flags in chosen.items():
            results[name].append(run_once(args, flags))
    print(f"load average after: {common.load()}")
    write_results(results, args)


def write_results(results, args):
    window_s = 0.1
    common.write_csv(
        args.out / "latency.csv",
        ["scenario", "run", "window_s", "records", "p50_us", "p99_us", "max_us"],
        [(name, run, w["window_s"], int(w["records"]), w["p50_us"], w["p99_us"], w["max_us"])
         for name, runs in results.items() for run, (windows, _) in enumerate(runs) for w in windows],
    )  # fmt: skip
    common.write_csv(
        args.out / "joins.csv",
        ["scenario", "run", "join", "spawned_s", "bootstrapped_s"],
        [(name, run, *mark) for name, runs in results.items() for run, (_, marks) in enumerate(runs) for mark in marks],
    )  # fmt: skip
    summary = []
    print("scenario        steady_p99_ms  join_p99_ms  after_joins_p99_ms  join/steady  join/after")
    show = lambda v: "-" if v is None else f"{v / 1e3:.2f}"  # noqa: E731
    ratio = lambda a, b: a / b if a and b else None  # noqa: E731
    for name, runs in results.items():
        steady, during, after = summarize(runs, args, window_s)
        summary.append((name, steady, during, after, ratio(during, steady), ratio(during, after)))
        shown = [show(v) for v in (steady, during, after)]
        shown += ["-" if r is None else f"{r:.1f}" for r in summary[-1][4:]]
        print("{:15} {:>13}  {:>11}  {:>18}  {:>11}  {:>10}".format(name, *shown))
    header = ["scenario", "steady_p99_us", "join_p99_us", "after_p99_us", "join_over_steady", "join_over_after"]
    common.write_csv(args.out / "latency_summary.csv", header, summary)
    plot(results, args, args.out / "latency.png")


if __name__ == "__main__":
    main()
