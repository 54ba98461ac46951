"""examples/hello.py, but process 1 (of the initial ones) starts its cluster DELAY seconds
late, printing `late start T` on stderr just before (T the wall clock, `time.time()`), so
the cluster's setup takes that long; a joining process prints `joiner start T` as it starts.
Usage: late_hello.py DELAY [HELLO_ARGS] RUNTIME_FLAGS"""

import runpy
import sys
import time
from pathlib import Path

delay = float(sys.argv.pop(1))
flags = sys.argv[1:]
if "--join" in flags:
    print(f"joiner start {time.time()}", file=sys.stderr, flush=True)
elif flags[flags.index("-p") + 1] == "1":
    time.sleep(delay)
    print(f"late start {time.time()}", file=sys.stderr, flush=True)
runpy.run_path(str(Path(__file__).resolve().parents[3] / "examples" / "hello.py"), run_name="__main__")
