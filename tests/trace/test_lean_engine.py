"""A Rust program on timely-engine with its default features, built without trace files
(`examples/lean_engine`, which `scripts/build.sh --tests` builds): it runs, and asking it for
a trace, on the command line or in the environment, fails with an error that says it was
built without trace files, before any worker starts and without writing anything."""

import os
import subprocess

import pytest
from support.paths import RELEASE, built

PROGRAM = RELEASE / "lean-engine-example"
# 0..100 sent once, whatever the number of workers, each seen as itself + 1.
EXPECTED = "records 100\nsum 5050\n"


def run(*args, env=None):
    environment = {key: value for key, value in os.environ.items() if not key.startswith("TIMELY_TRACE")}
    environment.update(env or {})
    return subprocess.run([str(built(PROGRAM)), *args], capture_output=True, text=True, timeout=60, env=environment)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("workers", ["1", "3"])
def test_the_program_runs(workers):
    done = run("-w", workers)
    assert done.returncode == 0, done.stderr
    assert done.stdout == EXPECTED


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_trace_asked_for_is_refused(tmp_path, how):
    trace = tmp_path / "trace"
    if how == "option":
        done = run("-w", "2", "--trace", str(trace))
    else:
        done = run("-w", "2", env={"TIMELY_TRACE_DIR": str(trace)})
    assert done.returncode != 0
    assert "built without trace files" in done.stderr and "trace-files" in done.stderr, done.stderr
    assert str(trace) in done.stderr, done.stderr
    assert done.stdout == "", "no result is printed"
    assert not trace.exists()
