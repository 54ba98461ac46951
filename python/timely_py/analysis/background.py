"""The background of a worker's timeline: where its time went when no recorded activity says.

This module owns the four activity types that lie under every other one (lowest in
:mod:`.precedence`, so they show only where nothing else was recorded), built from one
worker's rows (:data:`.schemas.WORKER_ROWS`):

* ``scope``: a run of a scope, the dataflow's root scope (a ``step`` row, depth 0) or a
  nested one (a ``scope`` row, at its depth): the scope's own work between its children's
  runs (receiving, propagating and sending progress, choosing what to run). Deeper scopes
  rank higher, so each moment goes to the innermost scope running then. ``operator`` is the
  scope's.
* ``program``: a stretch between the worker's first and last own events (the ``lifetime``
  row) outside every step: the program's own code between ``step()`` calls (generating
  input, sleeping, I/O), waiting for the interpreter lock, and the engine's bookkeeping
  between dataflows. Only on a worker whose steps are recorded (it has a ``step`` row): on
  others a step cannot be told from the time between steps. When the program sent records
  into an input in the stretch (``input`` rows: the Input operator's ``message_send``
  outside any run, at or between the stretch's bounds), the stretch is that input's:
  ``operator`` is the Input operator that sent the most messages in it (the lowest id on a
  tie); otherwise ``operator`` is null.
* ``not_started``: from the trace's first event (the ``trace`` row's start) to the worker's
  first own event: its process had not started, or had not begun.
* ``finished``: from the worker's last own event to the trace's last event (the ``trace``
  row's end): its process had ended.

Several ``lifetime`` (or ``trace``) rows count as one from the earliest start to the latest
end; without a ``lifetime`` row there is no ``program``, ``not_started`` or ``finished``,
without a ``trace`` row no ``not_started`` or ``finished``. It must not decide waits (that is
:mod:`.waits`) nor precedence (that is :mod:`.precedence`); ``docs/critical-path.md``,
"Activities", is the contract.
"""

from __future__ import annotations

import bisect
from typing import Any, Dict, List, Optional, Tuple

Row = Dict[str, Any]

#: Row types that only this module reads (they are neither work nor waiting of the worker's).
ROW_TYPES = ("scope", "input", "lifetime", "trace")


def _bounds(rows: List[Row], row_type: str) -> Optional[Tuple[int, int]]:
    """The earliest start and latest end of the rows of ``row_type`` (None: there are none)."""
    spans = [(r["start"], r["end"]) for r in rows if r["row_type"] == row_type]
    return (min(s for s, _ in spans), max(e for _, e in spans)) if spans else None


def _outside(first: int, last: int, spans: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The stretches of ``[first, last]`` that no span (sorted by start) covers."""
    stretches, t = [], first
    for start, end in spans:
        if t >= last:
            break
        if start > t:
            stretches.append((t, min(start, last)))
        t = max(t, end)
    if t < last:
        stretches.append((t, last))
    return stretches


def _input_of(sends: List[Row], starts: List[int], left: int, right: int) -> Optional[int]:
    """The Input operator that sent the most messages in ``[left, right]`` (lowest id on a
    tie), or None; ``sends`` sorted by start, ``starts`` their starts."""
    counts: Dict[int, int] = {}
    for row in sends[bisect.bisect_left(starts, left) : bisect.bisect_right(starts, right)]:
        counts[row["operator"]] = counts.get(row["operator"], 0) + 1
    return min(counts, key=lambda op: (-counts[op], op)) if counts else None


def background(rows: List[Row]) -> List[Row]:
    """The ``scope``, ``program``, ``not_started`` and ``finished`` items of one worker's rows
    (dicts of :data:`.schemas.WORKER_ROWS`), for :func:`.precedence.overlay`: scope runs in
    input order, then program stretches in time order, then ``not_started`` and ``finished``."""
    items = [
        {"type": "scope", "start": r["start"], "end": r["end"], "operator": r["operator"], "useful": r["useful"],
         "depth": 0 if r["row_type"] == "step" else r["depth"]}
        for r in rows if r["row_type"] in ("step", "scope")
    ]  # fmt: skip
    lifetime = _bounds(rows, "lifetime")
    if lifetime is None:
        return items
    first, last = lifetime
    if any(r["row_type"] == "step" for r in rows):
        steps = sorted((r["start"], r["end"]) for r in rows if r["row_type"] == "step" and r["end"] > r["start"])
        sends = sorted((r for r in rows if r["row_type"] == "input" and r["operator"] is not None),
                       key=lambda r: r["start"])  # fmt: skip
        starts = [r["start"] for r in sends]
        for left, right in _outside(first, last, steps):
            fed = _input_of(sends, starts, left, right)
            items.append({"type": "program", "start": left, "end": right, "operator": fed})
    trace = _bounds(rows, "trace")
    if trace is not None:
        items.append({"type": "not_started", "start": trace[0], "end": first})
        items.append({"type": "finished", "start": last, "end": trace[1]})
    return items
