"""Stages 4 to 6 on the driver: a whole run's activities, as one Arrow table, to its critical
paths and every summary table.

This module owns one sequence, shared by the two callers that hold a run's activities in the
driver's memory: a large trace's per-worker path (:func:`.pipeline.analyze`, which reads back
the activities the workers' tasks wrote, :func:`.worker_files.write_activities`) and follow
mode's last batch (:meth:`.follow_carried.CarriedAnalysis.run_tables`). It cuts the activities
into slices (:func:`.follow_slices.sliced`), runs the native critical-path kernel per slice,
makes the profiles of :mod:`.driver_profiles` and the rows ``slack`` summarises
(:func:`.follow_slices.slack_rows`); the summary itself (an exact median) stays Spark's query
(:func:`.profiles.slack_summary`) over those few rows. The tables are what the Spark path
computes (``tests/analysis/test_analysis_driver_profiles.py``,
``tests/analysis/test_analysis_worker_slices.py``). It must not read traces or write tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict

import pyarrow as pa

from . import driver_profiles, follow_slices, profiles

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

#: Slice numbers below and above every slice of a run (its tables take them all).
EVERY_SLICE = 1 << 62


def run_tables(
    spark: "SparkSession", activities: pa.Table, length: int, origin: int, workers: int
) -> Dict[str, pa.Table]:
    """Every table :func:`.pipeline.analyze` writes but ``activities`` and ``communications``,
    by name, from the run's named ``activities`` sliced by ``length`` ns from ``origin``."""
    cut = follow_slices.sliced(activities, length, origin, -EVERY_SLICE, EVERY_SLICE)
    path = follow_slices.critical_paths(cut)
    tables = driver_profiles.all_profiles(path, follow_slices.busy(cut), workers)
    leaders = driver_profiles.slack_leaders(path, profiles.TOP_SLACK)
    marked = follow_slices.slack_rows(cut, path, leaders)
    tables["slack"] = profiles.slack_summary(spark.createDataFrame(marked)).toArrow()
    tables["critical_path"] = path
    return tables
