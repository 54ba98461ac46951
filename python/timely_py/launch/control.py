"""The launcher's control endpoint: where programs and people ask it to add a process.

This module owns the endpoint's socket (a Unix-domain socket in the launcher's private
temporary directory, mode 0600, and on Linux only answering processes of the launcher's own
user), the thread that accepts connections, the request format, and the answers. A request
is one line of JSON, ``{"request": "add", "server": W}``; the answer is one line,
``{"process": P}`` or ``{"error": "why"}``. Requests wait in `ControlEndpoint.requests`
until the launcher answers them (`joins.JoinDesk`).

It must not start processes or judge a request against the cluster's state; it checks only
that a request is well formed (bounded size, valid JSON of the expected shape), and it never
decodes anything but JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from .errors import LaunchError

__all__ = ["MAX_REQUEST", "ControlEndpoint", "Pending", "parse_request"]

#: The longest request line, in bytes.
MAX_REQUEST = 4096
#: Seconds a client gets to send its request once connected.
REQUEST_TIMEOUT = 5.0
#: The most connections served at once; more are answered with an error and closed.
MAX_CONNECTIONS = 16
_ACCEPT_POLL = 0.2


@dataclass(eq=False)
class Pending:
    """A request to add a process, served by worker `server`, waiting for its answer."""

    server: int
    answered: threading.Event = field(default_factory=threading.Event)
    reply: Dict[str, Any] = field(default_factory=dict)

    def grant(self, process: int) -> None:
        """Answers with the index of the process that was started."""
        self._answer({"process": process})

    def refuse(self, reason: str) -> None:
        """Answers with an error."""
        self._answer({"error": reason})

    def _answer(self, reply: Dict[str, Any]) -> None:
        if not self.answered.is_set():
            self.reply = reply
            self.answered.set()


def parse_request(line: bytes) -> int:
    """The worker index an add request names; raises ValueError saying what is wrong."""
    try:
        request = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError("a request is one line of JSON, such as {\"request\": \"add\", \"server\": 0}") from None
    if not isinstance(request, dict) or request.get("request") != "add":
        raise ValueError("unknown request: the launcher knows only {\"request\": \"add\", \"server\": W}")
    server = request.get("server", 0)
    if isinstance(server, bool) or not isinstance(server, int) or server < 0:
        raise ValueError(f"the server must be a worker index (an int >= 0), not {server!r}")
    return server


class ControlEndpoint:
    """A listening control socket at ``DIRECTORY/control`` and the thread that serves it."""

    def __init__(self, directory: str) -> None:
        if not hasattr(socket, "AF_UNIX"):
            raise LaunchError("this platform has no Unix-domain sockets for the control endpoint")
        self.address = os.path.join(directory, "control")
        self.requests: "queue.Queue[Pending]" = queue.Queue()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.bind(self.address)
            os.chmod(self.address, 0o600)
            self._sock.listen(MAX_CONNECTIONS)
        except OSError as error:
            self._sock.close()
            raise LaunchError(f"cannot open the control endpoint {self.address!r}: {error}") from None
        self._sock.settimeout(_ACCEPT_POLL)
        self._closed = threading.Event()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        """Starts accepting connections (after the initial processes were forked)."""
        self._thread = threading.Thread(target=self._accept, name="launch-control", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stops accepting, refuses every request still waiting, and removes the socket."""
        self._closed.set()
        if self._thread is not None:
            self._thread.join()
        self._sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.address)
        while True:
            try:
                self.requests.get_nowait().refuse("the launcher is ending: its cluster has stopped")
            except queue.Empty:
                return

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except (socket.timeout, BlockingIOError):
                continue
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                _send(conn, {"error": "the launcher is busy with other requests; try again"})
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), name="launch-control-client", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        """Reads one request, queues it, and writes its answer once the launcher gave one."""
        try:
            with conn:
                conn.settimeout(REQUEST_TIMEOUT)
                reply = self._answer(conn)
                _send(conn, reply)
        finally:
            self._slots.release()

    def _answer(self, conn: socket.socket) -> Dict[str, Any]:
        if not _same_user(conn):
            return {"error": "the control endpoint serves only its launcher's user"}
        try:
            server = parse_request(_read_line(conn))
        except ValueError as error:
            return {"error": str(error)}
        pending = Pending(server)
        self.requests.put(pending)
        while not pending.answered.wait(_ACCEPT_POLL):
            if self._closed.is_set():
                pending.refuse("the launcher is ending: its cluster has stopped")
        return pending.reply


def _read_line(conn: socket.socket) -> bytes:
    """One request line (without its newline); raises ValueError if it is too long, cut
    short or late."""
    data = b""
    try:
        while b"\n" not in data:
            chunk = conn.recv(MAX_REQUEST + 1 - len(data))
            if not chunk:
                raise ValueError("the request ended before its newline")
            data += chunk
            if len(data) > MAX_REQUEST:
                raise ValueError(f"a request is at most {MAX_REQUEST} bytes")
    except socket.timeout:
        raise ValueError(f"no whole request within {REQUEST_TIMEOUT:g} s") from None
    except OSError as error:
        raise ValueError(f"cannot read the request: {error}") from None
    return data.split(b"\n", 1)[0]


def _send(conn: socket.socket, reply: Dict[str, Any]) -> None:
    """Writes one answer line; a client that left does not matter."""
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(reply).encode("utf-8") + b"\n")


def _same_user(conn: socket.socket) -> bool:
    """Whether the peer runs as the launcher's user (Linux: SO_PEERCRED; elsewhere the
    socket's mode 0600 in a private directory decides alone)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None or not hasattr(os, "getuid"):
        return True
    size = struct.calcsize("3i")
    try:
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, size))
    except OSError:
        return False
    return int(uid) == os.getuid()
