"""The launcher's command line and what each process is given.

This module owns: the launcher's options (`Options`, `parse_args`, the help text), the command
line of each process (`child_command`, with ``--join W --nn N`` for a process added to the
running cluster) and its environment (`child_environment`: the cluster's id and secret, the
address of the launcher's control endpoint, and the autoscaler's settings of ``--autoscale``).

It must not start processes, open sockets or know what the processes compute.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from .. import _core

__all__ = [
    "DEFAULT_BASE_PORT",
    "DEFAULT_TARGET",
    "ENV_AUTOSCALE",
    "ENV_CLUSTER_ID",
    "ENV_CLUSTER_SECRET",
    "ENV_LAUNCH_CONTROL",
    "EXTRA_ROOM",
    "Options",
    "child_command",
    "child_environment",
    "parse_args",
]

#: Process ``i`` listens on ``localhost:DEFAULT_BASE_PORT + i`` unless given a hostfile.
DEFAULT_BASE_PORT = 2101
#: The environment variable that carries the cluster id (a u64) to every process.
ENV_CLUSTER_ID = "TIMELY_CLUSTER_ID"
#: The environment variable that carries the cluster secret to every process.
ENV_CLUSTER_SECRET = "TIMELY_CLUSTER_SECRET"
#: The environment variable that carries the launcher's control endpoint (a socket path).
ENV_LAUNCH_CONTROL = "TIMELY_LAUNCH_CONTROL"
#: The environment variable that carries ``--autoscale``'s settings (JSON) to every process,
#: where `timely_py.autoscale.Settings.from_environment` reads them.
ENV_AUTOSCALE = "TIMELY_AUTOSCALE"
#: The bottleneck's utilisation the autoscaler aims at by default (``--target``).
DEFAULT_TARGET = 0.7
#: How many processes can join a cluster of ``-n N`` by default: ``--max-processes N+4``.
EXTRA_ROOM = 4
#: Seconds the others get to end by themselves after a process failed (``--grace``).
DEFAULT_GRACE = 10.0
#: Seconds the processes get to end after the SIGINT a stop request sends (``--stop-grace``).
DEFAULT_STOP_GRACE = 5.0

_DESCRIPTION = """\
Runs an N-process timely_py cluster on this machine: process i (0 <= i < N) is started as

    PYTHON SCRIPT ARGS -n N -p i -w W [-h HOSTFILE]

(the runtime's flags go after the script's own ARGS, before a "--" among them if there is
one; the runtime reads them and timely_py.program_args strips them for the script).

    python -m timely_py.launch add [--control ADDRESS] [--server W]
    python -m timely_py.launch remove [--control ADDRESS] --process P

ask a running launcher to add a process to its cluster, or to make process P leave it (see
"joining" and "leaving" below)."""

_EPILOG = """\
ports:
  By default process i listens on localhost:2101+i. The launcher checks that the ports of
  all --max-processes processes are free; if one is not, it picks free ports, writes them to
  a temporary hostfile (127.0.0.1:PORT lines) passed as -h to every process, and says so on
  stderr. --base-port also makes a temporary hostfile. --hostfile FILE is passed on as
  -h FILE. Temporary files are removed when the launcher exits. With -n 1 no ports are used.

autoscaling:
  --autoscale [--min N --max M --target T] passes the autoscaler's settings to every process
  in TIMELY_AUTOSCALE (JSON); a program that drives timely_py.autoscale.Autoscaler (worker 0
  ticks it, docs/autoscaling.md) then adds processes and makes them leave within [N, M],
  aiming at utilisation T of its bottleneck operator. --min defaults to -n, --max to
  --max-processes (whose default then becomes --max), --target to 0.7. Needs -n 2 or more.

joining:
  With N >= 2 the launcher keeps a control endpoint (a Unix socket only its user can use),
  prints its address on stderr, and passes it to every process in TIMELY_LAUNCH_CONTROL.
  "add" (or timely_py.launch.add_process() in a program) makes it start the next process p
  as PYTHON SCRIPT ARGS -n N -p p -w W --join S --nn p+1 [-h HOSTFILE], served by worker S,
  supervised like the others. Joins go one at a time: the launcher starts a joiner once
  every process runs and admits joins. --max-processes M (default N+4) bounds the cluster.

