"""Stage 6: critical-path profiles, slack and imbalance, as Spark aggregations.

This module owns summarising the critical paths: the time each activity type, each
operator (or user activity, by name), each worker and each slice contributes, as a share of
the critical path; the slack of the activities of the top contributors; and a critical-path
imbalance indicator per slice (after Böhme et al., thesis 8.2). It must not change a path.
Definitions and columns: ``docs/critical-path.md`` ("Profiles").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

#: Top contributors (by critical-path time over all slices) whose slack is reported.
TOP_SLACK = 10

#: Activity types that are no work of the worker's: waiting, and not running at all. They do
#: not count as the time a worker spent on a contributor (imbalance).
IDLE_TYPES = ("waiting", "waiting_for_input", "parked", "not_started", "finished")

#: Critical-path edge types whose time is no activity's, or a worker's that was not running:
#: they have no slack to measure.
NO_SLACK_TYPES = ("unknown", "all_waiting", "not_started", "finished")


def contributor() -> "Column":
    """What an edge is attributed to: the operator's or user activity's name, else its type."""
    from pyspark.sql import functions as F

    return F.coalesce(F.col("name"), F.col("type"))


def slices(path: "DataFrame") -> "DataFrame":
    """Per slice: start, end, length, critical-path time, edges, crossings (communications), complete."""
    from pyspark.sql import functions as F

    comm = F.col("type").isin("data_message", "progress_message")
    return path.groupBy("slice").agg(
        F.min("start").alias("start"), F.max("end").alias("end"), F.sum("duration").alias("critical_ns"),
        F.count(F.lit(1)).alias("edges"), F.sum(F.when(comm, 1).otherwise(0)).alias("crossings"),
        F.min(F.col("complete").cast("int")).cast("boolean").alias("complete"),
    ).withColumn("length_ns", F.col("end") - F.col("start"))  # fmt: skip


def _shares(path: "DataFrame", *keys: "Column | str") -> "DataFrame":
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    grouped = path.groupBy("slice", *keys).agg(F.sum("duration").alias("critical_ns"))
    total = F.sum("critical_ns").over(Window.partitionBy("slice"))
    return grouped.withColumn("share", F.col("critical_ns") / total)


def by_type(path: "DataFrame") -> "DataFrame":
    """Per slice and activity type: critical-path time and share."""
    return _shares(path, "type")


def by_operator(path: "DataFrame") -> "DataFrame":
    """Per slice and contributor (operator or user activity name, else type): time and share."""
    return _shares(path.withColumn("contributor", contributor()), "contributor", "type")


def by_worker(path: "DataFrame") -> "DataFrame":
    """Per slice and worker (a communication counts for its receiving worker): time and share."""
    return _shares(path, "worker")


def overall(path: "DataFrame") -> "DataFrame":
    """Over all slices: each contributor's critical-path time and share, largest first."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    grouped = path.withColumn("contributor", contributor()).groupBy("contributor", "type")
    totals = grouped.agg(F.sum("duration").alias("critical_ns"))
    share = F.col("critical_ns") / F.sum("critical_ns").over(Window.partitionBy())
    return totals.withColumn("share", share).orderBy(F.desc("critical_ns"), "contributor")


def by_contributor_and_worker(sliced: "DataFrame", path: "DataFrame") -> "DataFrame":
    """Over all slices, per contributor, type and worker: the critical-path time on that worker
    (``critical_ns``; a communication counts for its receiving worker) and the time the worker
    spent on the contributor (``busy_ns``, its activities of that name and type, waits and
    idle types left out). Where on the path a contributor lies, and whether its worker did
    more of it than the others: what :mod:`.findings` reads."""
    from pyspark.sql import functions as F

    keys = ["contributor", "type", "worker"]
    critical = path.withColumn("contributor", contributor()).groupBy(*keys).agg(F.sum("duration").alias("critical_ns"))
    busy = (
        sliced.where(~F.col("type").isin(*IDLE_TYPES))
        .withColumn("contributor", contributor())
        .groupBy(*keys)
        .agg(F.sum(F.col("end") - F.col("start")).alias("busy_ns"))
    )
    joined = critical.join(busy, keys, "full").fillna(0, ["critical_ns", "busy_ns"])
    return joined.orderBy(*keys)


