"""Critical-path analysis of timely_py traces on Spark (PySpark); contract: ``docs/critical-path.md``.

The pipeline of Sager's thesis (chapters 3 to 5) over the trace format of
``docs/trace-format.md``: clock-skew correction, activity construction, wait-state analysis,
slicing, the critical path per slice, and profiles. It reads traces only through the format,
never the engine: of ``timely_py._core`` it calls only the two native kernels
(:mod:`.kernels`, the crate ``timely-analysis``), never the engine's API, and it loads
PySpark only when a session is needed.
"""

from .follow import Follower, SliceResult, follow
from .pipeline import AnalysisResult, Contributor, analyze
from .session import JavaMissingError, MissingDependencyError, get_session
from .slicing import parse_duration

__all__ = [
    "AnalysisResult",
    "Contributor",
    "Follower",
    "JavaMissingError",
    "MissingDependencyError",
    "SliceResult",
    "analyze",
    "follow",
    "get_session",
    "parse_duration",
]
