"""Asking a running launcher to add or remove a process: `add_process`, `remove_process`
and the ``add`` and ``remove`` subcommands.

This module owns the client side of the control endpoint (`control`): connecting to it,
sending one request, reading one answer, and turning a refusal into `LaunchError`. A program
started by the launcher finds the endpoint in ``TIMELY_LAUNCH_CONTROL``; a person at a
terminal copies the address the launcher printed::

    python -m timely_py.launch add --control /tmp/timely-launch-XXXX/control --server 1
    python -m timely_py.launch remove --control /tmp/timely-launch-XXXX/control --process 2

It must not start processes itself or know how the launcher decides.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import Callable, Optional, Sequence

from .control import MAX_REQUEST
from .errors import LaunchError
from .options import ENV_LAUNCH_CONTROL, bounded_int, seconds

__all__ = ["DEFAULT_TIMEOUT", "add_main", "add_process", "remove_main", "remove_process"]

#: Seconds `add_process` and `remove_process` wait for the launcher's answer by default (the
#: launcher itself gives up on a request that waited 60 s for the cluster to be ready).
DEFAULT_TIMEOUT = 120.0
#: The largest index the subcommands accept.
_MAX_INDEX = (1 << 31) - 1


def add_process(server: int = 0, *, control: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT) -> int:
    """Asks the launcher that started this cluster to add a process, and returns its index.

    The launcher starts the next process ``p`` with ``--join server --nn p+1``: it joins the
    running cluster with worker `server` as its bootstrap server and takes part in every
    dataflow from then on (``worker.peers`` grows on every worker once it handled the join).
    The call returns once the process was started, not once it joined. Joins go one at a
    time: a request made while the previous joiner has not yet been admitted waits for it.

    `control` is the launcher's control endpoint; by default the one in the environment
    variable ``TIMELY_LAUNCH_CONTROL``, which the launcher gives every process it starts.
    Raises `LaunchError` outside a launched cluster, when the launcher is gone, and when it
    refuses (no room left for another process, no worker `server`, a cluster that is
    stopping); `TypeError` if `server` is not an int.

    A controller inside the computation (any worker may call it; call it once)::

        from timely_py import launch

        def main(worker):
            ...
            if worker.index == 0 and rnd == 3:
                print("started process", launch.add_process())
    """
    _check_index(server, "server", "a worker index")
    return _granted({"request": "add", "server": server}, control, timeout, "to add a process")


def remove_process(process: int, *, control: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT) -> int:
    """Asks the launcher that started this cluster to make process `process` leave it, and
    returns `process`.

    The launcher sends that process SIGUSR1; every one of its workers then leaves the
    cluster: it receives no more records, ``worker.leaving`` becomes True, its input handles
    are released (what they accepted is delivered; ``send`` raises ``LeavingError``), and the
    program should stop feeding and return. Once drained, the process ends with status 0
    and the others run on. The call returns once the launcher asked the process to leave,
    not once it left. A request made while that process is still setting up, or while a
    joiner has not yet been admitted, waits for it.

    `control` is as for `add_process`. Raises `LaunchError` outside a launched cluster, when
    the launcher is gone, and when it refuses (no process `process`, one that has ended or
    is already leaving, the last process that would stay, a cluster that is stopping);
    `TypeError` if `process` is not an int.

    A controller inside the computation (call it once, from a process that stays), and what
    the leaving process's workers do::

        from timely_py import launch

        def main(worker):
            ...
            for rnd in range(rounds):
                if worker.leaving:      # this process was asked to leave
                    break               # stop feeding (its inputs were released)
                if worker.index == 0 and rnd == 6:
                    print("asked to leave:", launch.remove_process(2))
                ...
            inp.close()
    """
    _check_index(process, "process", "a process index")
    return _granted({"request": "remove", "process": process}, control, timeout,
                    f"to remove process {process}")


def _check_index(value: object, name: str, meaning: str) -> None:
    """Raises TypeError unless `value` is an int (and not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be {meaning} (int), not {type(value).__name__}")


def _granted(request: dict[str, object], control: Optional[str], timeout: float, what: str) -> int:
    """Sends `request` to the launcher (at `control`, or the environment's endpoint) and
    returns the process index it answers with; raises LaunchError saying it refused `what`."""
    address = control if control is not None else os.environ.get(ENV_LAUNCH_CONTROL)
    if not address:
        raise LaunchError(
            f"not in a cluster started by python -m timely_py.launch: {ENV_LAUNCH_CONTROL} is "
            "not set (pass control=ADDRESS, the control endpoint the launcher printed)"
        )
    reply = _ask(address, request, timeout)
    process = reply.get("process")
    if isinstance(process, int) and not isinstance(process, bool):
        return process
    raise LaunchError(f"the launcher refused {what}: {reply.get('error', reply)}")


def _ask(address: str, request: dict[str, object], timeout: float) -> dict[str, object]:
    """Sends `request` to the endpoint at `address` and returns its answer."""
    if not hasattr(socket, "AF_UNIX"):
        raise LaunchError("this platform has no Unix-domain sockets to reach the launcher")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(address)
            sock.sendall(json.dumps(request).encode("utf-8") + b"\n")
            answer = _read_answer(sock)
        except socket.timeout:
            raise LaunchError(f"the launcher at {address!r} did not answer within {timeout:g} s") from None
        except (FileNotFoundError, ConnectionRefusedError):
            raise LaunchError(f"no launcher listens at {address!r}: it has ended, or the address is wrong") from None
        except OSError as error:
            raise LaunchError(f"cannot reach the launcher at {address!r}: {error}") from None
    try:
        reply = json.loads(answer.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        reply = None
    if not isinstance(reply, dict):
        raise LaunchError(f"the launcher at {address!r} gave an answer that is not one: {answer[:80]!r}")
    return reply


def _read_answer(sock: socket.socket) -> bytes:
    """One answer line, at most `MAX_REQUEST` bytes."""
    data = b""
    while b"\n" not in data and len(data) <= MAX_REQUEST:
        chunk = sock.recv(MAX_REQUEST)
        if not chunk:
            break
        data += chunk
    if b"\n" not in data:
        raise LaunchError("the launcher closed the connection without an answer")
    return data.split(b"\n", 1)[0]


def add_main(argv: Sequence[str]) -> int:
    """``python -m timely_py.launch add``: asks a launcher for a process, prints its index.
    Exit status 0 on success, 1 when refused or unreachable, 2 for a malformed command line."""
    parser = _subcommand_parser(
        "add", "Asks a running launcher to add a process to its cluster (it joins with --join "
               "SERVER). Prints the new process's index.",
    )
    parser.add_argument("--server", type=bounded_int(0, _MAX_INDEX), default=0, metavar="W",
                        help="the worker that serves the join as bootstrap server (default 0)")
    return _run_subcommand(parser, argv, lambda space: add_process(
        space.server, control=space.control, timeout=space.timeout))


def remove_main(argv: Sequence[str]) -> int:
    """``python -m timely_py.launch remove``: asks a launcher to make a process leave its
    cluster, prints the process's index once it was asked. Exit status as for `add_main`."""
    parser = _subcommand_parser(
        "remove", "Asks a running launcher to make a process leave its cluster (SIGUSR1 to "
                  "that process: its workers hand over their work and it exits). Prints the "
                  "process's index once it was asked to leave.",
    )
    parser.add_argument("--process", type=bounded_int(0, _MAX_INDEX), required=True, metavar="P",
                        help="the index of the process that leaves")
    return _run_subcommand(parser, argv, lambda space: remove_process(
        space.process, control=space.control, timeout=space.timeout))


def _subcommand_parser(name: str, description: str) -> argparse.ArgumentParser:
    """The parser of subcommand `name`, with the options every subcommand has."""
    parser = argparse.ArgumentParser(
        prog=f"python -m timely_py.launch {name}", description=description, allow_abbrev=False,
    )
    parser.add_argument("--control", default=os.environ.get(ENV_LAUNCH_CONTROL), metavar="ADDRESS",
                        help=f"the launcher's control endpoint, as it printed it (default: ${ENV_LAUNCH_CONTROL})")
    parser.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"how long to wait for the answer (default {DEFAULT_TIMEOUT:g})")
    return parser


def _run_subcommand(parser: argparse.ArgumentParser, argv: Sequence[str],
                    ask: Callable[[argparse.Namespace], int]) -> int:
    """Reads `argv` with `parser`, makes the request with `ask`, and prints the process index
    it returns; the exit status is 0, 1 (refused or unreachable) or 2 (malformed)."""
    try:
        space = parser.parse_args(list(argv))
    except SystemExit as exit_:
        return 0 if exit_.code == 0 else 2
    if not space.control:
        parser.print_usage(sys.stderr)
        print(f"error: --control ADDRESS is required outside a launched cluster ({ENV_LAUNCH_CONTROL} is not set)",
              file=sys.stderr)
        return 2
    try:
        process = ask(space)
    except LaunchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(process)
    return 0
