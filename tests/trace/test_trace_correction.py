"""Clock correction on hand-made traces (tests/support/tracedirs.py): `timely_py.trace.corrected`
moves process 1's times to process 0's clock (interpolating between measurements), and
`validate` reports a receive that precedes its send across processes by more than the
clocks' error bounds, and nothing when the offset or the bound explains the order."""

import pyarrow as pa
import pytest
import timely_py.trace as trace
from support.tracedirs import (
    CRAFTED_OFFSET_NS,
    crafted_metas,
    crafted_rows,
    write_crafted,
)


def measured(metas, *samples):
    """`metas` with process 1's clock history set to `samples` (measured_at, offset, error)."""
    history = [{"measured_at_ns": at, "offset_ns": offset, "error_ns": error} for at, offset, error in samples]
    metas[1]["clock_history"] = history
    metas[1]["clock"] = history[-1] if history else {"offset_ns": 0, "error_ns": 0, "measured_at_ns": 6_000}
    return metas


def process_1(table):
    """(local time, corrected time, error) of process 1's rows, in order."""
    rows = table.filter(pa.compute.equal(table.column("process"), 1))
    return list(zip(*(rows.column(c).to_pylist() for c in ("local_time_ns", "time_ns", "clock_error_ns"))))


def early_pairs(path):
    """The kinds of the rows of every `receive before send` violation of the trace."""
    found = [v for v in trace.validate(path) if v.kind == "receive before send"]
    return sorted(tuple(sorted(v.rows.column("kind").to_pylist())) for v in found)


# --- corrected --------------------------------------------------------------------------


def test_corrected_moves_each_process_to_process_0_s_clock(tmp_path):
    path = write_crafted(tmp_path / "t")
    table = trace.read(path)
    moved = trace.corrected(table, path)
    assert moved.schema.names == table.schema.names + ["local_time_ns", "clock_error_ns"]
    assert moved.column("local_time_ns").equals(table.column("time_ns"))
    for process, offset, error in [(0, 0, 0), (1, CRAFTED_OFFSET_NS, 10)]:
        rows = moved.filter(pa.compute.equal(moved.column("process"), process)).to_pylist()
        assert rows and all(r["local_time_ns"] - r["time_ns"] == offset for r in rows)
        assert {r["clock_error_ns"] for r in rows} == {error}


def test_corrected_interpolates_between_measurements_and_holds_the_nearest_outside(tmp_path):
    # Process 1's events lie at 6000..7340 on its clock; measurements at 6020 and 7300.
    metas = measured(crafted_metas(), (6_020, 4_900, 10), (7_300, 5_156, 30))
    path = write_crafted(tmp_path / "t", metas=metas)
    rows = dict((local, (moved, error)) for local, moved, error in process_1(trace.corrected(trace.read(path), path)))
    assert rows[6_000] == (6_000 - 4_900, 10)  # before the first measurement: the first
    assert rows[6_040] == (6_040 - 4_904, 30)  # 20 of 1280 ns from 4900 towards 5156
    assert rows[7_300] == (7_300 - 5_156, 30)  # at the last measurement
    assert rows[7_340] == (7_340 - 5_156, 30)  # after it: the last
    times = [moved for _, moved, _ in process_1(trace.corrected(trace.read(path), path))]
    assert times == sorted(times)  # one worker's order is kept


def test_a_process_never_measured_keeps_its_times_with_an_unknown_error(tmp_path):
    path = write_crafted(tmp_path / "t", metas=measured(crafted_metas()))
    rows = process_1(trace.corrected(trace.read(path), path))
    assert rows and all(local == moved and error is None for local, moved, error in rows)


def test_a_writer_that_keeps_only_the_latest_measurement_is_corrected_by_it(tmp_path):
    metas = crafted_metas()
    metas[1]["clock_history"] = []
    path = write_crafted(tmp_path / "t", metas=metas)
    rows = process_1(trace.corrected(trace.read(path), path))
    assert {(local - moved, error) for local, moved, error in rows} == {(CRAFTED_OFFSET_NS, 10)}


def test_corrected_needs_process_and_time(tmp_path):
    path = write_crafted(tmp_path / "t")
    with pytest.raises(ValueError, match="lacks the columns \\['time_ns'\\]"):
        trace.corrected(trace.read(path).drop_columns(["time_ns"]), path)


