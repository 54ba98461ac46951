"""The launcher running in the background (`Launched`), as the join tests drive it: its
output in files, its control endpoint, processes added from a terminal (`add`), and the
`[p] worker W: seen X` lines of hello-like programs checked to show every record once."""

import re
import subprocess
import sys
import time
from collections import Counter

import pytest

from support.paths import ROOT

#: How long a launched cluster of these tests may run (most take 2 to 5 s; a machine loaded
#: to 15 on 2 cores has stretched one to over 20).
TIMEOUT = 60



class Launched:
    """`python -m timely_py.launch ARGS` running in the background, output in files; killed
    (with its process group's children, through their parent-death signal) at the end."""

    def __init__(self, tmp_path, *args):
        self.dir = tmp_path
        with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "timely_py.launch", *map(str, args)],
                cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(TIMEOUT)

    def out(self):
        return (self.dir / "out").read_text()

    def err(self):
        return (self.dir / "err").read_text()

    def wait_for(self, pattern, stream="out"):
        """The first match of `pattern` in the launcher's stdout (or stderr)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            text = self.out() if stream == "out" else self.err()
            match = re.search(pattern, text, re.MULTILINE)
            if match:
                return match
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"never saw {pattern!r}:\n{self.out()}\n{self.err()}")
            time.sleep(0.02)

    def control(self):
        return self.wait_for(r"^\[launch\] control endpoint (\S+) ", "err").group(1)

    def status(self, timeout=TIMEOUT):
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the launcher still runs after {timeout} s:\n{self.out()}\n{self.err()}")



def seen(out):
    """`(record, worker, process)` of every `[p] worker W: seen X` line."""
    found = re.findall(r"^\[(\d+)\] worker (\d+): seen (\d+)$", out, re.MULTILINE)
    return sorted((int(x), int(w), int(p)) for p, w, x in found)



def assert_exactly_once(records):
    xs = [x for x, _, _ in records]
    assert xs == list(range(len(xs))), f"every record exactly once: {Counter(xs)}"



def add(control, *args):
    return subprocess.run(
        [sys.executable, "-m", "timely_py.launch", "add", "--control", control, *map(str, args)],
        cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
    )

