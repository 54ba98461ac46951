"""The colours every output of the analysis gives to activity and edge types.

This module owns the mapping only, so the plots, the HTML viewer and the Perfetto export
show a type in one colour. It must not draw anything.
"""

from __future__ import annotations

from typing import Dict

#: Colour (CSS hex) of each activity or critical-path edge type.
TYPE_COLOURS: Dict[str, str] = {
    "operator": "#4e79a7",
    "user": "#59a14f",
    "waiting": "#e8e8e8",
    "waiting_for_input": "#bab0ac",
    "parked": "#9c755f",
    "scope": "#76b7b2",
    "program": "#8cd17d",
    "not_started": "#d4a6c8",
    "finished": "#a0cbe8",
    "unknown": "#d3d3d3",
    "data_message": "#f28e2b",
    "progress_message": "#edc948",
    "all_waiting": "#ff9da7",
}

#: The colour of a type this palette does not know.
OTHER = "#b07aa1"

#: The colour that marks the critical path.
CRITICAL = "#e15759"


def colour_of(kind: str) -> str:
    """The colour of activity or edge type ``kind``."""
    return TYPE_COLOURS.get(kind, OTHER)
