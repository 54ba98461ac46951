"""The launcher's control endpoint: where programs and people ask it to add or remove a
process.

This module owns the endpoint's socket (a Unix-domain socket in the launcher's private
temporary directory, mode 0600, and on Linux only answering processes of the launcher's own
user), the thread that accepts connections, the request format (`AddRequest`,
`RemoveRequest`, `parse_request`), and the answers. A request is one line of JSON,
``{"request": "add", "server": W}`` (start a process that joins through worker W) or
``{"request": "remove", "process": P}`` (make process P leave the cluster); the answer is one
line, ``{"process": P}`` or ``{"error": "why"}``. Requests of both kinds wait, in the order
they arrived, in `ControlEndpoint.requests` until the launcher answers them (`desks` hands
each to `joins.JoinDesk` or `leaves.LeaveDesk`).

It must not start or signal processes or judge a request against the cluster's state; it
checks only that a request is well formed (bounded size, valid JSON of the expected shape),
and it never decodes anything but JSON.
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
from typing import Any, Dict, Generic, Optional, TypeVar, Union

from .errors import LaunchError

__all__ = ["MAX_REQUEST", "AddRequest", "ControlEndpoint", "Pending", "RemoveRequest", "Request", "parse_request"]

#: The longest request line, in bytes.
MAX_REQUEST = 4096
#: Seconds a client gets to send its request once connected.
REQUEST_TIMEOUT = 5.0
#: The most connections served at once; more are answered with an error and closed.
MAX_CONNECTIONS = 16
_ACCEPT_POLL = 0.2


@dataclass(frozen=True)
class AddRequest:
    """Start the next process, joining the cluster through worker `server`."""

    server: int


@dataclass(frozen=True)
class RemoveRequest:
    """Make process `process` leave the cluster."""

    process: int


#: A well-formed request, of either kind.
Request = Union[AddRequest, RemoveRequest]
#: The kind of request a `Pending` carries.
RequestT = TypeVar("RequestT", bound=Request)

_ADD_EXAMPLE = '{"request": "add", "server": W}'
_REMOVE_EXAMPLE = '{"request": "remove", "process": P}'


@dataclass(eq=False)
class Pending(Generic[RequestT]):
    """A `request` waiting for its answer."""

    request: RequestT
    answered: threading.Event = field(default_factory=threading.Event)
    reply: Dict[str, Any] = field(default_factory=dict)

    def grant(self, process: int) -> None:
        """Answers with the index of the process that was started, or asked to leave."""
        self._answer({"process": process})

    def refuse(self, reason: str) -> None:
        """Answers with an error."""
        self._answer({"error": reason})

    def _answer(self, reply: Dict[str, Any]) -> None:
        if not self.answered.is_set():
            self.reply = reply
            self.answered.set()


def parse_request(line: bytes) -> Request:
    """The request one line of JSON states; raises ValueError saying what is wrong."""
    try:
        request = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"a request is one line of JSON, such as {_ADD_EXAMPLE} or {_REMOVE_EXAMPLE}") from None
    if not isinstance(request, dict):
        raise ValueError(f"a request is a JSON object, such as {_ADD_EXAMPLE} or {_REMOVE_EXAMPLE}, "
                         f"not {_shown(request)}")
    kind = request.get("request")
    if kind == "add":
        return AddRequest(_index(request.get("server", 0), "the server", "a worker index"))
    if kind == "remove":
        if "process" not in request:
            raise ValueError(f"a remove request names its process: {_REMOVE_EXAMPLE}")
        return RemoveRequest(_index(request["process"], "the process", "a process index"))
    raise ValueError(f"unknown request {_shown(kind)}: the launcher knows only {_ADD_EXAMPLE} "
                     f"and {_REMOVE_EXAMPLE}")


def _index(value: object, what: str, meaning: str) -> int:
    """`value` if it is an int >= 0 (not a bool); raises ValueError naming `what` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be {meaning} (an int >= 0), not {_shown(value)}")
    return value


def _shown(value: object) -> str:
    """`value` in a message: its JSON text, cut short."""
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


class ControlEndpoint:
    """A listening control socket at ``DIRECTORY/control`` and the thread that serves it."""

    def __init__(self, directory: str) -> None:
        if not hasattr(socket, "AF_UNIX"):
            raise LaunchError("this platform has no Unix-domain sockets for the control endpoint")
        self.address = os.path.join(directory, "control")
        self.requests: "queue.Queue[Pending[Request]]" = queue.Queue()
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
            request = parse_request(_read_line(conn))
        except ValueError as error:
            return {"error": str(error)}
        pending: Pending[Request] = Pending(request)
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
