"""Carrying decisions out: the `Actuator` that changes the cluster (by default the
launcher's joins and leaves, `timely_py.launch.add_process` and `remove_process`) and the
`ActionRunner` that calls it on a thread of its own, so that the worker that decided keeps
stepping its dataflows while a process starts or leaves.

This module owns the side effects only; it does not decide what to do.
"""

from __future__ import annotations

import threading
from typing import Callable, List, Optional, Protocol, Tuple

__all__ = ["ActionRunner", "Actuator", "LauncherActuator", "RecordingActuator"]


class Actuator(Protocol):
    """What changes the cluster: adds a process (returning its index) or makes one leave."""

    def add_process(self) -> int: ...

    def remove_process(self, process: int) -> int: ...


class LauncherActuator:
    """Joins and leaves through the launcher that started the cluster
    (``python -m timely_py.launch``; `control` defaults to ``TIMELY_LAUNCH_CONTROL``).
    Worker `server` serves the joins' bootstrap."""

    def __init__(self, server: int = 0, *, control: Optional[str] = None) -> None:
        self.server = server
        self.control = control

    def add_process(self) -> int:
        from ..launch import add_process

        return add_process(self.server, control=self.control)

    def remove_process(self, process: int) -> int:
        from ..launch import remove_process

        return remove_process(process, control=self.control)


class RecordingActuator:
    """An actuator that only records what it was asked (for tests and dry runs): new
    processes get the next indices.

    >>> actuator = RecordingActuator(first_new=2)
    >>> actuator.add_process(), actuator.remove_process(1), actuator.calls
    (2, 1, [('add', 2), ('remove', 1)])
    """

    def __init__(self, first_new: int = 1) -> None:
        self.next = first_new
        self.calls: List[Tuple[str, int]] = []

    def add_process(self) -> int:
        index, self.next = self.next, self.next + 1
        self.calls.append(("add", index))
        return index

    def remove_process(self, process: int) -> int:
        self.calls.append(("remove", process))
        return process


class ActionRunner:
    """Runs one action at a time on a daemon thread; `busy` while it runs. The action's
    result or exception goes to `done(result, error)`, on that thread."""

    def __init__(self) -> None:
        self._thread: Optional[threading.Thread] = None

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, action: Callable[[], object],
              done: Callable[[object, Optional[BaseException]], None]) -> None:
        if self.busy:
            raise RuntimeError("an action is still under way")

        def run() -> None:
            try:
                result = action()
            except BaseException as error:  # reported, never lost in a thread
                done(None, error)
            else:
                done(result, None)

        self._thread = threading.Thread(target=run, name="timely:autoscale-action", daemon=True)
        self._thread.start()

    def join(self, timeout: Optional[float] = None) -> None:
        """Waits for the action under way (if any) to end."""
        if self._thread is not None:
            self._thread.join(timeout)
