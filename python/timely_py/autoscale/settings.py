"""The autoscaler's settings: the process range, the utilisation band, the timing of
decisions and the metrics-only switch, checked once when they are made.

This module owns `Settings` and its checks only; it knows nothing of traces or launchers.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Optional, Tuple

from .errors import AutoscaleSettingsError

__all__ = ["ENV_AUTOSCALE", "SOURCE_MODES", "Settings"]

#: The environment variable in which ``python -m timely_py.launch --autoscale`` passes its
#: settings to every process (a JSON object of `Settings` fields).
ENV_AUTOSCALE = "TIMELY_AUTOSCALE"

#: How the source rates one process observes stand for the cluster's: ``"local"`` (the
#: observed workers feed every source record, typically worker 0) or ``"symmetric"`` (every
#: worker feeds an equal share, so the observed rate is scaled by peers / observed workers).
SOURCE_MODES = ("local", "symmetric")


@dataclass(frozen=True)
class Settings:
    """What the autoscaler may do, and when.

    * ``min_processes``, ``max_processes``: the range of process counts it may choose.
    * ``target``: the utilisation the bottleneck operator should have after a change, in
      (0, 1): the process count is chosen so that the demanded rate is ``target`` of what the
      workers can process.
    * ``band``: ``(low, high)`` around ``target``; while the bottleneck's utilisation stays
      within it, nothing changes (default: ``(0.7 * target, target + (1 - target) / 2)``,
      ``(0.49, 0.85)`` for the default target 0.7).
    * ``window``: seconds of trace events the signals are computed over.
    * ``stabilisation``: seconds after a change of the process count (counted from when the
      cluster has the new count) before the next change; signals older than the change are
      never used.
    * ``min_useful``: seconds of useful time an operator needs in the window before its true
      rate is trusted (an idle operator's rate says nothing).
    * ``interval``: the least time between two decisions; a tick sooner returns the last
      decision again (ticks once per epoch then cost nothing when epochs are short).
    * ``max_step``: the most processes one decision adds or removes (None: no limit).
    * ``metrics_only``: decide and explain, never act.
    * ``sources``: one of `SOURCE_MODES`.

    >>> Settings(min_processes=2, max_processes=4).band
    (0.49, 0.85)
    >>> Settings(target=1.5)
    Traceback (most recent call last):
      ...
    timely_py.autoscale.errors.AutoscaleSettingsError: target must lie in (0, 1), not 1.5
    """

    min_processes: int = 1
    max_processes: int = 4
    target: float = 0.7
    band: Optional[Tuple[float, float]] = field(default=None)
    window: float = 5.0
    stabilisation: float = 10.0
    min_useful: float = 0.01
    interval: float = 0.25
    max_step: Optional[int] = None
    metrics_only: bool = False
    sources: str = "local"

    def __post_init__(self) -> None:
        _count("min_processes", self.min_processes, 1)
        _count("max_processes", self.max_processes, 1)
        if self.min_processes > self.max_processes:
            raise AutoscaleSettingsError(
                f"min_processes ({self.min_processes}) is larger than max_processes ({self.max_processes})"
            )
        target = _number("target", self.target)
        if not 0.0 < target < 1.0:
            raise AutoscaleSettingsError(f"target must lie in (0, 1), not {self.target!r}")
        if self.band is None:
            object.__setattr__(self, "band", (round(0.7 * target, 6), round(target + (1.0 - target) / 2, 6)))
        else:
            band = self.band
            if not isinstance(band, tuple) or len(band) != 2:
                raise AutoscaleSettingsError(f"band must be a pair (low, high), not {band!r}")
            low, high = _number("band's low", band[0]), _number("band's high", band[1])
            if not 0.0 < low <= target <= high <= 1.0:
                raise AutoscaleSettingsError(
                    f"band {band!r} must satisfy 0 < low <= target ({target}) <= high <= 1"
                )
        if _number("window", self.window) <= 0:
            raise AutoscaleSettingsError(f"window must be a positive number of seconds, not {self.window!r}")
        if _number("stabilisation", self.stabilisation) < 0:
            raise AutoscaleSettingsError(f"stabilisation must be seconds >= 0, not {self.stabilisation!r}")
        if _number("min_useful", self.min_useful) < 0:
            raise AutoscaleSettingsError(f"min_useful must be seconds >= 0, not {self.min_useful!r}")
        if _number("interval", self.interval) < 0:
            raise AutoscaleSettingsError(f"interval must be seconds >= 0, not {self.interval!r}")
        if self.max_step is not None:
            _count("max_step", self.max_step, 1)
        if not isinstance(self.metrics_only, bool):
            raise AutoscaleSettingsError(f"metrics_only must be True or False, not {self.metrics_only!r}")
        if self.sources not in SOURCE_MODES:
            raise AutoscaleSettingsError(f"sources must be one of {SOURCE_MODES}, not {self.sources!r}")

    @classmethod
    def from_environment(cls, environ: Optional[Mapping[str, str]] = None, **defaults: Any) -> "Settings":
        """Settings from `ENV_AUTOSCALE` (a JSON object of fields, which the launcher's
        ``--autoscale --min N --max M --target T`` sets), over `defaults` (the program's own
        choices); `defaults` alone when the variable is not set.

        >>> Settings.from_environment({"TIMELY_AUTOSCALE": '{"max_processes": 3}'}, window=2.0).max_processes
        3
        """
        environ = os.environ if environ is None else environ
        text = environ.get(ENV_AUTOSCALE, "").strip()
        values = dict(defaults)
        if text:
            try:
                given = json.loads(text)
            except ValueError:
                given = None
            if not isinstance(given, dict):
                raise AutoscaleSettingsError(f"{ENV_AUTOSCALE} must be a JSON object of settings, not {text!r}")
            known = {f.name for f in fields(cls)}
            unknown = sorted(set(given) - known)
            if unknown:
                raise AutoscaleSettingsError(f"{ENV_AUTOSCALE} names unknown settings {unknown}")
            if isinstance(given.get("band"), list):
                given["band"] = tuple(given["band"])
            values.update(given)
        try:
            return cls(**values)
        except TypeError as error:
            raise AutoscaleSettingsError(str(error)) from None

    @property
    def low(self) -> float:
        """The band's lower end: below it, the cluster is larger than it needs to be."""
        assert self.band is not None
        return self.band[0]

    @property
    def high(self) -> float:
        """The band's upper end: above it, the cluster is too small."""
        assert self.band is not None
        return self.band[1]


def _count(name: str, value: object, least: int) -> int:
    """`value` if it is an int (not a bool) of at least `least`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise AutoscaleSettingsError(f"{name} must be an int, not {type(value).__name__}")
    if value < least:
        raise AutoscaleSettingsError(f"{name} must be at least {least}, not {value}")
    return value


def _number(name: str, value: object) -> float:
    """`value` as a float if it is a finite real number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise AutoscaleSettingsError(f"{name} must be a finite number, not {value!r}")
    return float(value)
