"""The processes the launcher started: starting them, their output relays, and what can be
seen of them from outside.

This module owns `Child` (one started process, the signals the launcher sent it, and whether
it was asked to leave the cluster), how a process is started (its own process group; on
Linux SIGTERM when the launcher dies), the threads relaying its output, and `admits_joins`,
the launcher's only look inside a running process. It must not decide when to stop
processes (the supervisor does), which to start, or which to ask to leave (the desks do).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

from .errors import LaunchError
from .relay import Sink, relay

__all__ = [
    "JOIN_POSTPONED_EXIT", "JOIN_SETTLE", "Child", "admits_joins", "drain", "kill_now", "listed", "spawn",
    "start_relays",
]

#: Seconds to wait for the end of the children's output once they have all exited.
RELAY_DRAIN = 2.0
#: Where /proc does not show a process's threads: seconds after its start at which a process
#: is taken to admit joins.
JOIN_SETTLE = 10.0
#: The name (cut to Linux's 15 bytes) of the runtime thread that admits joiners; it starts
#: once the process's own cluster setup (or join handshake) has succeeded.
_ACCEPTOR_THREAD = "timely:join-acc"
_PR_SET_PDEATHSIG = 1
#: The exit status a joining process exits with when its join was postponed because a process
#: was leaving the cluster (nothing was admitted anywhere): the launcher gives it to joiners
#: as ``TIMELY_JOIN_POSTPONED_EXIT`` and starts such a process again (`joins.JoinDesk`).
JOIN_POSTPONED_EXIT = 75


@dataclass(eq=False)
class Child:
    """One started process and what the launcher did to it."""

    index: int
    process: subprocess.Popen[bytes]
    signalled: Optional[int] = None
    """The last signal the launcher sent it while it ran to stop it."""
    leaving: bool = False
    """Whether the launcher asked it to leave the cluster (`ask_to_leave`)."""
    relays: List[threading.Thread] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    join_server: Optional[int] = None
    """For a process started to join the running cluster: its bootstrap server's worker."""
    retry_join: bool = False
    """Whether a postponed join of this process is to be tried again (no failure then)."""

    def postponed(self) -> bool:
        """Whether this joining process exited because its join was postponed, and the
        launcher tries it again (`JOIN_POSTPONED_EXIT`)."""
        return self.retry_join and self.process.poll() == JOIN_POSTPONED_EXIT

    def running(self) -> bool:
        return self.process.poll() is None

    def send(self, sig: int) -> None:
        """Sends `sig` to the process's group (itself and what it started), if it still runs."""
        if not self.running():
            return
        self.signalled = sig
        try:
            if hasattr(os, "killpg"):
                os.killpg(self.process.pid, sig)
            else:
                self.process.send_signal(sig)
        except ProcessLookupError:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(sig)

    def ask_to_leave(self) -> None:
        """Asks the process to leave the cluster: SIGUSR1 to the process itself, never to its
        group (what it started would die of SIGUSR1's default action). The runtime installs
        its handler before its cluster setup starts, so a process that `admits_joins` has it.
        Not a stop: `signalled` is left as it is, so a process that fails while leaving is a
        failure of its own."""
        self.leaving = True
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGUSR1)


def listed(children: Sequence[Child]) -> str:
    """The indices of `children`, for a message: ``0, 2``."""
    return ", ".join(str(child.index) for child in children)


def _prctl() -> Optional[Callable[..., int]]:
    """Linux's prctl, through the C library, or None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl: Callable[..., int] = ctypes.CDLL(None).prctl
        return prctl
    except (OSError, AttributeError):
        return None


def _child_setup() -> Optional[Callable[[], None]]:
    """What a child runs before the script: its own process group (so a terminal's Ctrl-C
    reaches only the launcher), and on Linux SIGTERM when the launcher dies. It calls only
    setpgid and prctl, so it is safe even when the launcher runs threads (relays, the control
    endpoint) while a joiner is forked."""
    if os.name != "posix":
        return None
    parent, prctl = os.getpid(), _prctl()

    def setup() -> None:
        os.setpgid(0, 0)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
            if os.getppid() != parent:
                os._exit(1)

    return setup


def spawn(index: int, command: Sequence[str], env: dict[str, str]) -> Child:
    """Starts process `index` with `command`; raises LaunchError if it cannot be started."""
    try:
        process = subprocess.Popen(
            list(command), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, bufsize=0, preexec_fn=_child_setup(),
        )
    except OSError as error:
        raise LaunchError(f"cannot start process {index} with {command[0]!r}: {error}") from None
    return Child(index, process)


def kill_now(children: Sequence[Child]) -> None:
    """Kills `children` at once and reaps them (for a start that failed half-way)."""
    for child in children:
        child.send(signal.SIGKILL if hasattr(signal, "SIGKILL") else signal.SIGTERM)
    for child in children:
        child.process.wait()
        for pipe in (child.process.stdout, child.process.stderr):
            if pipe is not None:
                pipe.close()


def start_relays(child: Child, out: Sink, err: Sink) -> None:
    """One thread per pipe copies the child's output to the launcher's streams."""
    for pipe, sink in ((child.process.stdout, out), (child.process.stderr, err)):
        assert pipe is not None
        thread = threading.Thread(
            target=relay, args=(pipe, f"[{child.index}] ", sink),
            name=f"launch-relay-{child.index}", daemon=True,
        )
        thread.start()
        child.relays.append(thread)


def drain(children: Sequence[Child]) -> None:
    """Waits (a bounded time: a grandchild may hold a pipe open) for the rest of the output."""
    deadline = time.monotonic() + RELAY_DRAIN
    for child in children:
        for thread in child.relays:
            thread.join(max(0.0, deadline - time.monotonic()))


def admits_joins(child: Child) -> bool:
    """Whether `child` runs and its runtime admits joiners: on Linux, whether it has the join
    acceptor thread (started once its setup, or its own join, succeeded: then every other
    member counts it); elsewhere, whether it has run for `JOIN_SETTLE` seconds."""
    if not child.running():
        return False
    tasks = f"/proc/{child.process.pid}/task"
    try:
        threads = os.listdir(tasks)
    except OSError:
        return time.monotonic() - child.started >= JOIN_SETTLE
    for thread in threads:
        with contextlib.suppress(OSError):
            with open(f"{tasks}/{thread}/comm", encoding="utf-8", errors="replace") as comm:
                if comm.read().strip() == _ACCEPTOR_THREAD:
                    return True
    return False
