"""Prints its pid, then loops until interrupted. With `deaf P`, process P ignores SIGINT
(so only SIGTERM ends it). Usage: forever.py [deaf P]."""

import os
import signal
import time

from cluster_flags import parse

flags, rest = parse()
index = int(flags["process"])
if rest[:1] == ["deaf"] and int(rest[1]) == index:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
print(f"pid={os.getpid()}")
try:
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    print("interrupted")
    raise
