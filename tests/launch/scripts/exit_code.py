"""Exits with the code given for this process: exit_code.py CODE0 CODE1 ..."""

import sys

from cluster_flags import parse

flags, rest = parse()
sys.exit(int(rest[int(flags["process"])]))
