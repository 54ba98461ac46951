"""The columnar contracts between the analysis stages and their per-partition kernels.

This module owns the pyarrow schemas of the kernels' inputs and outputs (the wait-state
analysis per worker, the critical path per slice) and their Spark equivalents, so that a
kernel written in another language (Rust, through ``timely_py._core``) can replace a Python
one with the same signature: ``pyarrow.Table -> pyarrow.Table``. It holds no logic.
Column meanings: ``docs/critical-path.md``.
"""

from __future__ import annotations

from typing import Dict

import pyarrow as pa

_I64, _STR, _BOOL = pa.int64(), pa.string(), pa.bool_()

#: One worker's material for the wait-state analysis (``row_type`` says which kind of row).
WORKER_ROWS = pa.schema(
    [
        ("row_type", _STR),  # operator | step | scope | park | instant | user | input | lifetime | trace | delivery
        ("worker", _I64),
        ("start", _I64),
        ("end", _I64),
        ("operator", _I64),
        ("useful", _BOOL),
        ("wake", _STR),
        ("name", _STR),
        ("depth", _I64),  # a user activity's or a nested scope's
        ("comm_id", _I64),
        ("comm_type", _STR),
        ("source_worker", _I64),
        ("send", _I64),
        ("arrival", _I64),
        ("read", _I64),
        ("arrival_known", _BOOL),
    ]
)

#: A worker's activities after the wait-state analysis and user-activity precedence.
ACTIVITIES = pa.schema(
    [
        ("worker", _I64),
        ("activity_id", _I64),
        # waiting | waiting_for_input | parked | user | operator | scope | program | not_started | finished
        ("type", _STR),
        ("start", _I64),
        ("end", _I64),
        ("operator", _I64),
        ("name", _STR),
        ("depth", _I64),  # a user activity's, or a scope's (0: a dataflow's root scope)
        ("useful", _BOOL),
        ("ended_by", _I64),
        ("ended_by_type", _STR),
        ("ended_by_worker", _I64),
        ("ended_by_send", _I64),
    ]
)

#: One slice's activities: :data:`ACTIVITIES` cut to the slice, with the slice's bounds.
SLICED = ACTIVITIES.append(pa.field("slice", _I64)).append(pa.field("slice_start", _I64))
SLICED = SLICED.append(pa.field("slice_end", _I64))

#: The critical path of one slice, one row per edge, latest first (``step`` 0).
CRITICAL_PATH = pa.schema(
    [
        ("slice", _I64),
        ("step", _I64),
        ("type", _STR),  # a worker activity's type, unknown, data_message, progress_message or all_waiting
        ("worker", _I64),  # the worker (a communication: the receiving worker)
        ("source_worker", _I64),  # a communication's sender (null for worker activities)
        ("operator", _I64),
        ("name", _STR),
        ("activity_id", _I64),
        ("comm_id", _I64),
        ("start", _I64),
        ("end", _I64),
        ("duration", _I64),
        ("complete", _BOOL),  # whether the slice's path reached the slice's start
    ]
)


_F64 = pa.float64()

#: The profile tables (``docs/critical-path.md``, "Profiles") as Spark's queries of
#: :mod:`.profiles` make them, nullability included: :mod:`.driver_profiles` makes the same.
SLICES = pa.schema(
    [
        ("slice", _I64), ("start", _I64), ("end", _I64), ("critical_ns", _I64),
        pa.field("edges", _I64, nullable=False), ("crossings", _I64), ("complete", _BOOL), ("length_ns", _I64),
        pa.field("imbalance_ns", _F64, nullable=False), ("imbalance", _F64),
    ]
)  # fmt: skip
PROFILE = pa.schema([("contributor", _STR), ("type", _STR), ("critical_ns", _I64), ("share", _F64)])
PROFILE_TYPE = pa.schema([("slice", _I64), ("type", _STR), ("critical_ns", _I64), ("share", _F64)])
PROFILE_OPERATOR = pa.schema([("slice", _I64)]).append(PROFILE.field(0)).append(PROFILE.field(1))
PROFILE_OPERATOR = PROFILE_OPERATOR.append(PROFILE.field(2)).append(PROFILE.field(3))
PROFILE_WORKER = pa.schema([("slice", _I64), ("worker", _I64), ("critical_ns", _I64), ("share", _F64)])
PROFILE_CONTRIBUTOR_WORKER = pa.schema(
    [("contributor", _STR), ("type", _STR), ("worker", _I64), ("critical_ns", _I64), ("busy_ns", _I64)]
)
IMBALANCE = pa.schema(
    [
        ("slice", _I64), ("contributor", _STR), ("critical_ns", _I64),
        pa.field("mean_worker_ns", _F64, nullable=False), ("imbalance_ns", _F64),
    ]
)  # fmt: skip

#: The sliced activities' busy time per slice, contributor, type and worker (the profiles'
#: one query of the sliced activities on the driver's path, :mod:`.driver_profiles`).
BUSY = pa.schema([("slice", _I64), ("contributor", _STR), ("type", _STR), ("worker", _I64), ("busy_ns", _I64)])


#: The ``communications`` table as Spark's query (:func:`.activities.communications`) types it,
#: nullability included: the driver's joins (:mod:`.worker_files`) make the same without
#: asking Spark's planner (``tests/analysis/test_analysis_worker_slices.py`` compares the two).
COMMUNICATIONS = pa.schema(
    [pa.field("comm_id", _I64, nullable=False), pa.field("type", _STR, nullable=False)]
    + [(name, _I64) for name in ("channel", "source_worker", "target_worker", "seq", "records", "send",
                                 "net_send", "net_recv", "arrival", "read")]
    + [("arrival_known", _BOOL), ("local", _BOOL)]
    + [(name, _I64) for name in ("send_buffer_ns", "transfer_ns", "recv_buffer_ns")]
)  # fmt: skip

#: The ``slack`` table as Spark's :func:`.profiles.slack_summary` types it (the median is
#: ``percentile_disc``'s double); :mod:`.driver_slices` makes the same.
SLACK = pa.schema(
    [("contributor", _STR), pa.field("activities", _I64, nullable=False), ("on_critical_path", _I64),
     ("min_slack_ns", _I64), ("median_slack_ns", _F64)]
)  # fmt: skip

def spark_types(schema: pa.Schema) -> Dict[str, str]:
    """The Spark SQL type of each column of ``schema``."""
    names = {pa.int64(): "bigint", pa.string(): "string", pa.bool_(): "boolean", pa.list_(pa.int64()): "array<bigint>"}
    return {field.name: names[field.type] for field in schema}


def spark_schema(schema: pa.Schema) -> str:
    """``schema`` as a Spark DDL string (for ``applyInArrow``)."""
    return ", ".join(f"`{name}` {kind}" for name, kind in spark_types(schema).items())
