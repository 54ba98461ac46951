"""Python programs run as subprocesses from the repository root, as users run them: any
script (`python_subprocess`), an example program checked to succeed (`run_example`), and the
launcher run to the end (`launch`)."""

import os
import subprocess
import sys

from support.paths import EXAMPLES, ROOT

#: How long a program of these helpers may run before the test fails as hung.
TIMEOUT = 20


def python_subprocess(args, *, timeout=60, env=None, **kwargs):
    """Runs `python args...` from the repository root; returns the CompletedProcess."""
    env = dict(os.environ if env is None else env)
    env["PYTHONUNBUFFERED"] = "1"
    return subprocess.run(
        [sys.executable, *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def run_example(name, *args):
    """Runs `examples/NAME ARGS`; checks that it succeeded; returns its standard output."""
    done = python_subprocess([EXAMPLES / name, *args], timeout=60)
    assert done.returncode == 0, f"{name} {args} failed:\n{done.stdout}\n{done.stderr}"
    assert "panicked at" not in done.stderr
    return done.stdout


def launch(*args, timeout=TIMEOUT):
    """Runs the launcher (`python -m timely_py.launch ARGS`); returns the CompletedProcess."""
    return python_subprocess(["-m", "timely_py.launch", *args], timeout=timeout)
