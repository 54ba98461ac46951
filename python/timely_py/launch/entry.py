"""The launcher's entry point: ``python -m timely_py.launch``.

This module owns `main`: it reads the command line (or hands ``add ...`` and ``remove ...``
to the client), plans the hostfile, opens the control endpoint, starts the initial
processes, and runs the supervisor with the desks that serve the endpoint's requests (joins
and leaves, behind one `desks.RequestRouter`) until every process ended. It must not hold logic of its own
beyond wiring the parts together.
"""

from __future__ import annotations

import secrets
import sys
import tempfile
import threading
from typing import List, Optional, Sequence

from .children import Child, drain, kill_now, spawn, start_relays
from .client import add_main, remove_main
from .control import ControlEndpoint
from .desks import RequestRouter
from .errors import LaunchError
from .joins import JoinDesk
from .leaves import LeaveDesk
from .options import Options, child_command, child_environment, parse_args
from .ports import hostfile_room, plan_hostfile
from .relay import Sink
from .supervise import StopRequests, Supervisor, catching_stop_signals

__all__ = ["SETUP_FAILED", "main"]

#: Exit status when the cluster could not be started (bad options, busy ports, no interpreter).
SETUP_FAILED = 2


def _spawn_all(options: Options, hostfile: Optional[str], env: dict[str, str]) -> List[Child]:
    """Starts every initial process; on a failure, kills those already started and raises
    LaunchError. The relays are started later: no thread may run while these are forked."""
    children: List[Child] = []
    for index in range(options.processes):
        try:
            children.append(spawn(index, child_command(options, index, hostfile), env))
        except LaunchError:
            kill_now(children)
            raise
    return children


def _open_endpoint(options: Options, scratch: str, err: Sink) -> Optional[ControlEndpoint]:
    """The control endpoint, for a cluster that something can join or leave (two processes or
    more)."""
    if options.processes == 1:
        return None
    endpoint = ControlEndpoint(scratch)
    err.say(f"control endpoint {endpoint.address} (add a process: python -m timely_py.launch add "
            f"--control {endpoint.address} [--server W]; remove one: python -m timely_py.launch "
            f"remove --control {endpoint.address} --process P)")
    return endpoint


def _run(options: Options, hostfile: Optional[str], scratch: str, out: Sink, err: Sink) -> int:
    """Starts the cluster, serves add and remove requests and relays output until every
    process ended, and returns the exit status."""
    room = hostfile_room(options, hostfile)
    endpoint = _open_endpoint(options, scratch, err)
    address = None if endpoint is None else endpoint.address
    env = child_environment(options.cluster_id, secrets.token_hex(32), address, options.autoscale_environment())
    if options.autoscale is not None:
        low, high, target = options.autoscale
        err.say(f"autoscaling between {low} and {high} processes at target utilisation {target:g}: the "
                "program's timely_py.autoscale.Autoscaler acts on it (docs/autoscaling.md)")
    requests = StopRequests()
    try:
        with catching_stop_signals(requests):
            children = _spawn_all(options, hostfile, env)
            for child in children:
                start_relays(child, out, err)
            supervisor = Supervisor(children, options, requests, err)
            if endpoint is not None:
                endpoint.start()
                joins = JoinDesk(options, hostfile, room, env, children, out, err)
                leaves = LeaveDesk(options, children, err)
                supervisor.tick = RequestRouter(endpoint, joins, leaves).tick
            supervisor.run()
    finally:
        if endpoint is not None:
            endpoint.close()
    drain(children)
    return supervisor.outcome()


def _exit_status(code: object) -> int:
    """The status a SystemExit with `code` stands for."""
    if code is None:
        return 0
    return code if isinstance(code, int) else SETUP_FAILED


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the launcher with `argv` (default: ``sys.argv[1:]``) and returns its exit status:
    0 when every process exited 0, 128+signal after a stop signal, the first failing
    process's status otherwise, and 2 when the cluster could not be started. ``add ...``
    asks a running launcher for a process instead (`client.add_main`), ``remove ...`` asks it
    to make a process leave (`client.remove_main`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["add"]:
        return add_main(argv[1:])
    if argv[:1] == ["remove"]:
        return remove_main(argv[1:])
    try:
        options = parse_args(argv)
    except SystemExit as exit_:
        return _exit_status(exit_.code)
    lock = threading.Lock()
    out, err = Sink(sys.stdout, lock), Sink(sys.stderr, lock)
    with tempfile.TemporaryDirectory(prefix="timely-launch-") as scratch:
        try:
            hostfile = plan_hostfile(options, scratch, err.say)
            return _run(options, hostfile, scratch, out, err)
        except LaunchError as error:
            err.say(f"error: {error}")
            return SETUP_FAILED
