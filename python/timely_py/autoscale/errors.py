"""The autoscaler's exceptions, all of them `timely_py.TimelyError`s.

This module owns the exception types only; it imports nothing else of the autoscaler, so
every part of it can raise and catch them.
"""

from __future__ import annotations

from .._core import TimelyError

__all__ = ["AutoscaleError", "AutoscaleSettingsError"]


class AutoscaleError(TimelyError):
    """The autoscaler cannot do what was asked; the message says why."""


class AutoscaleSettingsError(AutoscaleError, ValueError):
    """A setting of the autoscaler is out of its range or contradicts another one (``min``
    above ``max``, a target utilisation outside (0, 1), ...); the message names the setting
    and the value it got.

    >>> from timely_py.autoscale import Settings
    >>> Settings(min_processes=3, max_processes=2)
    Traceback (most recent call last):
      ...
    timely_py.autoscale.errors.AutoscaleSettingsError: min_processes (3) is larger than max_processes (2)
    """
