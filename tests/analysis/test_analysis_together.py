"""`timely_py.analysis.together`: independent actions run side by side, results by name, the
first failure raised; and the two one-job helpers of the pipeline's first stage."""

import threading

import pyarrow.dataset as ds
import pytest
from support.analysis_traces import two_processes
from timely_py.analysis import activities as acts
from timely_py.analysis.clocks import correct_clocks
from timely_py.analysis.events import count_events, load_events
from timely_py.analysis.together import run_together


def test_actions_run_at_the_same_time_and_answer_by_name():
    meeting = threading.Barrier(3)  # each action waits for the other two: only concurrent ones return

    def action(value):
        return lambda: (meeting.wait(timeout=60), value)[1]

    assert run_together({"a": action(1), "b": action(2), "c": action(3)}) == {"a": 1, "b": 2, "c": 3}
    assert run_together({}) == {}


def test_the_first_failure_is_raised():
    def fails():
        raise KeyError("lost")

    with pytest.raises(KeyError, match="lost"):
        run_together({"fine": lambda: 1, "broken": fails})


def test_events_are_counted_from_the_footers_and_the_origin_is_the_first_event(spark, tmp_path):
    trace = two_processes(tmp_path / "trace")
    assert count_events(trace) == ds.dataset(str(trace), format="parquet", partitioning="hive").count_rows() > 0
    assert count_events(tmp_path / "nothing") == 0
    raw, info = load_events(spark, trace)
    events = correct_clocks(raw, info.processes)
    known = acts.catalogue(events)
    assert known.origin == events.agg({"t": "min"}).first()[0]
    assert known.end == events.agg({"t": "max"}).first()[0] > known.origin
    expected = events.where("kind = 'operator_created'").select("operator", "name", "address").distinct().collect()
    assert known.operators == {r["operator"]: (r["name"], list(r["address"])) for r in expected}
    assert len(known.operators) == 3
