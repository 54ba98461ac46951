"""Tools for the traces the engine writes (``docs/trace-format.md``; guide: ``docs/tracing.md``).

``read`` loads events as a pyarrow table, ``metadata`` the processes' ``_process.json``,
``validate`` checks a trace's consistency, ``summary`` counts its events and
``export_perfetto`` writes a Chrome trace-event file for ui.perfetto.dev. They depend on the
format document only, never on the engine.
"""

from .reader import SCHEMA, TraceFormatError, metadata, read
from .validate import validate
from .violations import Violation

__all__ = ["SCHEMA", "TraceFormatError", "Violation", "metadata", "read", "validate"]
