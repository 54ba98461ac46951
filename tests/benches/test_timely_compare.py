"""Timely's own programs, ours and timely 0.29's, print the same results.

`benches/timely-compare` writes six of timely-dataflow's example programs twice, on our
engine (`compare-ours`) and on timely 0.29 from crates.io (`compare-timely`); both print a
summary (named sums, modulo 2^64) that the inputs determine. These tests run each program
on small inputs on 1 and 2 workers and on 2 processes of one worker, and check that the two
engines agree and that the summary does not depend on how many workers ran it (no timing is
asserted: docs/benchmarks.md has the figures). `scripts/build.sh --tests` builds both.
"""

import re
import subprocess

import pytest
from support.cluster import write_hostfile
from support.paths import RELEASE, built

pytestmark = [pytest.mark.bench]

ENGINES = ["compare-ours", "compare-timely"]

# Small inputs for every program (parameters in the order `compare-ours` documents).
PROGRAMS = {
    "pingpong": ["50", "2000"],
    "hashjoin": ["2000", "20000", "3000"],
    "bfs": ["20000", "60000"],
    "barrier": ["500"],
    "event_driven": ["20", "5", "300", "1"],
    "pagerank": ["2000", "8000", "40", "4"],
}


def summary(lines):
    """The `key value` lines of one or more processes' output, summed per key modulo 2^64
    (timely's process 0 also says on stdout that it awaits connections)."""
    total = {}
    for line in lines:
        match = re.fullmatch(r"([a-z_]+) ([0-9]+)", line)
        if match:
            key, value = match.groups()
            total[key] = (total.get(key, 0) + int(value)) % 2**64
    return total


def run(engine, program, *runtime):
    done = subprocess.run(
        [str(built(RELEASE / engine)), program, *PROGRAMS[program], *runtime],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, f"{engine} {program} {runtime}: {done.stderr}"
    assert done.stderr.startswith("elapsed "), done.stderr
    return done.stdout.splitlines()


def run_two_processes(engine, program, directory):
    directory.mkdir()
    hostfile, _ports = write_hostfile(directory, 2)
    command = [str(built(RELEASE / engine)), program, *PROGRAMS[program], "-n", "2", "-h", str(hostfile)]
    children = [
        subprocess.Popen([*command, "-p", str(index)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for index in range(2)
    ]
    lines = []
    try:
        for child in children:
            out, err = child.communicate(timeout=60)
            assert child.returncode == 0, f"{engine} {program} on 2 processes: {err}"
            lines += out.splitlines()
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    return lines


@pytest.mark.timeout(120)
@pytest.mark.parametrize("program", PROGRAMS)
def test_both_engines_agree_on_one_and_two_workers(program):
    results = {(engine, workers): summary(run(engine, program, "-w", str(workers))) for engine in ENGINES for workers in (1, 2)}
    reference = results[("compare-timely", 1)]
    assert reference and all(value > 0 for value in reference.values()), reference
    for (engine, workers), result in results.items():
        # Barrier and event_driven count per worker: their sums grow with the workers.
        expected = {key: value * workers for key, value in reference.items()} if program in ("barrier", "event_driven") else reference
        assert result == expected, f"{engine} on {workers} workers"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("program", PROGRAMS)
def test_both_engines_agree_on_two_processes(program, tmp_path):
    ours = summary(run_two_processes("compare-ours", program, tmp_path / "ours"))
    theirs = summary(run_two_processes("compare-timely", program, tmp_path / "timely"))
    assert ours and ours == theirs
    assert ours == summary(run("compare-ours", program, "-w", "2"))
