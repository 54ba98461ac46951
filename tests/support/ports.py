"""Free loopback ports: the one scheme every suite uses for the clusters it starts.

Each pytest process (one per pytest-xdist worker) hands out ports from its own block of
10000-32767, so two workers never pick the same port at the same moment; within its block
it walks on from a place that depends on its process id (another pytest running at the same
time most likely starts elsewhere) and skips ports that something already holds. Every
port is below 32768, where Linux's ephemeral range starts, so no outgoing connection takes
a port before its listener binds it. The launcher's own default (2101 and up) is never used
here: tests that exercise it run in the xdist group `default_ports`.

Another test run on the same machine (a second pytest, or the Rust tests, which use
20000-31999) may pick the same port between this one's check and its process's bind; so each
port handed out is also claimed with a lock on `$TMPDIR/timely-test-ports/PORT.lock`, the
files the Rust tests lock too, held until this process exits or has claimed `HELD` more."""

import collections
import errno
import fcntl
import itertools
import os
import socket
import tempfile

FIRST, LAST = 10000, 32767
BLOCK = 2000


def _candidates():
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    start = FIRST + (index % ((LAST - FIRST + 1) // BLOCK)) * BLOCK
    offset = os.getpid() % 25 * (BLOCK // 25)
    return itertools.cycle([*range(start + offset, start + BLOCK), *range(start, start + offset)])


_PORTS = _candidates()


def is_free(port):
    """Whether 127.0.0.1:`port` can be bound, with SO_REUSEADDR as the runtime's listeners
    (connections in TIME_WAIT do not make a port busy)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise
            return False
        return True


#: How many port locks one pytest process holds at most (the oldest go back first).
HELD = 1000
_LOCKS = os.path.join(tempfile.gettempdir(), "timely-test-ports")
_held: collections.deque = collections.deque()


def _claim(port):
    """Whether this process now holds the lock of `port` (no other test run holds it)."""
    os.makedirs(_LOCKS, exist_ok=True)
    fd = os.open(os.path.join(_LOCKS, f"{port}.lock"), os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _held.append(fd)
    if len(_held) > HELD:
        os.close(_held.popleft())
    return True


def free_ports(count):
    """`count` free ports, each handed out once per walk through this process's block."""
    ports = []
    for tried, port in enumerate(_PORTS):
        assert tried < BLOCK, "no free test port left in this worker's block"
        if is_free(port) and _claim(port):
            ports.append(port)
            if len(ports) == count:
                return ports


def free_base_port(count):
    """The first of `count` consecutive free ports (the launcher's `--base-port`)."""
    for _ in range(BLOCK):
        ports = free_ports(count)
        if ports == list(range(ports[0], ports[0] + count)):
            return ports[0]
    raise AssertionError(f"no {count} consecutive free test ports in this worker's block")


def launcher_base_port(processes):
    """A `--base-port` for the launcher starting `processes` processes: it needs consecutive
    free ports for them and for the 4 joiners `--max-processes` allows by default."""
    return free_base_port(processes + 4)
