"""Process FAILER exits with CODE after a moment; the others print their pid and sleep for a
minute (or ignore SIGTERM too with `stubborn`). Usage: fail_one.py FAILER CODE [stubborn]."""

import os
import signal
import sys
import time

from cluster_flags import parse

flags, rest = parse()
index, failer, code = int(flags["process"]), int(rest[0]), int(rest[1])
print(f"pid={os.getpid()}")
if index == failer:
    time.sleep(0.3)
    print(f"process {index} fails", file=sys.stderr)
    sys.exit(code)
if "stubborn" in rest:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(60)
