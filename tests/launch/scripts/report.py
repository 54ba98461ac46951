"""Prints one JSON line describing how the launcher started this process, then exits 0."""

import json
import os
import sys

from cluster_flags import parse

flags, rest = parse()
hostfile = flags.get("hostfile")
print(json.dumps({
    "argv": sys.argv[1:],
    "flags": flags,
    "rest": rest,
    "cluster_id": os.environ.get("TIMELY_CLUSTER_ID"),
    "secret": os.environ.get("TIMELY_CLUSTER_SECRET"),
    "unbuffered": os.environ.get("PYTHONUNBUFFERED"),
    "hosts": open(hostfile).read().split() if hostfile else None,
    "stdin": sys.stdin.read(),
    "control": os.environ.get("TIMELY_LAUNCH_CONTROL"),
}))