leaving:
  "remove --process P" (or timely_py.launch.remove_process(P) in a program) makes the
  launcher send SIGUSR1 to process P alone, once it and every joiner admit joins. Its
  workers leave the cluster (worker.leaving becomes True and its inputs are released: the
  program stops feeding) and P exits 0 once drained, which is no failure: the others run on.
  At least one process that is not leaving must stay; joins wait while a process leaves.

security:
  The cluster id (--cluster-id, default random) and a random secret made for this launch
  reach the processes in the environment variables TIMELY_CLUSTER_ID and
  TIMELY_CLUSTER_SECRET, never on a command line, so ps does not show them.

output:
  Every line a process writes is written to the launcher's stdout or stderr (the same one
  the process used), prefixed "[i] ", whole lines only. Bytes that are not UTF-8 are shown
  as U+FFFD; a last line without a newline gets one. Processes run with PYTHONUNBUFFERED=1
  and read stdin from /dev/null. The launcher's own messages start with "[launch]".

stopping:
  Each process runs in its own process group, so Ctrl-C in a terminal reaches only the
  launcher, which sends SIGINT to every process (they raise KeyboardInterrupt and stop),
  SIGTERM after --stop-grace seconds, and SIGKILL 2 s later. Another Ctrl-C (or SIGTERM,
  SIGHUP) skips to the next step. On Linux a process also gets SIGTERM if the launcher dies.
  When a process fails, the others get --grace seconds to end by themselves (the runtime
  ends them when it loses a peer), then SIGTERM and SIGKILL.

exit status:
  0 when every process exits 0; after a stop signal 128+signal (130 for Ctrl-C); otherwise
  the exit status of the first process that failed by itself (128+signal if a signal killed
  it), after a report on stderr of every process that failed. 2 when the cluster could not
  be started.

