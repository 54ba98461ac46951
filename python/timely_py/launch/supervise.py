"""Supervision of the running processes: stop requests, failures, and the launcher's exit
status.

This module owns the stop signals' handlers while the cluster runs, `Supervisor` (waits for
the processes; once a stop is requested or one failed, ends the rest step by step: wait,
SIGTERM, SIGKILL, give up) and the report of how each process ended (a process asked to
leave that exits 0 left the cluster: no failure, the others run on; a joiner whose join was
postponed is started again, not a failure either: `Child.postponed`). It must not start
processes or ask them to leave: the list it watches may grow (processes added by joins) and
its processes may be asked to leave, through the `tick` callback it calls between two looks.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import Callable, Iterator, List, Optional

from .children import Child, listed
from .options import Options
from .relay import Sink

__all__ = ["KILL_AFTER", "POLL_INTERVAL", "STOP_SIGNALS", "StopRequests", "Supervisor", "catching_stop_signals"]

#: Seconds between SIGTERM and SIGKILL, and the wait after SIGKILL before giving up.
KILL_AFTER = 2.0
#: Seconds between two looks at the children.
POLL_INTERVAL = 0.05
#: The signals that ask the launcher to stop the cluster (each one more escalates one step).
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@dataclass
class StopRequests:
    """The stop signals the launcher received, in order (filled by the signal handler)."""

    received: List[int] = field(default_factory=list)

    def handle(self, signum: int, frame: Optional[FrameType]) -> None:
        self.received.append(signum)


@contextlib.contextmanager
def catching_stop_signals(requests: StopRequests) -> Iterator[None]:
    """Routes the stop signals to `requests` while the cluster runs (main thread only:
    elsewhere Python cannot install handlers), then restores the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, requests.handle) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def describe(code: int) -> str:
    """An exit status as words: ``exit code 3`` or ``signal SIGKILL``."""
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"signal {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"


def signal_name(sig: int) -> str:
    """A signal's name, such as ``SIGTERM``."""
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


class Supervisor:
    """Waits for the children and, once a stop is requested or one failed, ends the rest
    step by step: wait (after SIGINT for a stop request), SIGTERM, SIGKILL, give up.

    `tick(healthy)` runs between two looks; `healthy` is False once the cluster is being
    stopped. It may append children (processes that joined) to `children`."""

    def __init__(
        self, children: List[Child], options: Options, requests: StopRequests, err: Sink,
        tick: Callable[[bool], None] = lambda healthy: None,
    ) -> None:
        self.children = children
        self.options = options
        self.requests = requests
        self.err = err
        self.tick = tick
        self.exits: List[Child] = []
        """The children in the order they were seen to exit."""
        self.step = 0
        self.deadline = float("inf")
        self.handled = 0

    def run(self) -> None:
        """Returns when every child exited (or would not die even of SIGKILL)."""
        while self._collect() and self.step <= 3:
            now = time.monotonic()
            if len(self.requests.received) > self.handled:
                self.handled += 1
                self._escalate(now, stop=True)
            elif (self.step == 0 and self._failed()) or now >= self.deadline:
                self._escalate(now, stop=False)
            self.tick(self.step == 0)
            time.sleep(POLL_INTERVAL)
        self.tick(False)

    def _collect(self) -> bool:
        """Records newly exited children; whether any still runs."""
        for child in self.children:
            if child not in self.exits and not child.running():
                self.exits.append(child)
                if child.leaving and child.process.returncode == 0:
                    self.err.say(f"process {child.index} left the cluster")
        # A joiner started again after a postponed join replaces the one that exited.
        return any(child not in self.exits for child in self.children)

    def _failed(self) -> List[Child]:
        return [child for child in self.exits if child.process.returncode != 0 and not child.postponed()]

    def _running(self) -> List[Child]:
        return [child for child in self.children if child.running()]

    def _escalate(self, now: float, stop: bool) -> None:
        self.step += 1
        running = self._running()
        names = listed(running)
        if self.step == 1 and stop:
            sig = self.requests.received[0]
            self.err.say(f"{signal_name(sig)}: stopping process(es) {names} "
                         f"(SIGINT, then SIGTERM after {self.options.stop_grace:g} s)")
            self._send(running, signal.SIGINT, now + self.options.stop_grace)
        elif self.step == 1:
            first = self._failed()[0]
            self.err.say(
                f"process {first.index} failed ({describe(first.process.returncode)}); "
                f"waiting up to {self.options.grace:g} s for process(es) {names} to end"
            )
            self.deadline = now + self.options.grace
        elif self.step == 2:
            self.err.say(f"process(es) {names} still running: sending SIGTERM")
            self._send(running, signal.SIGTERM, now + KILL_AFTER)
        elif self.step == 3:
            self.err.say(f"process(es) {names} still running: sending SIGKILL")
            self._send(running, getattr(signal, "SIGKILL", signal.SIGTERM), now + KILL_AFTER)
        else:
            self.err.say(f"process(es) {names} did not end even after SIGKILL; giving up on them")

    def _send(self, running: List[Child], sig: int, deadline: float) -> None:
        for child in running:
            child.send(sig)
        self.deadline = deadline

    def outcome(self) -> int:
        """Reports the processes that failed, or needed more than SIGINT to stop; returns
        the launcher's exit status."""
        failed = self._failed()
        for child in failed:
            status = describe(child.process.returncode)
            if child.signalled == signal.SIGINT:
                continue  # it stopped as asked
            if child.signalled is None:
                self.err.say(f"process {child.index} failed: {status}")
            else:
                by = signal_name(child.signalled)
                self.err.say(f"process {child.index} stopped by the launcher ({by}): {status}")
        if self.requests.received:
            return 128 + self.requests.received[0]
        own = [child for child in failed if child.signalled is None] or failed
        if not own:
            return 0
        code = own[0].process.returncode
        return code if code > 0 else 128 - code
