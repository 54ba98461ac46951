"""examples/hello.py, but process 1 (of the initial ones) starts its cluster DELAY seconds
late, printing `late start` on stderr just before, so the cluster's setup takes that long.
Usage: late_hello.py DELAY [HELLO_ARGS] RUNTIME_FLAGS"""

import runpy
import sys
import time
from pathlib import Path

delay = float(sys.argv.pop(1))
flags = sys.argv[1:]
if "--join" not in flags and flags[flags.index("-p") + 1] == "1":
    time.sleep(delay)
    print("late start", file=sys.stderr, flush=True)
runpy.run_path(str(Path(__file__).resolve().parents[3] / "examples" / "hello.py"), run_name="__main__")