# --- validate: receives after sends across processes ------------------------------------

# In the crafted trace, on process 1's clock, each receive is this far after its send on
# process 0's clock: message 5180 ns, progress 5160 ns, each network frame 5070 ns.
ALL_PAIRS = [
    ("message_recv", "message_send"),
    ("network_recv_end", "network_send_start"),
    ("network_recv_end", "network_send_start"),
    ("progress_recv", "progress_send"),
]


def test_receives_before_their_sends_beyond_the_bound_are_reported_with_both_rows(tmp_path):
    # An offset of 5250 puts every receive 70 to 180 ns before its send; the bound is 10 ns
    # (process 0, the reference, has no error).
    path = write_crafted(tmp_path / "t", metas=measured(crafted_metas(), (6_000, 5_250, 10)))
    violations = [v for v in trace.validate(path)]
    assert {v.kind for v in violations} == {"receive before send"}
    assert early_pairs(path) == ALL_PAIRS
    message = next(v for v in violations if "message_recv" in v.message)
    assert message.message.startswith("message_recv on process 1 is 70 ns before its message_send on process 0")
    assert "error bound of 10 ns" in message.message
    assert message.rows.column("process").to_pylist() == [0, 1]


def test_the_error_bounds_excuse_what_they_cover(tmp_path):
    # A bound of 180 ns covers every gap (at most 180 ns); 175 ns leaves the network's.
    wide = write_crafted(tmp_path / "wide", metas=measured(crafted_metas(), (6_000, 5_250, 180)))
    assert trace.validate(wide) == []
    narrower = write_crafted(tmp_path / "narrower", metas=measured(crafted_metas(), (6_000, 5_250, 175)))
    assert early_pairs(narrower) == ALL_PAIRS[1:3]


def test_a_receive_stamped_before_its_send_is_fine_when_the_offset_explains_it(tmp_path):
    # Process 1's clock is 1000 ns behind: its message_recv is stamped 1310, the send 2130.
    rows, metas = crafted_rows(offset_ns=-1_000), crafted_metas(offset_ns=-1_000)
    assert trace.validate(write_crafted(tmp_path / "offset", rows, metas)) == []
    uncorrected = measured(crafted_metas(offset_ns=-1_000), (1_000, 0, 10))
    assert early_pairs(write_crafted(tmp_path / "no-offset", rows, uncorrected)) == ALL_PAIRS


def test_the_offset_is_interpolated_so_drift_does_not_look_like_disorder(tmp_path):
    # Measured 5000 at 6000 and 9000 at 100000: at 7310 the offset is about 5056, but the
    # latest measurement alone would put the receive 1690 ns before process 0's start.
    metas = measured(crafted_metas(), (6_000, 5_000, 10), (100_000, 9_000, 10))
    assert trace.validate(write_crafted(tmp_path / "t", metas=metas)) == []


def test_pairs_with_a_clock_never_measured_are_not_judged(tmp_path):
    rows = crafted_rows(offset_ns=-1_000)
    path = write_crafted(tmp_path / "t", rows, measured(crafted_metas(offset_ns=-1_000)))
    assert trace.validate(path) == []


def test_an_unfinished_run_still_has_its_pairs_compared(tmp_path):
    metas = measured(crafted_metas(("complete", "running")), (6_000, 5_250, 10))
    kinds = {v.kind for v in trace.validate(write_crafted(tmp_path / "t", metas=metas))}
    assert kinds == {"incomplete run", "receive before send"}


MALFORMED = [[{"offset_ns": 1}], "soon", [{"measured_at_ns": 6_000, "offset_ns": "x", "error_ns": 1}]]


@pytest.mark.parametrize("history", MALFORMED)
def test_malformed_clock_measurements_are_clear_errors(tmp_path, history):
    metas = crafted_metas()
    metas[1]["clock_history"] = history
    path = write_crafted(tmp_path / "t", metas=metas)
    with pytest.raises(trace.TraceFormatError, match="process 1's clock measurements are malformed"):
        trace.corrected(trace.read(path), path)
    violations = trace.validate(path)
    assert [v.kind for v in violations] == ["bad metadata"]
    assert "times across processes are not compared" in violations[0].message
