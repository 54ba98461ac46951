"""Where the processes listen: free ports and the hostfile passed as ``-h``.

This module owns the choice of ports for every process the cluster may grow to (the initial
ones and the room for joins, ``--max-processes``), the temporary hostfile listing them, and
how many processes a given hostfile has room for. It must not start processes or read what
the runtime does with the addresses.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import Callable, List, Optional, Sequence

from .errors import LaunchError
from .options import DEFAULT_BASE_PORT, Options

__all__ = ["LAST_PORT", "hostfile_room", "pick_ports", "plan_hostfile", "port_is_free"]

#: The highest port the search for free ports tries.
LAST_PORT = 32767


def port_is_free(port: int) -> bool:
    """Whether a listener could take `port` on the loopback addresses (IPv4, and IPv6 where
    this machine has it): the test the runtime's own bind would pass."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue
        with sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError as error:
                if family == socket.AF_INET or error.errno == errno.EADDRINUSE:
                    return False
    return True


def pick_ports(count: int, start: int = DEFAULT_BASE_PORT) -> List[int]:
    """`count` free ports, the lowest from `start` on. They stay below the usual ephemeral
    range, so the processes' own outgoing connections cannot take them first."""
    ports: List[int] = []
    for port in range(start, LAST_PORT + 1):
        if port_is_free(port):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise LaunchError(
        f"found only {len(ports)} free ports from {start} to {LAST_PORT}, need {count}"
    )


def _write_hostfile(directory: str, ports: Sequence[int]) -> str:
    """Writes a hostfile of ``127.0.0.1:PORT`` lines in `directory`; returns its path."""
    path = os.path.join(directory, "hostfile")
    with open(path, "w", encoding="ascii") as file:
        file.write("".join(f"127.0.0.1:{port}\n" for port in ports))
    return path


def plan_hostfile(options: Options, scratch: str, say: Callable[[str], None]) -> Optional[str]:
    """The hostfile to pass as ``-h``, or None for the runtime's default ports. It has an
    address for every process the cluster may grow to (`Options.room`). Temporary hostfiles
    go in `scratch`; `say` reports a change of ports."""
    if options.hostfile is not None:
        if not os.path.isfile(options.hostfile):
            raise LaunchError(f"hostfile {options.hostfile!r} does not exist")
        return os.path.abspath(options.hostfile)
    if options.processes == 1:
        return None
    if options.base_port is not None:
        return _base_port_hostfile(options.base_port, options.room, scratch)
    return _default_hostfile(options.room, scratch, say)


def hostfile_room(options: Options, hostfile: Optional[str]) -> int:
    """How many processes the cluster may grow to: `Options.room`, bounded by the number of
    addresses in a hostfile the user gave (an explicit ``--max-processes`` above it is an
    error)."""
    if options.hostfile is None or hostfile is None or options.processes == 1:
        return options.room
    try:
        with open(hostfile, encoding="utf-8", errors="replace") as file:
            lines = [line.split("#", 1)[0].strip() for line in file]
    except OSError as error:
        raise LaunchError(f"cannot read hostfile {hostfile!r}: {error}") from None
    listed = sum(1 for line in lines if line)
    if options.max_processes is not None and options.max_processes > listed:
        raise LaunchError(
            f"--max-processes {options.max_processes} needs as many addresses, but hostfile "
            f"{hostfile!r} lists {listed}"
        )
    return max(options.processes, min(options.room, listed))


def _base_port_hostfile(base: int, count: int, scratch: str) -> str:
    """A hostfile for ports `base`.. (all of which must be free)."""
    ports = list(range(base, base + count))
    busy = [port for port in ports if not port_is_free(port)]
    if busy:
        raise LaunchError(
            f"port(s) {_list(busy)} in use; choose another --base-port, or leave it out"
        )
    return _write_hostfile(scratch, ports)


def _default_hostfile(count: int, scratch: str, say: Callable[[str], None]) -> Optional[str]:
    """None when the default ports are free, else a hostfile of free ones."""
    default = list(range(DEFAULT_BASE_PORT, DEFAULT_BASE_PORT + count))
    ports = pick_ports(count)
    if ports == default:
        return None
    path = _write_hostfile(scratch, ports)
    busy = sorted(set(default) - set(ports))
    say(f"port(s) {_list(busy)} in use; the processes listen on {_list(ports)} instead "
        f"(hostfile {path})")
    return path


def _list(items: Sequence[object]) -> str:
    """`items` as ``a, b, c``."""
    return ", ".join(str(item) for item in items)
