"""The launcher's exception: one type for every request it cannot carry out.

This module owns `LaunchError` only (a `timely_py.TimelyError`); it must not import the rest of the launcher, so that
every part of it (and programs that only call `add_process` or `remove_process`) can raise
and catch it.
"""

from __future__ import annotations

from .._core import TimelyError

__all__ = ["LaunchError"]


class LaunchError(TimelyError):
    """The launcher cannot do what was asked (start a cluster, add or remove a process); the
    message says why."""