def imbalance(sliced: "DataFrame", path: "DataFrame", workers: int) -> "DataFrame":
    """Per slice and contributor: critical-path time, mean time per worker, and their difference
    (``imbalance_ns``, positive when the path spends longer on it than an average worker)."""
    from pyspark.sql import functions as F

    busy = sliced.where(~F.col("type").isin(*IDLE_TYPES))
    spent = (
        busy.withColumn("contributor", contributor())
        .groupBy("slice", "contributor")
        .agg((F.sum(F.col("end") - F.col("start")) / F.lit(workers)).alias("mean_worker_ns"))
    )
    critical = (
        path.withColumn("contributor", contributor())
        .groupBy("slice", "contributor")
        .agg(F.sum("duration").alias("critical_ns"))
    )
    joined = critical.join(spent, ["slice", "contributor"], "full").fillna(0, ["critical_ns", "mean_worker_ns"])
    return joined.withColumn("imbalance_ns", F.col("critical_ns") - F.col("mean_worker_ns"))


def imbalance_per_slice(imbalances: "DataFrame", slice_table: "DataFrame") -> "DataFrame":
    """The indicator per slice: the positive imbalances summed, as a share of the slice's length."""
    from pyspark.sql import functions as F

    positive = imbalances.groupBy("slice").agg(
        F.sum(F.greatest(F.col("imbalance_ns"), F.lit(0.0))).alias("imbalance_ns")
    )
    joined = slice_table.join(positive, "slice", "left").fillna(0.0, ["imbalance_ns"])
    return joined.withColumn("imbalance", F.col("imbalance_ns") / F.greatest(F.col("length_ns"), F.lit(1)))


def slack(
    sliced: "DataFrame", path: "DataFrame", top: int = TOP_SLACK, leaders: Optional[Sequence[str]] = None
) -> "DataFrame":
    """For the ``top`` contributors (``leaders``, when the caller knows them already: no Spark
    job to find them): per contributor, its activities, how many are on a critical
    path, and the slack of the others: how much longer one could run before the wait that
    follows it on its worker (in its slice) is used up; 0 on the path, and an activity with no
    wait after it in its slice has none."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if leaders is None:
        timed = overall(path).where(~F.col("type").isin(*NO_SLACK_TYPES))
        leaders = [r["contributor"] for r in timed.limit(top).collect()]
    wait = F.col("type").isin("waiting", "waiting_for_input")
    # The first wait after each activity is the last one seen walking the worker's slice
    # backwards: a growing frame, linear in Spark (a frame to unboundedFollowing is quadratic).
    later = Window.partitionBy("slice", "worker").orderBy(F.desc("start")).rowsBetween(Window.unboundedPreceding, -1)
    next_wait = F.last(F.when(wait, F.col("end") - F.col("start")), ignorenulls=True).over(later)
    activities = sliced.withColumn("slack_ns", F.coalesce(next_wait, F.lit(0)))
    activities = activities.withColumn("contributor", contributor()).where(F.col("contributor").isin(list(leaders)))
    on_path = path.where(F.col("activity_id").isNotNull()).select("slice", "activity_id").distinct()
    on_path = on_path.withColumn("critical", F.lit(True))
    return slack_summary(activities.join(on_path, ["slice", "activity_id"], "left").fillna(False, ["critical"]))


def slack_summary(marked: "DataFrame") -> "DataFrame":
    """The ``slack`` table from the leaders' activities, each with its ``contributor``, whether
    it is ``critical`` and its ``slack_ns`` (what :func:`slack` computes before it aggregates)."""
    from pyspark.sql import functions as F

    # The exact lower median (percentile_approx's answer depends on how the rows are
    # partitioned, so follow mode's last batch and `analyze` could differ by a few ns).
    off = marked.withColumn("slack_off_path", F.when(~F.col("critical"), F.col("slack_ns")))
    return off.groupBy("contributor").agg(
        F.count(F.lit(1)).alias("activities"), F.sum(F.col("critical").cast("int")).alias("on_critical_path"),
        F.min("slack_off_path").alias("min_slack_ns"),
        F.expr("percentile_disc(0.5) WITHIN GROUP (ORDER BY slack_off_path)").alias("median_slack_ns"),
    ).orderBy("contributor")  # fmt: skip


def all_profiles(sliced: "DataFrame", path: "DataFrame", workers: int) -> Dict[str, Callable[[], "DataFrame"]]:
    """Every table of this stage, by the name it is written under, as a function that builds
    it (building ``slack`` runs a Spark job: its leaders), so the caller can build and collect
    them side by side."""
    return {
        "slices": lambda: imbalance_per_slice(imbalance(sliced, path, workers), slices(path)),
        "profile_type": lambda: by_type(path),
        "profile_operator": lambda: by_operator(path),
        "profile_worker": lambda: by_worker(path),
        "profile": lambda: overall(path),
        "profile_contributor_worker": lambda: by_contributor_and_worker(sliced, path),
        "imbalance": lambda: imbalance(sliced, path, workers),
        "slack": lambda: slack(sliced, path),
    }
