"""Reads the runtime flags the launcher appends (-n, -p, -w, -h) without timely_py.

The launcher's test scripts use this instead of cluster mode, so the launcher's tests need
nothing but the standard library. `parse` returns the flags and the script's other args.
"""

import sys

FLAGS = {"-n": "processes", "-p": "process", "-w": "workers", "-h": "hostfile"}


def parse(argv=None):
    """`(flags, rest)`: a dict of the runtime flags found before `--` and the other args."""
    argv = list(sys.argv[1:] if argv is None else argv)
    flags, rest = {}, []
    while argv:
        arg = argv.pop(0)
        if arg == "--":
            rest += [arg, *argv]
            break
        if arg in FLAGS:
            flags[FLAGS[arg]] = argv.pop(0)
        else:
            rest.append(arg)
    return flags, rest


def process_index():
    """This process's index (the value of -p)."""
    return int(parse()[0]["process"])
