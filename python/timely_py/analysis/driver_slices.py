"""Stages 4 to 6 on the driver: a whole run's activities, as one Arrow table, to its critical
paths and every summary table.

This module owns one sequence, shared by the two callers that hold a run's activities in the
driver's memory: a large trace's per-worker path (:func:`.pipeline.analyze`, which reads back
the activities the workers' tasks wrote, :func:`.worker_files.write_activities`) and follow
mode's last batch (:meth:`.follow_carried.CarriedAnalysis.run_tables`). It cuts the activities
into slices (:func:`.follow_slices.sliced`), runs the native critical-path kernel per slice,
makes the profiles of :mod:`.driver_profiles` and the rows ``slack`` summarises
(:func:`.follow_slices.slack_rows`) and their summary (:func:`slack_summary`, what
:func:`.profiles.slack_summary` computes, in Spark's schema :data:`.schemas.SLACK`): no
Spark job, no Spark plan. The tables are what the Spark path
computes (``tests/analysis/test_analysis_driver_profiles.py``,
``tests/analysis/test_analysis_worker_slices.py``). It must not read traces or write tables.
"""

from __future__ import annotations

import math
from typing import Dict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import driver_profiles, follow_slices, profiles
from .schemas import SLACK

#: Slice numbers below and above every slice of a run (its tables take them all).
EVERY_SLICE = 1 << 62


def run_tables(activities: pa.Table, length: int, origin: int, workers: int) -> Dict[str, pa.Table]:
    """Every table :func:`.pipeline.analyze` writes but ``activities`` and ``communications``,
    by name, from the run's named ``activities`` sliced by ``length`` ns from ``origin``."""
    cut = follow_slices.sliced(activities, length, origin, -EVERY_SLICE, EVERY_SLICE)
    path = follow_slices.critical_paths(cut)
    tables = driver_profiles.all_profiles(path, follow_slices.busy(cut), workers)
    leaders = driver_profiles.slack_leaders(path, profiles.TOP_SLACK)
    marked = follow_slices.slack_rows(cut, path, leaders)
    tables["slack"] = slack_summary(marked, SLACK)
    tables["critical_path"] = path
    return tables


def slack_summary(marked: pa.Table, schema: pa.Schema) -> pa.Table:
    """:func:`.profiles.slack_summary` of ``marked`` (``contributor``, ``critical``,
    ``slack_ns``), a row per contributor in its order: the activities, how many are
    ``critical``, and the least and the lower median (``percentile_disc(0.5)``: the
    ``ceil(n / 2)``-th smallest) slack of the others (null when there are none)."""
    rows = []
    for contributor in sorted(set(marked["contributor"].to_pylist())):
        mine = marked.filter(pc.equal(marked["contributor"], contributor))
        critical = mine["critical"].to_numpy(zero_copy_only=False).astype(bool)
        off = np.sort(mine["slack_ns"].to_numpy(zero_copy_only=False)[~critical])
        rows.append({
            "contributor": contributor, "activities": mine.num_rows, "on_critical_path": int(critical.sum()),
            "min_slack_ns": int(off[0]) if off.size else None,
            "median_slack_ns": int(off[math.ceil(off.size / 2) - 1]) if off.size else None,
        })  # fmt: skip
    return pa.Table.from_pylist(rows, schema=schema)
