"""The launcher's answers to requests to add a process: one join at a time.

This module owns `JoinDesk`, the line of add requests (`desks.Desk`), which the supervisor
serves between two looks at the processes. It refuses the requests that cannot be served (a
cluster of one process, no room left for another address, a worker index the cluster does
not have or whose process left, a process that has ended, a cluster that is stopping), and
starts the next process for the first request once no process is leaving and every process
that did not leave admits joins (the joiner is told which left: ``--gone``) (`children.admits_joins`: the initial processes finished their setup, and the
previous joiner was admitted by every member), so a joiner never reaches a member that
expects another index. It must not stop processes or ask them to leave.
"""

from __future__ import annotations

from typing import List, Optional

from .children import Child, admits_joins, listed, spawn, start_relays
from .control import AddRequest, Pending
from .desks import READY_TIMEOUT, Desk
from .errors import LaunchError
from .options import Options, child_command
from .relay import Sink

__all__ = ["READY_TIMEOUT", "JoinDesk"]


class JoinDesk(Desk[AddRequest]):
    """Serves the add requests for a cluster of `children` (which it grows)."""

    def __init__(
        self, options: Options, hostfile: Optional[str], room: int, env: dict[str, str],
        children: List[Child], out: Sink, err: Sink,
    ) -> None:
        super().__init__()
        self.options, self.hostfile, self.room, self.env = options, hostfile, room, env
        self.children, self.out, self.err = children, out, err

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
        ended = [child for child in self.children if not child.running() and child not in self._left()]
        if ended:
            return (f"process(es) {listed(ended)} ended; a process can join only "
                    "while every process of the cluster runs")
        return None

    def _left(self) -> List[Child]:
        """The processes that left the cluster (asked to leave, and exited 0): the joiner
        does not dial them (``--gone``)."""
        return [child for child in self.children if child.leaving and child.process.poll() == 0]

    def _unready(self, request: AddRequest) -> Optional[str]:
        """Why the joiner cannot start yet: a process is leaving, or one does not admit joins."""
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
        gone = [child.index for child in self._left()]
        command = child_command(self.options, index, self.hostfile, join=server, gone=gone)
        try:
            child = spawn(index, command, self.env)
        except LaunchError as error:
            self._refuse_first(str(error))
            return
        start_relays(child, self.out, self.err)
        self.children.append(child)
        self.err.say(f"process {index} started: it joins the cluster through worker {server}")
        self._grant_first(index)
