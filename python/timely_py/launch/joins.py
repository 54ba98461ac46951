"""The launcher's answers to requests to add a process: one join at a time.

This module owns `JoinDesk`, which the supervisor calls between two looks at the processes.
It takes the control endpoint's requests in order, refuses those that cannot be served (a
cluster of one process, no room left for another address, a worker index the cluster does
not have, a process that has ended, a cluster that is stopping), and starts the next process
for the first request once every process admits joins (`children.admits_joins`: the initial
processes finished their setup, and the previous joiner was admitted by every member), so a
joiner never reaches a member that expects another index. It must not stop processes.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable, Deque, List, Optional

from .children import Child, admits_joins, spawn, start_relays
from .control import ControlEndpoint, Pending
from .errors import LaunchError
from .options import Options, child_command
from .relay import Sink

__all__ = ["READY_TIMEOUT", "JoinDesk"]

#: Seconds a request may wait for every process to admit joins before it is refused.
READY_TIMEOUT = 60.0


class JoinDesk:
    """Serves the add requests of `endpoint` for a cluster of `children` (which it grows)."""

    def __init__(
        self, options: Options, hostfile: Optional[str], room: int, env: dict[str, str],
        children: List[Child], endpoint: ControlEndpoint, out: Sink, err: Sink,
    ) -> None:
        self.options, self.hostfile, self.room, self.env = options, hostfile, room, env
        self.children, self.endpoint, self.out, self.err = children, endpoint, out, err
        self.waiting: Deque[Pending] = deque()
        self.since = 0.0
        """When the first waiting request became first."""

    def tick(self, healthy: bool) -> None:
        """Takes new requests and serves the first one that can be served now; refuses them
        all when the cluster is no longer `healthy`."""
        while not self.endpoint.requests.empty():
            self.waiting.append(self.endpoint.requests.get_nowait())
            if len(self.waiting) == 1:
                self.since = time.monotonic()
        while self.waiting:
            request = self.waiting[0]
            if not healthy:
                self._done(request.refuse, "the cluster is stopping")
            elif (problem := self._problem(request.server)) is not None:
                self._done(request.refuse, problem)
            elif all(admits_joins(child) for child in self.children):
                self._start(request)
            elif time.monotonic() - self.since > READY_TIMEOUT:
                self._done(request.refuse, self._not_ready())
            else:
                return

    def _done(self, answer: Callable[[Any], None], value: object) -> None:
        """Answers the first request with `answer(value)` and moves on to the next."""
        answer(value)
        self.waiting.popleft()
        self.since = time.monotonic()

    def _problem(self, server: int) -> Optional[str]:
        """Why no process can join for a request served by worker `server`, or None."""
        count, workers = len(self.children), self.options.workers
        if self.options.processes == 1:
            return ("a process alone (-n 1) has no network, so nothing can join it; "
                    "start the cluster with -n 2 or more")
        if count >= self.room:
            return (f"no room left: the cluster has {count} processes, the most this launch "
                    f"planned addresses for (--max-processes {self.room})")
        if server >= count * workers:
            return (f"no worker {server} to serve the join: the cluster has workers 0 to "
                    f"{count * workers - 1}")
        ended = [child.index for child in self.children if not child.running()]
        if ended:
            return (f"process(es) {', '.join(map(str, ended))} ended; a process can join only "
                    "while every process of the cluster runs")
        return None

    def _not_ready(self) -> str:
        slow = [str(child.index) for child in self.children if not admits_joins(child)]
        return (f"process(es) {', '.join(slow)} did not admit joins within {READY_TIMEOUT:g} s "
                "(still setting up, or not running a cluster)")

    def _start(self, request: Pending) -> None:
        index = len(self.children)
        command = child_command(self.options, index, self.hostfile, join=request.server)
        try:
            child = spawn(index, command, self.env)
        except LaunchError as error:
            self._done(request.refuse, str(error))
            return
        start_relays(child, self.out, self.err)
        self.children.append(child)
        self.err.say(f"process {index} started: it joins the cluster through worker {request.server}")
        self._done(request.grant, index)

