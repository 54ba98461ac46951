"""Where the control endpoint's requests wait for their answers: a line per kind, and the
routing of each request to its line.

This module owns `Desk`, what every desk shares (a line of requests of one kind, answered
in arrival order: refused when the cluster is stopping or the request cannot be served,
served once it can, refused if it had to wait longer than `READY_TIMEOUT`), and
`RequestRouter`, the supervisor's tick while the endpoint is open: it takes the endpoint's
requests, hands each to the desk of its kind (`joins.JoinDesk` for adds, `leaves.LeaveDesk`
for removes), then lets each desk serve. The desks know of each other only through the
processes they share (a joiner that does not admit joins yet, a process asked to leave), so
the order in which they are ticked does not matter. It must not judge a request itself.
"""

from __future__ import annotations

import queue
import time
from abc import ABC, abstractmethod
from collections import deque
from typing import Deque, Generic, Optional, cast

from .control import AddRequest, ControlEndpoint, Pending, RemoveRequest, RequestT

__all__ = ["READY_TIMEOUT", "Desk", "RequestRouter"]

#: Seconds a request may wait for the cluster to be ready for it before it is refused.
READY_TIMEOUT = 60.0


class Desk(ABC, Generic[RequestT]):
    """A line of requests of one kind. The first is answered as soon as it can be: refused
    when the cluster is stopping or `_problem` names a reason, served by `_serve` once
    `_unready` has none, refused with that reason once it waited `timeout` seconds."""

    def __init__(self) -> None:
        self.waiting: Deque[Pending[RequestT]] = deque()
        self.since = 0.0
        """When the first waiting request became first."""
        self.timeout = READY_TIMEOUT
        """Seconds the first request may wait for `_unready` to clear."""

    def take(self, pending: Pending[RequestT]) -> None:
        """Puts `pending` at the end of the line."""
        self.waiting.append(pending)
        if len(self.waiting) == 1:
            self.since = time.monotonic()

    def tick(self, healthy: bool) -> None:
        """Answers the requests at the front of the line that can be answered now; refuses
        them all when the cluster is no longer `healthy`."""
        while self.waiting:
            pending = self.waiting[0]
            if not healthy:
                self._refuse_first("the cluster is stopping")
            elif (problem := self._problem(pending.request)) is not None:
                self._refuse_first(problem)
            elif (unready := self._unready(pending.request)) is None:
                self._serve(pending)
            elif time.monotonic() - self.since > self.timeout:
                self._refuse_first(unready)
            else:
                return

    @abstractmethod
    def _problem(self, request: RequestT) -> Optional[str]:
        """Why `request` cannot be served at all, or None."""

    @abstractmethod
    def _unready(self, request: RequestT) -> Optional[str]:
        """None if `request` can be served now; otherwise why not, in words that refuse it
        should that still hold after `timeout` seconds."""

    @abstractmethod
    def _serve(self, pending: Pending[RequestT]) -> None:
        """Carries out the first request and answers it (`_grant_first`, or `_refuse_first`
        when carrying it out failed)."""

    def _grant_first(self, process: int) -> None:
        """Grants the first request with `process` and moves on to the next."""
        self.waiting.popleft().grant(process)
        self.since = time.monotonic()

    def _refuse_first(self, reason: str) -> None:
        """Refuses the first request with `reason` and moves on to the next."""
        self.waiting.popleft().refuse(reason)
        self.since = time.monotonic()


class RequestRouter:
    """The supervisor's tick while the control endpoint is open: every request the endpoint
    received goes to the desk of its kind, then each desk serves what it can."""

    def __init__(self, endpoint: ControlEndpoint, joins: Desk[AddRequest], leaves: Desk[RemoveRequest]) -> None:
        self.endpoint, self.joins, self.leaves = endpoint, joins, leaves

    def tick(self, healthy: bool) -> None:
        while True:
            try:
                pending = self.endpoint.requests.get_nowait()
            except queue.Empty:
                break
            if isinstance(pending.request, AddRequest):
                self.joins.take(cast("Pending[AddRequest]", pending))
            else:
                self.leaves.take(cast("Pending[RemoveRequest]", pending))
        self.joins.tick(healthy)
        self.leaves.tick(healthy)
