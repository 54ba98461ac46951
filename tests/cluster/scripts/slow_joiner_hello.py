"""examples/hello.py, but the workers of a joining process (`--join`) sleep DELAY seconds
before they build their dataflow, so that the next process can join the cluster while they
still wait for their own bootstrap (the race of back-to-back joins, docs/launcher.md).
Usage: slow_joiner_hello.py DELAY [HELLO_ARGS] RUNTIME_FLAGS"""

import runpy
import sys
import time
from pathlib import Path

import timely_py as timely

delay = float(sys.argv.pop(1))
hello = runpy.run_path(str(Path(__file__).resolve().parents[3] / "examples" / "hello.py"), run_name="hello")


def main(worker):
    if "--join" in sys.argv:
        time.sleep(delay)
    hello["main"](worker)


timely.execute_from_args(sys.argv[1:], main)
