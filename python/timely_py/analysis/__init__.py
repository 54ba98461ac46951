"""Critical-path analysis of timely_py traces on Spark (PySpark); contract: ``docs/critical-path.md``.

The pipeline of Sager's thesis (chapters 3 to 5) over the trace format of
``docs/trace-format.md``: clock-skew correction, activity construction, wait-state analysis,
slicing, the critical path per slice, and profiles. It reads traces only through the format,
never the engine: of ``timely_py._core`` it calls only the two native kernels
(:mod:`.kernels`, the crate ``timely-analysis``), never the engine's API, and it loads
PySpark only when a session is needed.

It needs the ``analysis`` extra (``pip install 'timely_py[analysis]'``): importing this
package works without it, so that ``timely-py`` and :mod:`timely_py.trace` do, and the first
name taken from it raises :class:`MissingDependencyError` (an ``OSError``) naming what to
install.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .session import JavaMissingError, MissingDependencyError, require_extra

if TYPE_CHECKING:  # pragma: no cover - the lazy names below, for type checkers
    from .follow import Follower, SliceResult, follow
    from .pipeline import AnalysisResult, Contributor, analyze
    from .session import get_session
    from .slicing import parse_duration

#: Each public name and the submodule that defines it, imported on first use.
_LAZY = {
    "AnalysisResult": "pipeline",
    "Contributor": "pipeline",
    "analyze": "pipeline",
    "Follower": "follow",
    "SliceResult": "follow",
    "follow": "follow",
    "get_session": "session",
    "parse_duration": "slicing",
}

__all__ = sorted([*_LAZY, "JavaMissingError", "MissingDependencyError"])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    require_extra()
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return __all__
