"""The launcher's answers to requests to remove a process: making it leave the cluster.

This module owns `LeaveDesk`, the line of remove requests (`desks.Desk`), which the
supervisor serves between two looks at the processes. It refuses the requests that cannot
be served (a cluster of one process, a process the cluster does not have, one that has
ended or was already asked to leave, the last process that is not leaving, a cluster that
is stopping), waits while the process is still setting up or another join or leave is in progress, and
then asks the process to leave (`Child.ask_to_leave`: SIGUSR1 to it alone). Its workers hand
their work to those that stay and the process exits 0 once drained; the supervisor reports
that it left. It must not start or stop processes.
"""

from __future__ import annotations

import signal
from typing import List, Optional

from .children import Child, admits_joins, listed
from .control import Pending, RemoveRequest
from .desks import Desk
from .options import Options
from .relay import Sink
from .supervise import describe

__all__ = ["LeaveDesk"]


class LeaveDesk(Desk[RemoveRequest]):
    """Serves the remove requests for a cluster of `children`."""

    def __init__(self, options: Options, children: List[Child], err: Sink) -> None:
        super().__init__()
        self.options, self.children, self.err = options, children, err

    def _problem(self, request: RemoveRequest) -> Optional[str]:
        """Why process `request.process` cannot leave, or None."""
        index, count = request.process, len(self.children)
        if self.options.processes == 1:
            return "a process alone (-n 1) has no cluster to leave"
        if not hasattr(signal, "SIGUSR1"):
            return "this platform has no SIGUSR1 to ask a process to leave with"
        if index >= count:
            return f"no process {index} to leave: the cluster has processes 0 to {count - 1}"
        child = self.children[index]
        if child.leaving and child.running():
            return f"process {index} was already asked to leave the cluster"
        if child.leaving and child.process.returncode == 0:
            return f"process {index} already left the cluster"
        if not child.running():
            return (f"process {index} has ended ({describe(child.process.returncode)}); "
                    "only a running process can leave")
        staying = [other for other in self.children
                   if other is not child and other.running() and not other.leaving]
        if not staying:
            return (f"process {index} is the last process that is not leaving; at least one "
                    "process must stay in the cluster")
        return None

    def _unready(self, request: RemoveRequest) -> Optional[str]:
        """Why the process cannot be asked yet: it is still setting up, another process is
        still leaving (one membership change at a time, `docs/rescaling.md`), or a joiner is
        not yet admitted."""
        index = request.process
        if not admits_joins(self.children[index]):
            return (f"process {index} did not finish its setup within {self.timeout:g} s (it "
                    "does not admit joins yet), so it cannot leave")
        leaving = [child for child in self.children if child.leaving and child.running()]
        if leaving:
            return (f"process(es) {listed(leaving)} did not finish leaving within {self.timeout:g} s; "
                    "processes leave one at a time")
        joining = [child for child in self.children
                   if child.running() and not child.leaving and not admits_joins(child)]
        if joining:
            return (f"a join is in progress: process(es) {listed(joining)} did not admit joins "
                    f"within {self.timeout:g} s; a process can leave only once every joiner "
                    "is admitted")
        return None

    def _serve(self, pending: Pending[RemoveRequest]) -> None:
        index = pending.request.process
        self.children[index].ask_to_leave()
        self.err.say(f"process {index} leaves the cluster (asked by a remove request)")
        self._grant_first(index)
