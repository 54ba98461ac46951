"""Writes many long lines to stdout and stderr in small pieces, then bytes that are not
UTF-8, then a last line without a newline. Usage: chatter.py LINES."""

import sys

from cluster_flags import parse

flags, rest = parse()
index, lines = int(flags["process"]), int(rest[0])
payload = "x" * 200
for i in range(lines):
    stream = sys.stdout if i % 2 == 0 else sys.stderr
    # Several writes per line: the launcher must still relay whole lines.
    stream.write(f"p={index} ")
    stream.write(f"i={i} ")
    stream.write(payload)
    stream.write("\n")
sys.stdout.buffer.write(b"bad \xff\xfe bytes\n")
sys.stdout.write(f"last line of {index} without newline")
