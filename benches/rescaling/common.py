"""Helpers shared by the rescaling experiment drivers in this directory.

Owns: locating and building the Rust binaries the drivers run, running a command and
parsing its CSV output, medians, the machine's load, and writing a CSV file. Must not
decide what an experiment measures or how it is plotted (each driver does that).
"""

import csv
import io
import os
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RELEASE = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release"


def build(binaries, package="timely-benches", examples=False):
    """Builds the release ``binaries`` of ``package`` (examples if ``examples``)."""
    flag = "--example" if examples else "--bin"
    args = ["cargo", "build", "--release", "-q", "-p", package]
    for name in binaries:
        args += [flag, name]
    subprocess.run(args, cwd=ROOT, check=True)


def binary(name):
    """The path of a release binary of the workspace."""
    return RELEASE / name


def load():
    """The 1-minute load average, as a string for reports."""
    return f"{os.getloadavg()[0]:.2f}"


def run_csv(args, timeout):
    """Runs ``args`` and returns (rows of its CSV stdout as dicts, its ``# ...`` comment lines)."""
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    lines = done.stdout.splitlines()
    comments = [line[2:].split(",") for line in lines if line.startswith("# ")]
    rows = list(csv.DictReader(io.StringIO("\n".join(line for line in lines if not line.startswith("#")))))
    return rows, comments


def median(values):
    """The median of ``values`` (None if there are none)."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def write_csv(path, header, rows):
    """Writes ``rows`` (sequences) under ``header`` to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)


def figure(rows, columns, width=6.0, height=3.2):
    """A matplotlib figure (no display needed) with a grid of axes, and the axes as a flat list."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * columns, height * rows), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False)
    return fig, [ax for row in axes for ax in row]