examples:
  python -m timely_py.launch -n 3 -w 2 examples/hello.py
  python -m timely_py.launch -n 2 -m mypackage.job --input data.txt
  python -m timely_py.launch -n 2 --grace 3 -- job.py -- --option-for-the-script
  python -m timely_py.launch add --control /tmp/timely-launch-XXXX/control --server 1
  python -m timely_py.launch remove --control /tmp/timely-launch-XXXX/control --process 2"""


@dataclass(frozen=True)
class Options:
    """What to launch and how, as read from the launcher's command line."""

    processes: int
    workers: int
    target: Tuple[str, ...]
    """``(SCRIPT,)`` or ``("-m", MODULE)``."""
    args: Tuple[str, ...]
    python: str
    hostfile: Optional[str]
    base_port: Optional[int]
    cluster_id: int
    grace: float
    stop_grace: float
    trace: Optional[str] = None
    """A trace directory every process writes its part of the trace to (``--trace``)."""
    max_processes: Optional[int] = None
    """The most processes the cluster may grow to (``--max-processes``); None for the default,
    `processes` + `EXTRA_ROOM` (1 with ``-n 1``: nothing can join a process alone)."""
    autoscale: Optional[Tuple[int, int, float]] = None
    """``(min, max, target)`` of ``--autoscale``; None without it."""

    def autoscale_environment(self) -> Optional[str]:
        """The value of `ENV_AUTOSCALE` for ``--autoscale`` (None without it)."""
        if self.autoscale is None:
            return None
        low, high, target = self.autoscale
        return json.dumps({"min_processes": low, "max_processes": high, "target": target})

    @property
    def room(self) -> int:
        """How many processes the launcher plans addresses for."""
        if self.processes == 1:
            return 1
        if self.max_processes is None:
            return self.processes + EXTRA_ROOM
        return self.max_processes


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer from `low` to `high`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, found {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, found {value}")
        return value

    return parse


def seconds(text: str) -> float:
    """An argparse type: a non-negative number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, found {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, found {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    """The parser of the launcher's own options (the command after them is split off first)."""
    parser = argparse.ArgumentParser(
        prog="python -m timely_py.launch",
        usage="%(prog)s -n N [-w W] [options] [--] (SCRIPT | -m MODULE) [ARGS...]",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    add = parser.add_argument
    add("-n", "--processes", type=bounded_int(1, 65535), required=True, metavar="N",
        help="number of processes (>= 1)")
    add("-w", "--workers", type=bounded_int(1, 1 << 16), default=1, metavar="W",
        help="worker threads per process (default 1)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--base-port", type=bounded_int(1, 65535), metavar="PORT",
                       help="process i listens on 127.0.0.1:PORT+i (through a temporary hostfile)")
    where.add_argument("--hostfile", metavar="FILE",
                       help="one host:port a line, passed on as -h FILE")
    add("--max-processes", type=bounded_int(1, 65535), metavar="M",
        help=f"the cluster may grow to M processes by joins (default N+{EXTRA_ROOM}; "
             "with --hostfile at most its addresses)")
    add("--cluster-id", type=bounded_int(0, (1 << 64) - 1), metavar="ID",
        help="the cluster id, a u64 (default: random)")
    add("--python", default=sys.executable, metavar="EXE",
        help="the interpreter that runs the processes (default: this one)")
    add("--grace", type=seconds, default=DEFAULT_GRACE, metavar="SECONDS",
        help=f"after a process failed, how long the others may run on (default {DEFAULT_GRACE:g})")
    add("--stop-grace", type=seconds, default=DEFAULT_STOP_GRACE, metavar="SECONDS",
        help=f"after Ctrl-C, how long before SIGTERM (default {DEFAULT_STOP_GRACE:g})")
    add("--trace", metavar="DIR",
        help="trace the run: every process writes its part to DIR (docs/trace-format.md)")
    scaling = parser.add_argument_group("autoscaling (docs/autoscaling.md)")
    scaling.add_argument("--autoscale", action="store_true",
                         help="let the program's autoscaler add and remove processes (see below)")
    scaling.add_argument("--min", type=bounded_int(1, 65535), metavar="N", dest="min_processes",
                         help="the fewest processes it may shrink to (default: -n)")
    scaling.add_argument("--max", type=bounded_int(1, 65535), metavar="M", dest="max_processes_scaled",
                         help="the most processes it may grow to (default: --max-processes)")
    scaling.add_argument("--target", type=_fraction, metavar="T",
                         help=f"the bottleneck's utilisation to aim at, in (0, 1) (default {DEFAULT_TARGET:g})")
    return parser


def _fraction(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, found {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), found {text}")
    return value


def _autoscale(parser: argparse.ArgumentParser, space: argparse.Namespace) -> Optional[Tuple[int, int, float]]:
    """``(min, max, target)`` of the autoscaling options (None without ``--autoscale``); sets
    ``space.max_processes`` to ``--max`` when only that bounds the cluster."""
    given = [flag for flag, value in (("--min", space.min_processes), ("--max", space.max_processes_scaled),
                                      ("--target", space.target)) if value is not None]
    if not space.autoscale:
        if given:
            parser.error(f"{', '.join(given)} {'goes' if len(given) == 1 else 'go'} only with --autoscale")
        return None
    if space.processes < 2:
        parser.error("--autoscale needs -n 2 or more (a process alone has no control endpoint to grow by)")
    low = space.processes if space.min_processes is None else space.min_processes
    high = space.max_processes_scaled
    if high is None:
        high = space.max_processes if space.max_processes is not None else space.processes + EXTRA_ROOM
    elif space.max_processes is None:
        space.max_processes = max(high, space.processes)
    elif high > space.max_processes:
        parser.error(f"--max {high} is above --max-processes {space.max_processes}: no addresses are planned "
                     "for the processes past it")
    if low > high:
        parser.error(f"--min {low} is above --max {high}")
    target = DEFAULT_TARGET if space.target is None else space.target
    return (low, high, target)


def _split_command(argv: Sequence[str], value_flags: frozenset[str]) -> Tuple[List[str], List[str]]:
    """Splits `argv` into the launcher's options and the command: the command starts after
    ``--``, at ``-m``, or at the first argument that is not an option."""
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            return list(argv[:index]), list(argv[index + 1 :])
        if arg.startswith("-m") or not arg.startswith("-") or arg == "-":
            return list(argv[:index]), list(argv[index:])
        index += 2 if arg in value_flags else 1
    return list(argv), []


def _target(command: Sequence[str]) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The script (or ``-m MODULE``) and its arguments; raises ValueError if there is none."""
    if not command:
        raise ValueError("a SCRIPT or -m MODULE to run is required")
    head = command[0]
    if head == "-m":
        if len(command) < 2:
            raise ValueError("-m needs a module name")
        return ("-m", command[1]), tuple(command[2:])
    if head.startswith("-m"):
        return ("-m", head[2:]), tuple(command[1:])
    if head.startswith("-") and head != "-":
        raise ValueError(f"expected SCRIPT or -m MODULE, found option {head!r}")
    return (head,), tuple(command[1:])


def parse_args(argv: Sequence[str]) -> Options:
    """Reads the launcher's command line (without the program name). Exits through
    argparse (status 2, or 0 for ``--help``) when it is malformed."""
    parser = _parser()
    value_flags = frozenset(
        flag for action in parser._actions if action.nargs != 0 for flag in action.option_strings
    )
    ours, command = _split_command(argv, value_flags)
    space = parser.parse_args(ours)
    try:
        target, args = _target(command)
    except ValueError as error:
        parser.error(str(error))
    autoscale = _autoscale(parser, space)
    if space.max_processes is not None and space.max_processes < space.processes:
        parser.error(f"--max-processes {space.max_processes} is below -n {space.processes}")
    options = Options(
        processes=space.processes, workers=space.workers, target=target, args=args,
        python=space.python, hostfile=space.hostfile, base_port=space.base_port,
        cluster_id=secrets.randbits(64) if space.cluster_id is None else space.cluster_id,
        grace=space.grace, stop_grace=space.stop_grace,
        trace=None if space.trace is None else os.path.abspath(space.trace),
        max_processes=space.max_processes, autoscale=autoscale,
    )
    if space.base_port is not None and space.base_port + options.room - 1 > 65535:
        parser.error(f"--base-port {space.base_port} leaves no port for process {options.room - 1}")
    return options


def child_command(
    options: Options, index: int, hostfile: Optional[str], join: Optional[int] = None,
    gone: Sequence[int] = (),
) -> List[str]:
    """The command line of process `index`: the script and its arguments, with the runtime's
    flags after them (before the script's ``--``, if it has one, which the runtime stops at).
    With `join` (a worker index), the process joins the running cluster through that worker
    as process `index` of ``index + 1``, not dialing the processes `gone` (they left)."""
    values = {"processes": str(options.processes), "process": str(index), "workers": str(options.workers)}
    if join is not None:
        values.update(join=str(join), nn=str(index + 1))
        if gone:
            values["gone"] = ",".join(map(str, gone))
    if hostfile is not None:
        values["hostfile"] = hostfile
    if options.trace is not None:
        values["trace"] = options.trace
    runtime = _core.runtime_args(values)
    args = list(options.args)
    cut = args.index("--") if "--" in args else len(args)
    return [options.python, *options.target, *args[:cut], *runtime, *args[cut:]]


def child_environment(cluster_id: int, secret: str, control: Optional[str] = None,
                      autoscale: Optional[str] = None) -> dict[str, str]:
    """The environment of every process: the launcher's, unbuffered, with the cluster's
    identity (replacing any id or secret the launcher inherited), the launcher's control
    endpoint (removed when there is none, so a process never reaches another launcher's) and
    ``--autoscale``'s settings (likewise removed without it)."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env[ENV_CLUSTER_ID] = str(cluster_id)
    env[ENV_CLUSTER_SECRET] = secret
    env.pop(ENV_LAUNCH_CONTROL, None)
    if control is not None:
        env[ENV_LAUNCH_CONTROL] = control
    env.pop(ENV_AUTOSCALE, None)
    if autoscale is not None:
        env[ENV_AUTOSCALE] = autoscale
    return env
