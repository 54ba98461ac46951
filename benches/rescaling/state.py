"""Rescaling experiment 3: the size of the accumulated progress state over rounds.

Runs ``rescale_state`` (``benches/src/bin/rescale_state.rs``) for each workload
(``exchange``, ``loop``, ``notify``) on 1, 2 and 4 workers of one process, ``--runs`` times,
sampling every worker's ``progress_state_sizes()`` every ``--every`` rounds. Per workload,
worker count and round it keeps the largest total over the workers and the median of that
over runs; writes ``state.csv`` and ``state.png`` (size over rounds) into ``--out`` and prints,
per series, the size at the first sample after warm-up and at the end, and the growth per
1000 rounds between them. It measures only.

    .venv/bin/python benches/rescaling/state.py                     # ~10 s
    .venv/bin/python benches/rescaling/state.py --rounds 50000 --every 1000
"""

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

HERE = Path(__file__).resolve().parent
WORKLOADS = ("exchange", "loop", "notify")


def run_once(workload, workers, args):
    """round -> the largest total over the workers, for one run."""
    command = [common.binary("rescale_state"), workload, "--rounds", args.rounds, "--every", args.every,
               "--records", args.records, "-w", workers]  # fmt: skip
    rows, _ = common.run_csv(command, timeout=600)
    largest = defaultdict(int)
    for row in rows:
        largest[int(row["round"])] = max(largest[int(row["round"])], int(row["total"]))
    return largest


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--records", type=int, default=1000, help="records per round per worker")
    parser.add_argument("--workers", type=lambda s: [int(w) for w in s.split(",")], default=[1, 2, 4])
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if not args.no_build:
        common.build(["rescale_state"])
    print(f"load average before: {common.load()}")
    series = {}
    for workload in WORKLOADS:
        for workers in args.workers:
            runs = [run_once(workload, workers, args) for _ in range(args.runs)]
            series[(workload, workers)] = {r: common.median(run[r] for run in runs) for r in sorted(runs[0])}
    print(f"load average after: {common.load()}")
    common.write_csv(
        args.out / "state.csv",
        ["workload", "workers", "round", "pointstamps"],
        [(w, n, r, size) for (w, n), sizes in series.items() for r, size in sizes.items()],
    )
    print("workload  workers  at_round  size  at_round  size  growth_per_1000_rounds")
    for (workload, workers), sizes in series.items():
        rounds = list(sizes)
        first = next((r for r in rounds if r >= args.every), rounds[0])
        last = rounds[-1]
        growth = (sizes[last] - sizes[first]) * 1000 / (last - first) if last > first else 0.0
        print(f"{workload:9} {workers:7}  {first:8}  {sizes[first]:4}  {last:8}  {sizes[last]:4}  {growth:.1f}")
    plot(series, args.out / "state.png")


def plot(series, path):
    fig, axes = common.figure(1, len(WORKLOADS), width=4.5)
    for ax, workload in zip(axes, WORKLOADS):
        for (name, workers), sizes in series.items():
            if name == workload:
                ax.plot(list(sizes), list(sizes.values()), label=f"{workers} workers")
        ax.set_title(workload)
        ax.set_xlabel("round")
        ax.set_ylabel("distinct pointstamps (largest worker)")
        ax.legend()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
