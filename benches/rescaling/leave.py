"""Rescaling experiment 5: per-record latency before, during and after a process leaves.

Runs ``rescale_latency`` (3 processes of one worker by default, the first two injecting at a
modest rate; process 2 leaves at ``--leave`` seconds) ``--runs`` times, alternating with a
control run of the same cluster without the leave. Per run: the steady p99 before the leave
(the median of the 100 ms windows from 1 s to 0.1 s before it), the p99 of the leave (the
worst window from 0.1 s before it to 0.5 s after worker 0 saw the process gone), the steady
p99 after it (the median of the windows from 0.5 s after it to the end), the same windows of
the control, and the leave's time (from ``leave()`` to worker 0 seeing the process gone).
With ``--evacuate`` (and ``--keyed`` after ``--``) worker 0 first moves the leaver's bins off
it with the run's ``--strategy``, one step after the other, and the process leaves once they
have moved: the leave's window then starts when the evacuation was planned, and the
evacuation's time (planned to last step complete) is printed too.
Every record must arrive exactly once (``rescale_latency`` fails otherwise). Prints every
run and the medians (``docs/rescaling.md``, experiment 5). Arguments after ``--`` go to every
run. It measures only.

    .venv/bin/python benches/rescaling/leave.py --runs 7
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

HEADER = "runs,evacuate_ms,leave_ms,before_p99_us,leave_p99_us,after_p99_us,control_before_p99_us,control_after_p99_us"


def windows(binary, args, leave):
    """The (window start, p99 us) of one run, and the leave's comment (or None)."""
    command = [binary, "--rate", args.rate, "--cost", args.cost, "--joins", "", "--duration", args.duration,
               "--threads", "1", "--initial", "3", "--injectors", "2", *args.shape]  # fmt: skip
    if leave:
        command += ["--leave", f"2@{args.leave}", "--evacuate", "1" if args.evacuate else "0"]
    rows, comments = common.run_csv(command, timeout=args.duration * 3 + 60)
    left = next((c for c in comments if c[0] == "leave"), None)
    evacuated = next((c for c in comments if c[0] == "evacuate"), None)
    return [(float(r["window_s"]), float(r["p99_us"])) for r in rows], left, evacuated


def levels(windows, start, end, duration):
    """Steady p99 before `start`, worst window in [start, end], steady p99 after `end`."""
    before = common.median(p for t, p in windows if 1.0 <= t < start - 0.1)
    # Up to where the steady level after starts: the records a stall held up arrive in a burst
    # once it ends, possibly after the leave.
    during = max(p for t, p in windows if start - 0.1 < t < end + 0.5)
    after = common.median(p for t, p in windows if end + 0.5 <= t < duration - 0.1)
    return before, during, after


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=str(common.RELEASE / "rescale_latency"))
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--cost", type=int, default=50000)
    parser.add_argument("--leave", type=float, default=3.0)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--evacuate", action="store_true", help="move the leaver's bins off it first (--keyed)")
    parser.add_argument("shape", nargs="*", help="after --: more arguments of rescale_latency")
    args = parser.parse_args()
    print(f"load average before: {common.load()}")
    results = []
    for run in range(args.runs):
        measured, left, evacuated = windows(args.binary, args, leave=True)
        asked, gone = float(left[2]), float(left[3])
        planned, moved = (float(evacuated[2]), float(evacuated[3])) if evacuated else (asked, asked)
        before, during, after = levels(measured, planned, gone, args.duration)
        control, _, _ = windows(args.binary, args, leave=False)
        control_before, _, control_after = levels(control, planned, gone, args.duration)
        results.append(((moved - planned) * 1000, (gone - asked) * 1000, before, during, after, control_before,
                        control_after))
        print(f"run {run}: evacuation {results[-1][0]:.1f} ms, leave {results[-1][1]:.1f} ms, "
              f"p99 before {before:.0f} us, during {during:.0f} us, "
              f"after {after:.0f} us; control {control_before:.0f} / {control_after:.0f} us", flush=True)  # fmt: skip
    print(f"load average after: {common.load()}")
    print(HEADER)
    medians = [common.median(r[i] for r in results) for i in range(7)]
    print(f"{args.runs},{medians[0]:.1f},{medians[1]:.1f}," + ",".join(f"{m:.0f}" for m in medians[2:]))


if __name__ == "__main__":
    main()
