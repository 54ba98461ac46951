"""Rescaling experiment 4, side by side: the latency spike of one join for two builds.

Runs ``rescale_latency`` (modest rate by default, one join at ``--join`` seconds) of each
``--build NAME=BINARY``, alternating builds run by run (``--runs`` each). Per run: the steady
p99 before the join (the median of the 100 ms windows from 1 s to 0.1 s before the join), the
p99 of the join (the worst window from 0.1 s before the join to 0.1 s after its bootstrap),
the steady p99 after it (the median of the windows from 0.5 s after the join to the end) and
the join's bootstrap time. Prints every run and, per build, the medians and the ratios
join/before and join/after (``docs/rescaling.md``, experiment 4). Arguments after ``--`` go
to every run of ``rescale_latency`` (the cluster's shape, say: ``-- --threads 1 --initial 3
--injectors 2``). It measures only.

    .venv/bin/python benches/rescaling/spike.py --build old=/tmp/rescale_latency_old \\
        --build new=target/release/rescale_latency --runs 7
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def measure(binary, args):
    """(before, join, after) p99 in us and the bootstrap in ms, of one run of ``binary``."""
    rows, comments = common.run_csv(
        [binary, "--rate", args.rate, "--cost", args.cost, "--joins", args.join, "--duration", args.duration,
         *args.shape],
        timeout=args.duration * 3 + 60,
    )  # fmt: skip
    spawned, bootstrapped = (float(v) for v in next(c for c in comments if c[0] == "join")[2:4])
    windows = [(float(r["window_s"]), float(r["p99_us"])) for r in rows]
    before = common.median(p for t, p in windows if 1.0 <= t < spawned - 0.1)
    join = max(p for t, p in windows if spawned - 0.1 < t <= bootstrapped + 0.1)
    after = common.median(p for t, p in windows if spawned + 0.5 <= t < args.duration - 0.1)
    return before, join, after, (bootstrapped - spawned) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="append", required=True, help="NAME=PATH of a rescale_latency binary")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--cost", type=int, default=50000)
    parser.add_argument("--join", type=float, default=3.0)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("shape", nargs="*", help="after --: more arguments of rescale_latency")
    args = parser.parse_args()
    builds = [tuple(build.split("=", 1)) for build in args.build]
    print(f"load average before: {common.load()}")
    runs = {name: [] for name, _ in builds}
    for run in range(args.runs):
        for name, binary in builds:
            result = measure(binary, args)
            runs[name].append(result)
            print(f"{name} run {run}: before {result[0]:.0f} us, join {result[1]:.0f} us, "
                  f"after {result[2]:.0f} us, bootstrap {result[3]:.1f} ms", flush=True)  # fmt: skip
    print(f"load average after: {common.load()}")
    print("build,bootstrap_ms,before_p99_us,join_p99_us,after_p99_us,join_over_before,join_over_after")
    for name, results in runs.items():
        before, join, after, boot = (common.median(r[i] for r in results) for i in range(4))
        over_before = common.median(r[1] / r[0] for r in results)
        over_after = common.median(r[1] / r[2] for r in results)
        print(f"{name},{boot:.1f},{before:.0f},{join:.0f},{after:.0f},{over_before:.1f},{over_after:.1f}")


if __name__ == "__main__":
    main()
