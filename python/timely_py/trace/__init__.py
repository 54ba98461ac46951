"""Tools for the traces the engine writes (``docs/trace-format.md``; guide: ``docs/tracing.md``).

``read`` loads events as a pyarrow table, ``metadata`` the processes' ``_process.json``,
``corrected`` moves events' times to process 0's clock,
``validate`` checks a trace's consistency, ``summary`` counts its events and
``export_perfetto`` writes a Chrome trace-event file for ui.perfetto.dev. They depend on the
format document only, never on the engine.
"""

from .clocks import corrected
from .perfetto import export_perfetto, perfetto_events
from .reader import SCHEMA, TraceFormatError, metadata, read
from .summary import TraceSummary, WorkerSummary, summary
from .validate import validate
from .violations import Violation

__all__ = [
    "SCHEMA",
    "TraceFormatError",
    "TraceSummary",
    "Violation",
    "WorkerSummary",
    "corrected",
    "export_perfetto",
    "metadata",
    "perfetto_events",
    "read",
    "summary",
    "validate",
]
