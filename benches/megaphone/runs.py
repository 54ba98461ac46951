"""Running ``megaphone_latency`` (``benches/src/bin/megaphone_latency.rs``) and reading one run.

Owns: the binary's command line, parsing its per-epoch CSV and summary lines into a ``Run``,
and the figures every driver derives from one run (steady latency before the migration, the
worst latency around it, how long it took). Must not decide which runs an experiment makes
or how they are plotted (``latency.py`` and ``sweep.py`` do). Building binaries, medians, CSV
writing and figures come from the rescaling drivers' ``common`` module.
"""

import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rescaling"))
import common  # noqa: E402,F401  (re-exported for the drivers)

#: Processes x workers: the binary's flags for each layout.
LAYOUTS = {"1x2": ["--processes", 1, "--workers", 2], "2x1": ["--processes", 2, "--workers", 1]}

#: How long after the migration's end a latency still counts as "during the migration" (ms):
#: the backlog built up while bins were in flight drains in this time.
RECOVERY_MS = 200.0


@dataclass
class Run:
    """One run: per-epoch ``(t_ms, latency_ms)`` and the binary's summary lines."""

    epochs: list
    moved_bins: int
    start_ms: float
    end_ms: float
    sent: int
    processed: int
    moved: tuple  # records of moved bins: before on the old owner, after on the new, elsewhere
    state_mb: float

    @property
    def duration_ms(self):
        """From the first command's epoch start until the probe passed the last command's epoch
        (None if it never did)."""
        return None if math.isnan(self.end_ms) else round(self.end_ms - self.start_ms, 3)

    def steady_p50_ms(self):
        """The median latency of the epochs before the migration."""
        before = [latency for t, latency in self.epochs if t < self.start_ms]
        return statistics.median(before) if before else None

    def max_ms(self):
        """The worst latency from the migration's start until ``RECOVERY_MS`` after its end."""
        end = math.inf if math.isnan(self.end_ms) else self.end_ms + RECOVERY_MS
        during = [lat for t, lat in self.epochs if self.start_ms <= t <= end]
        return max(during) if during else None


def run(flags, timeout=300):
    """Runs the binary with ``flags`` (name, value pairs flattened); returns its ``Run``."""
    rows, comments = common.run_csv([common.binary("megaphone_latency"), *flags], timeout=timeout)
    lines = {c[0]: c[1:] for c in comments}
    return Run(
        epochs=[(float(r["t_ms"]), float(r["latency_ms"])) for r in rows],
        moved_bins=int(lines["migration"][0]),
        start_ms=float(lines["migration"][1]),
        end_ms=float(lines["migration"][2]),
        sent=int(lines["records"][0]),
        processed=int(lines["records"][1]),
        moved=tuple(int(n) for n in lines["moved"]),
        state_mb=float(lines["state_mb"][0]),
    )


def build():
    """Builds the binary (release)."""
    common.build(["megaphone_latency"])
