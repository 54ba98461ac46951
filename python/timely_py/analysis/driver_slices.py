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
Spark job, no Spark plan; or (:func:`run_tables_of_cuts`) the same from what the workers'
tasks cut and grouped of their own activities (:mod:`.worker_cuts`). The tables are what the Spark path
computes (``tests/analysis/test_analysis_driver_profiles.py``,
``tests/analysis/test_analysis_worker_slices.py``). It must not read traces or write tables.
"""

from __future__ import annotations

import math
from typing import Dict, List

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import driver_profiles, follow_slices, profiles, worker_cuts
from .schemas import SLACK
from .worker_cuts import EVERY_SLICE


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


def run_tables_of_cuts(
    cuts: List[pa.Table], rows: List[List[worker_cuts.SliceRows]], busy: pa.Table, workers: int
) -> Dict[str, pa.Table]:
    """What :func:`run_tables` makes, from what the workers' tasks made of their activities
    (:func:`.worker_cuts.worker_cut`): their ``cuts`` (in worker order) with where each one's
    slices are (``rows``), and their ``busy`` rows."""
    path = follow_slices.slice_paths(worker_cuts.slice_pieces(cuts, rows))
    tables = driver_profiles.all_profiles(path, busy, workers)
    leaders = driver_profiles.slack_leaders(path, profiles.TOP_SLACK)
    everything = pa.concat_tables(cuts) if cuts else worker_cuts.CUT.empty_table()
    tables["slack"] = slack_summary(follow_slices.marked_rows(everything, path, leaders), SLACK)
    tables["critical_path"] = path
    return tables


def slack_summary(marked: pa.Table, schema: pa.Schema) -> pa.Table:
    """:func:`.profiles.slack_summary` of ``marked`` (``contributor``, ``critical``,
    ``slack_ns``), a row per contributor in its order: the activities, how many are
    ``critical``, and the least and the lower median (``percentile_disc(0.5)``: the
    ``ceil(n / 2)``-th smallest) slack of the others (null when there are none). One sort of
    the rows by contributor and slack, not a pass over them per contributor."""
    encoded = pc.dictionary_encode(marked["contributor"].combine_chunks())
    names = encoded.dictionary.to_pylist()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    critical = marked["critical"].to_numpy(zero_copy_only=False).astype(bool)
    slack = marked["slack_ns"].to_numpy(zero_copy_only=False)
    activities = np.bincount(codes, minlength=len(names))
    on_path = np.bincount(codes[critical], minlength=len(names))
    off_codes, off_slack = codes[~critical], slack[~critical]
    order = np.lexsort((off_slack, off_codes))
    off_codes, off_slack = off_codes[order], off_slack[order]
    first = np.searchsorted(off_codes, np.arange(len(names)), side="left")
    count = np.searchsorted(off_codes, np.arange(len(names)), side="right") - first
    rows = []
    for code in sorted(range(len(names)), key=lambda index: names[index]):
        off = int(count[code])
        rows.append({
            "contributor": names[code], "activities": int(activities[code]), "on_critical_path": int(on_path[code]),
            "min_slack_ns": int(off_slack[first[code]]) if off else None,
            "median_slack_ns": int(off_slack[first[code] + math.ceil(off / 2) - 1]) if off else None,
        })  # fmt: skip
    return pa.Table.from_pylist(rows, schema=schema)
