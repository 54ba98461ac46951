"""The analysis's headline in one sentence: what the critical path spent most of its time on,
on which worker, and whether that worker did more of it than the others.

This module owns turning the small profile tables (``profile``, ``profile_contributor_worker``)
into that sentence; it computes nothing in Spark and must not change a table. The rule is
documented in ``docs/critical-path.md`` ("The finding").
"""

from __future__ import annotations

from typing import Dict, List

import pyarrow as pa

#: Contributor types that are work someone can change: operators, user activities, scopes
#: and the program's own code between steps.
WORK_TYPES = ("operator", "user", "scope", "program")


def finding(profile: pa.Table, by_worker: pa.Table, workers: int) -> str:
    """The sentence: the largest work contributor of ``profile`` with its share of the path,
    the worker on whose part of the path it lies most, and how that worker's time in it
    compares with the average worker's; the largest contributor overall first when it is no
    work (waiting, messages). Empty for a trace without a critical path."""
    rows = profile.to_pylist()
    if not rows:
        return ""
    work = [r for r in rows if r["type"] in WORK_TYPES]
    parts: List[str] = []
    if rows[0]["type"] not in WORK_TYPES:
        parts.append(f"the critical path is mostly `{rows[0]['contributor']}` ({rows[0]['share']:.0%})")
    if not work:
        return _sentence(parts) if parts else ""
    top = work[0]
    mine = [r for r in by_worker.to_pylist() if r["contributor"] == top["contributor"] and r["type"] == top["type"]]
    label = f"`{top['contributor']}`" + ("" if top["contributor"] == top["type"] else f" ({top['type']})")
    clause = f"{label} is {top['share']:.0%} of the critical path"
    critical = sum(r["critical_ns"] for r in mine)
    if critical > 0:
        worker = max(mine, key=lambda r: (r["critical_ns"], -r["worker"]))
        clause += f", {worker['critical_ns'] / critical:.0%} of that on worker {worker['worker']}"
        busy: Dict[int, int] = {r["worker"]: r["busy_ns"] for r in mine}
        mean = sum(busy.values()) / max(workers, 1)
        if mean > 0 and workers > 1:
            clause += f", which spent {busy.get(worker['worker'], 0) / mean:.1f}x the average worker's time in it"
    parts.append(clause)
    return _sentence(parts)


def _sentence(parts: List[str]) -> str:
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."
