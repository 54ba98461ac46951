"""The launcher's answers to requests to add a process: one join at a time.

This module owns `JoinDesk`, the line of add requests (`desks.Desk`), which the supervisor
serves between two looks at the processes. It refuses the requests that cannot be served (a
cluster of one process, no room left for another address, a worker index the cluster does
not have or whose process left, a process that has ended, a cluster that is stopping), and
starts the next process for the first request once no process is leaving and every process
that did not leave admits joins (the joiner is told which left: ``--gone``) (`children.admits_joins`: the initial processes finished their setup, and the
previous joiner was admitted by every member), so a joiner never reaches a member that
expects another index. A joiner whose join was postponed because a process was leaving (one
that called ``worker.leave()`` itself, which the launcher does not see: the members refuse
joins during a leave, `docs/rescaling.md`, "Joins and leaves at the same time") exits with
`JOIN_POSTPONED_EXIT`; the desk starts it again, with the same index and server and ``--gone``
recomputed, after a pause that doubles from `RETRY_FIRST_PAUSE` to `RETRY_MAX_PAUSE`, until
`RETRY_DEADLINE` seconds after the first postponement; past it the exit is the run's failure.
It must not stop processes or ask them to leave.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import List, Optional

from .children import JOIN_POSTPONED_EXIT, Child, admits_joins, listed, spawn, start_relays
from .control import AddRequest, Pending
from .desks import READY_TIMEOUT, Desk
from .errors import LaunchError
from .options import Options, child_command
from .relay import Sink

__all__ = ["READY_TIMEOUT", "RETRY_DEADLINE", "RETRY_FIRST_PAUSE", "RETRY_MAX_PAUSE", "JoinDesk"]

#: Seconds between a postponed join and the first new attempt; each next pause doubles.
RETRY_FIRST_PAUSE = 0.1
#: The longest pause between two attempts of a postponed join.
RETRY_MAX_PAUSE = 2.0
#: Seconds after its first postponement within which a join is tried again; a joiner postponed
#: after that ends the run as a failure.
RETRY_DEADLINE = 60.0


@dataclass
class _Retry:
    """A join being tried again: the attempt that was postponed and when to start the next."""

    attempt: Child
    since: float
    pause: float
    at: float


class JoinDesk(Desk[AddRequest]):
    """Serves the add requests for a cluster of `children` (which it grows)."""

    def __init__(
        self, options: Options, hostfile: Optional[str], room: int, env: dict[str, str],
        children: List[Child], out: Sink, err: Sink,
    ) -> None:
        super().__init__()
        self.options, self.hostfile, self.room, self.env = options, hostfile, room, env
        self.children, self.out, self.err = children, out, err
        self.retrying: Optional[_Retry] = None
        """The join being tried again after it was postponed, if any."""

    def tick(self, healthy: bool) -> None:
        self._retry(healthy)
        super().tick(healthy)

    def _retry(self, healthy: bool) -> None:
        """Starts a postponed joiner again once its pause is over; forgets the retry once the
        joiner admits joins itself (it joined) or ended otherwise."""
        last = self.children[-1] if self.children else None
        retry, now = self.retrying, time.monotonic()
        if last is None or not last.postponed():
            if retry is not None and last is not None and (admits_joins(last) or not last.running()):
                self.retrying = None
            return
        if retry is None or retry.attempt is not last:
            since = retry.since if retry is not None else now
            pause = min(retry.pause * 2, RETRY_MAX_PAUSE) if retry is not None else RETRY_FIRST_PAUSE
            self.retrying = retry = _Retry(last, since, pause, now + pause)
            if now - since > RETRY_DEADLINE:
                last.retry_join = False
                self.retrying = None
                self.err.say(f"process {last.index}: its join was postponed again {RETRY_DEADLINE:g} s after "
                             "the first time; giving up")
                return
            self.err.say(f"process {last.index}: its join was postponed (a process was leaving); "
                         f"starting it again in {pause:g} s")
        if healthy and now >= retry.at:
            assert last.join_server is not None
            self._start(last.index, last.join_server)

    def _start(self, index: int, server: int) -> Optional[Child]:
        """Starts process `index` to join through worker `server` (at the end of the
        children, or in the place of its postponed attempt); None if it cannot be started."""
        gone = [child.index for child in self._left()]
        command = child_command(self.options, index, self.hostfile, join=server, gone=gone)
        env = dict(self.env, TIMELY_JOIN_POSTPONED_EXIT=str(JOIN_POSTPONED_EXIT))
        try:
            child = spawn(index, command, env)
        except LaunchError as error:
            if index < len(self.children):
                self.children[index].retry_join = False
                self.retrying = None
                self.err.say(str(error))
                return None
            raise
        child.join_server, child.retry_join = server, True
        start_relays(child, self.out, self.err)
        if index < len(self.children):
            self.children[index] = child
        else:
            self.children.append(child)
        return child

    def _problem(self, request: AddRequest) -> Optional[str]:
        """Why no process can join for a request served by worker `request.server`, or None."""
        count, workers, server = len(self.children), self.options.workers, request.server
        if self.options.processes == 1:
            return ("a process alone (-n 1) has no network, so nothing can join it; "
                    "start the cluster with -n 2 or more")
        if count >= self.room:
            return (f"no room left: the cluster has {count} processes, the most this launch "
                    f"planned addresses for (--max-processes {self.room})")
        if server >= count * workers:
            return (f"no worker {server} to serve the join: the cluster has workers 0 to "
                    f"{count * workers - 1}")
        if server // workers in {child.index for child in self._left()}:
            return (f"worker {server} cannot serve the join: its process {server // workers} left "
                    "the cluster")
        left = self._left()
        ended = [child for child in self.children
                 if not child.running() and child not in left and not child.postponed()]
        if ended:
            return (f"process(es) {listed(ended)} ended; a process can join only "
                    "while every process of the cluster runs")
        return None

    def _left(self) -> List[Child]:
        """The processes that left the cluster (exited 0, asked to leave or on their own with
        ``worker.leave()``): the joiner does not dial them (``--gone``)."""
        return [child for child in self.children if child.process.poll() == 0]

    def _unready(self, request: AddRequest) -> Optional[str]:
        """Why the joiner cannot start yet: a process is leaving, a postponed join is being
        tried again, or a process does not admit joins."""
        if self.retrying is not None:
            return (f"process {self.retrying.attempt.index}'s join, postponed while a process was "
                    f"leaving, did not succeed within {self.timeout:g} s")
        leaving = [child for child in self.children if child.leaving and child.running()]
        if leaving:
            return (f"process(es) {listed(leaving)} did not finish leaving the cluster within "
                    f"{self.timeout:g} s; a process can join only while no process is leaving")
        left = self._left()
        slow = [child for child in self.children if child not in left and not admits_joins(child)]
        if slow:
            return (f"process(es) {listed(slow)} did not admit joins within {self.timeout:g} s "
                    "(still setting up, or not running a cluster)")
        return None

    def _serve(self, pending: Pending[AddRequest]) -> None:
        index, server = len(self.children), pending.request.server
        try:
            self._start(index, server)
        except LaunchError as error:
            self._refuse_first(str(error))
            return
        self.err.say(f"process {index} started: it joins the cluster through worker {server}")
        self._grant_first(index)
