"""What follow mode's driver computes in place of Spark's expressions must be Spark's values
exactly (`timely_py.analysis.follow_communications`, `.clocks.corrected_times`): the
communications' ids (`xxhash64`) and the clock-corrected times, on awkward values."""

import numpy as np
import pyarrow as pa
import pytest
from timely_py.analysis.clocks import correct_clocks, corrected_times
from timely_py.analysis.follow_communications import spark_xxhash64

KEYS = [
    (0, 0, 0, 0), (1, 2, 3, 4), (-1, 7, -9, 1 << 40), ((1 << 63) - 1, -(1 << 63), 12345678901, 5),
    (42, 0, 1, 999_999_999_999),
]  # fmt: skip


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["data_message", "progress_message"])
def test_the_communication_ids_are_sparks_xxhash64(spark, kind):
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(KEYS, "channel long, source_worker long, target_worker long, seq long")
    expected = frame.select(F.xxhash64(F.lit(kind), "channel", "source_worker", "target_worker", "seq")).collect()
    columns = [pa.chunked_array([pa.array([row[i] for row in KEYS], pa.int64())]) for i in range(4)]
    assert spark_xxhash64(kind, columns).to_pylist() == [row[0] for row in expected]


@pytest.mark.timeout(300)
def test_the_driver_corrects_clocks_as_spark_does(spark):
    processes = {
        0: {"process": 0},
        1: {"process": 1, "clock_history": [
            {"measured_at_ns": 1_000, "offset_ns": 600, "error_ns": 5},
            {"measured_at_ns": 4_000, "offset_ns": -1_333, "error_ns": 5},
            {"measured_at_ns": 4_000, "offset_ns": 77, "error_ns": 5},
            {"measured_at_ns": 1_000_000_007, "offset_ns": 9_999, "error_ns": 5}]},
    }  # fmt: skip
    rng = np.random.default_rng(7)
    times = np.concatenate([rng.integers(0, 1_200_000_000, 300), [0, 999, 1_000, 1_001, 3_999, 4_000, 4_001]])
    rows = [(int(t), p) for t in times for p in (0, 1)]
    frame = spark.createDataFrame(rows, "time_ns long, process long")
    expected = [r["t"] for r in correct_clocks(frame, processes).collect()]
    given = corrected_times([t for t, _ in rows], [p for _, p in rows], processes)
    assert given.tolist() == expected
