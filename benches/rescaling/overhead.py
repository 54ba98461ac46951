"""Rescaling experiment 1: the steady-state cost of rescaling support, old build vs new.

Runs the engine's ``hello`` (``ROUNDS --quiet``: time per round) and ``exchange``
(``RECORDS ROUNDS``: records/s, summed over processes) examples of two builds side by side: ``--old`` (the examples
directory of a build of the commit before the rescaling work, 9bff028) and ``--new`` (this
worktree's), each in one process with 2 workers (``-w 2``) and as 2 processes of 1 worker on
loopback (``-n 2 -p I -h HOSTFILE``, fresh ports per run). Runs alternate old/new, ``--runs``
times; the medians and the ratio new/old go to ``overhead.csv`` (every run too) and
``overhead.png`` in ``--out``, with the load average. It measures only.

    git worktree add --detach /tmp/old 9bff028
    (cd /tmp/old && CARGO_TARGET_DIR=/tmp/old-target cargo build --release -p timely-engine --examples)
    .venv/bin/python benches/rescaling/overhead.py --old /tmp/old-target/release/examples   # ~2-3 min
"""

import argparse
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

HERE = Path(__file__).resolve().parent

# workload -> (its arguments, the figure's regex in a process's output, unit, higher is better)
WORKLOADS = {
    "hello": (lambda a: [a.rounds, "--quiet"], r"([0-9.]+) µs per round", "us/round", False),
    "exchange": (lambda a: [a.records, a.exchange_rounds], r"([0-9.]+) M records/s", "M records/s", True),
}


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def measure(program, args, processes, pattern, timeout):
    """Runs ``program`` (1 process of 2 workers, or ``processes`` of 1) and returns its figure
    (process 0's for a time, the sum over processes for a rate)."""
    if processes == 1:
        commands = [[program, *args, "-w", "2"]]
    else:
        hostfile = Path(tempfile.mkstemp(suffix=".hosts")[1])
        hostfile.write_text("".join(f"127.0.0.1:{port}\n" for port in free_ports(processes)))
        commands = [[program, *args, "-n", processes, "-h", hostfile, "-p", p] for p in range(processes)]
    procs = [subprocess.Popen([str(a) for a in c], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in commands]  # fmt: skip
    figures = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        found = re.search(pattern, out)
        if proc.returncode != 0 or not found:
            raise RuntimeError(f"{program} failed ({proc.returncode}): {out[-500:]} {err[-1000:]}")
        figures.append(float(found.group(1)))
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True, help="examples directory of the old build")
    parser.add_argument("--new", type=Path, default=common.RELEASE / "examples")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=40000, help="hello's rounds")
    parser.add_argument("--records", type=int, default=1000000, help="exchange's records per round per worker")
    parser.add_argument("--exchange-rounds", type=int, default=10)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if not args.no_build:
        common.build(["hello", "exchange"], package="timely-engine", examples=True)
    print(f"load average before: {common.load()}")
    rows = []
    for run in range(args.runs):
        for workload, (arguments, pattern, unit, rate) in WORKLOADS.items():
            for processes in (1, 2):
                for build in ("old", "new"):
                    program = getattr(args, build) / workload
                    figures = measure(program, arguments(args), processes, pattern, timeout=300)
                    value = sum(figures) if rate else figures[0]
                    rows.append((workload, processes, build, run, value, unit))
    print(f"load average after: {common.load()}")
    common.write_csv(args.out / "overhead_runs.csv", ["workload", "processes", "build", "run", "value", "unit"], rows)
    summary = summarize(rows)
    header = ["workload", "processes", "unit", "old_median", "new_median", "new_over_old"]
    common.write_csv(args.out / "overhead.csv", header, summary)
    for line in summary:
        print("{:9} {}p {:12} old {:10.3f} new {:10.3f} new/old {:.3f}".format(*line))
    plot(summary, args.out / "overhead.png")


def summarize(rows):
    """Per workload and process count: the medians of both builds and their ratio."""
    summary = []
    for workload, (_, _, unit, _) in WORKLOADS.items():
        for processes in (1, 2):
            old, new = (
                common.median(r[4] for r in rows if r[:3] == (workload, processes, build)) for build in ("old", "new")
            )
            summary.append((workload, processes, unit, old, new, new / old))
    return summary


def plot(summary, path):
    fig, (ax,) = common.figure(1, 1)
    labels = [f"{w} {p}p\n({unit})" for w, p, unit, *_ in summary]
    ax.bar(labels, [ratio for *_, ratio in summary])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylabel("new / old (median)")
    ax.set_title("new / old build (us/round: >1 is slower; records/s: <1 is slower)", fontsize=10)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
