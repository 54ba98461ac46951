"""Which activity a worker was doing at each moment when several cover it (thesis 6.1).

This module owns one pure function, :func:`overlay`: from overlapping intervals with
priorities, the non-overlapping segments in which the highest priority covering each moment
wins (ties: the one that started later, that is the inner one), and the priorities of the
activity types (:data:`PRIORITY`). The analysis gives waits the highest priority, then parked
stretches no wait explains, then user activities (deeper ones higher), then operator runs;
so a user activity takes precedence over what it covers, innermost first, but never over
waiting. Below operator runs lie the background of :mod:`.background`: scope runs (deeper
ones higher), then the program's time between steps, then the time before the worker
started and after it finished, so they show only where nothing else was recorded. It knows
nothing about Spark or traces.
"""

from __future__ import annotations

import heapq
from typing import Any, Dict, List, Tuple

#: Priorities of the activity types (a user activity adds its depth to ``user``, a scope
#: its depth, at most :data:`MAX_SCOPE_DEPTH`, to ``scope``).
PRIORITY = {
    "waiting": 1000, "waiting_for_input": 1000, "parked": 900, "user": 100, "operator": 50, "scope": 10,
    "program": 3, "not_started": 2, "finished": 1,
}  # fmt: skip

#: Scopes nested deeper than this rank as if this deep (so that every scope ranks below operators).
MAX_SCOPE_DEPTH = 39

Item = Dict[str, Any]


def priority(item: Item) -> int:
    """An item's priority: :data:`PRIORITY` of its type, plus its depth for user activities
    and scopes (a scope's between 0 and :data:`MAX_SCOPE_DEPTH`)."""
    kind, depth = item["type"], int(item.get("depth") or 0)
    if kind == "user":
        return PRIORITY[kind] + depth
    if kind == "scope":
        return PRIORITY[kind] + min(max(depth, 0), MAX_SCOPE_DEPTH)
    return PRIORITY[kind]


def overlay(items: List[Item]) -> List[Tuple[int, int, Item]]:
    """``(start, end, item)`` segments in time order, each moment given to its top item.

    Items need ``start``, ``end`` and ``type``; empty ones (``start >= end``) cover nothing.
    An item cut by a higher one yields several segments.

    >>> outer = {"type": "user", "start": 0, "end": 10, "depth": 0}
    >>> run = {"type": "operator", "start": 2, "end": 4}
    >>> [(s, e, i["type"]) for s, e, i in overlay([outer, run])]
    [(0, 10, 'user')]
    """
    live = sorted((i for i in items if i["start"] < i["end"]), key=lambda i: i["start"])
    bounds = sorted({i["start"] for i in live} | {i["end"] for i in live})
    heap: List[Tuple[int, int, int, Item]] = []
    segments: List[Tuple[int, int, Item]] = []
    following = 0
    for left, right in zip(bounds, bounds[1:]):
        while following < len(live) and live[following]["start"] <= left:
            item = live[following]
            heapq.heappush(heap, (-priority(item), -item["start"], following, item))
            following += 1
        while heap and heap[0][3]["end"] <= left:
            heapq.heappop(heap)
        if not heap:
            continue
        top = heap[0][3]
        if segments and segments[-1][2] is top and segments[-1][1] == left:
            segments[-1] = (segments[-1][0], right, top)
        else:
            segments.append((left, right, top))
    return segments
