"""Running a program once and timing it, for the tracing-overhead scripts in this directory.

Owns: the wall time, the CPU time (user + system of the child) and the computation time a
Rust example prints ("... in 654.1ms", a Rust `Duration` after " in "), medians of them, and
an overhead as table cells. Must not decide which workloads run or how tables look.
"""

from __future__ import annotations

import re
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

#: How a Rust example reports its dataflow's time.
COMPUTATION = re.compile(r" in ([0-9.]+)(ns|µs|ms|s)\b")
UNIT_S = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


@dataclass(frozen=True)
class Timing:
    """One run: wall and CPU seconds, and the computation's seconds if the program printed them."""

    wall: float
    cpu: float
    computation: float | None


def run(command: list[str], cwd: Path | None = None) -> Timing:
    """Runs `command`, exiting with its error output if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr}")
    found = [COMPUTATION.search(line) for line in done.stdout.splitlines()]
    reported = [float(m.group(1)) * UNIT_S[m.group(2)] for m in found if m]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu, reported[-1] if reported else None)


def median(runs: list[Timing], field: str) -> float | None:
    """The median of `field` over `runs` (None unless every run has it)."""
    values = [getattr(run, field) for run in runs]
    return None if any(v is None for v in values) else statistics.median(values)


def overhead(off: float | None, on: float | None) -> tuple[str, str, str]:
    """Off, traced (seconds) and the overhead as table cells ("-" when not measured)."""
    if off is None or on is None:
        return "-", "-", "-"
    return f"{off:.3f}", f"{on:.3f}", f"{on / off - 1:+.1%}"
