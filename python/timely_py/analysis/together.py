"""Running independent Spark actions side by side, each from its own driver thread.

This module owns the one way the analysis overlaps Spark jobs: a write or a collect per
thread, so that Spark plans them and schedules their tasks at the same time instead of one
after the other (most of a small trace's analysis is each job's fixed cost: planning, code
generation, scheduling, a stage with one task while the other core idles). It must not
build the actions; the pipeline does. For example,
``run_together({"n": frame.count, "rows": other.collect})`` returns ``{"n": ..., "rows": ...}``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, Mapping, TypeVar

T = TypeVar("T")


def run_together(actions: Mapping[str, Callable[[], T]]) -> Dict[str, T]:
    """Calls every action on its own thread and returns their results by name, once all are
    done; the first action (in ``actions``' order) that failed raises its error."""
    if not actions:
        return {}
    with ThreadPoolExecutor(max_workers=len(actions), thread_name_prefix="spark-action") as pool:
        futures = {name: pool.submit(action) for name, action in actions.items()}
        return {name: future.result() for name, future in futures.items()}
