"""The local launcher: runs every process of a timely_py cluster on this machine, and adds
processes to it or makes them leave while it runs.

``python -m timely_py.launch -n 3 -w 2 SCRIPT [ARGS...]`` starts process ``i`` of 3 as
``PYTHON SCRIPT ARGS -n 3 -p i -w 2 [-h HOSTFILE]`` (the runtime's flags go after the
script's own arguments, before a ``--`` among them if there is one), prefixes each line the
processes print with ``[i] ``, and ends them all when one fails or on Ctrl-C. While they run,
`add_process` (from a program the launcher started) or ``python -m timely_py.launch add``
(from a terminal) makes it start the next process with ``--join W --nn N``, which joins the
running cluster (``docs/launcher.md``, ``docs/rescaling.md``); `remove_process` or
``python -m timely_py.launch remove`` makes it send SIGUSR1 to a process, which then leaves
the cluster and exits 0 while the others run on.

The parts, one concern each: `options` (command line, each process's flags and environment),
`ports` (free ports, the hostfile), `relay` (output), `children` (starting processes),
`supervise` (stopping them, exit status), `control` (the control endpoint's socket and
requests), `desks` (the lines requests wait in, and which line each goes to), `joins` (which
add request starts which process, when), `leaves` (which remove request asks which process
to leave, when), `client` (`add_process`, `remove_process` and the ``add`` and ``remove``
subcommands), `entry` (`main`).

The launcher must not know about dataflows, workers, the wire protocol or the engine: it never
uses ``timely_py._core``, and it passes nothing to a child that the child could not be given
by hand, on its command line and in its environment. Whether the processes find each other,
and what they compute, is the runtime's business; the one thing it reads of a running process
is whether the runtime's join acceptor thread exists (`children.admits_joins`).
"""

from __future__ import annotations

from .client import add_process, remove_process
from .entry import SETUP_FAILED, main
from .errors import LaunchError
from .options import (
    DEFAULT_BASE_PORT,
    DEFAULT_GRACE,
    DEFAULT_STOP_GRACE,
    ENV_AUTOSCALE,
    ENV_CLUSTER_ID,
    ENV_CLUSTER_SECRET,
    ENV_LAUNCH_CONTROL,
    Options,
    child_command,
    child_environment,
    parse_args,
)
from .ports import LAST_PORT, pick_ports, plan_hostfile, port_is_free
from .relay import MAX_LINE
from .supervise import KILL_AFTER, POLL_INTERVAL, STOP_SIGNALS

__all__ = [
    "DEFAULT_BASE_PORT",
    "DEFAULT_GRACE",
    "DEFAULT_STOP_GRACE",
    "KILL_AFTER",
    "LAST_PORT",
    "MAX_LINE",
    "POLL_INTERVAL",
    "SETUP_FAILED",
    "STOP_SIGNALS",
    "ENV_AUTOSCALE",
    "ENV_CLUSTER_ID",
    "ENV_CLUSTER_SECRET",
    "ENV_LAUNCH_CONTROL",
    "LaunchError",
    "Options",
    "add_process",
    "child_command",
    "child_environment",
    "main",
    "parse_args",
    "pick_ports",
    "plan_hostfile",
    "port_is_free",
    "remove_process",
]
