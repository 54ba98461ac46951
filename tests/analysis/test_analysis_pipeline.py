"""The critical-path analysis through its public API (`timely_py.analysis.analyze`) on
hand-built traces with known critical paths (tests/support/analysis_traces.py), on one shared local
SparkSession: activities, communications with buffer times, waits, slices, critical paths
and profiles as written to Parquet."""

import json

import pyarrow.parquet as pq
import pytest
from support.analysis_traces import (
    SLEEPING_SENDER_PATHS,
    THREE_WORKERS_FIRST_SLICE,
    TWO_PROCESSES_PATH,
    sleeping_sender,
    three_workers,
    two_processes,
)
from support.tracedirs import process_json
from timely_py.analysis import analyze, parse_duration
from timely_py.analysis.clocks import offset_at, offset_column
from timely_py.analysis.critical_path import critical_path
from timely_py.analysis.schemas import SLICED

#: The activity types of `timely_py.analysis.background`.
BACKGROUND = ("scope", "program", "not_started", "finished")


def table(result, name, order):
    rows = pq.read_table(result.tables[name]).to_pylist()
    return sorted(rows, key=lambda r: tuple(r[c] for c in order))


def path_of(result, slice_index=0):
    rows = [r for r in table(result, "critical_path", ["slice", "step"]) if r["slice"] == slice_index]
    return [(r["type"], r["worker"], r["start"], r["end"]) for r in rows]


@pytest.fixture(scope="module")
def two(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("two")
    return analyze(two_processes(base / "trace"), out=base / "out", slice="1s", spark=spark)


@pytest.fixture(scope="module")
def three(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("three")
    return analyze(three_workers(base / "trace"), out=base / "out", slice="500ns", spark=spark)


def test_two_processes_critical_path_crosses_the_network_message(two):
    assert path_of(two) == TWO_PROCESSES_PATH
    assert two.workers == 2 and two.slices == 1 and two.complete_slices == 1 and two.trace_complete
    assert two.critical_ns == 3100 - 900  # from the first event (the operators built at 900)


def test_remote_messages_have_buffer_times_on_corrected_clocks(two):
    comms = {r["type"]: r for r in table(two, "communications", ["type", "target_worker"]) if r["target_worker"] == 1}
    data, progress = comms["data_message"], comms["progress_message"]
    assert (data["send"], data["arrival"], data["read"]) == (1050, 1400, 1530)
    assert (data["send_buffer_ns"], data["transfer_ns"], data["recv_buffer_ns"]) == (70, 280, 130)
    assert (progress["send_buffer_ns"], progress["transfer_ns"], progress["recv_buffer_ns"]) == (25, 570, 150)
    assert not data["local"] and data["arrival_known"] and data["records"] == 4


def test_a_wait_ended_by_a_message_names_it_and_user_activities_nest(two):
    rows = table(two, "activities", ["worker", "start"])
    recorded = [r for r in rows if r["type"] not in BACKGROUND]
    worker1 = [(r["type"], r["start"], r["end"], r["name"]) for r in recorded if r["worker"] == 1]
    assert worker1 == [
        ("waiting", 1000, 1400, None), ("parked", 1400, 1500, None), ("operator", 1520, 1800, "Sink"),
        ("user", 1900, 2000, "report"), ("user", 2000, 2500, "format"), ("user", 2500, 3100, "report"),
    ]  # fmt: skip
    wait = recorded[[r["worker"] for r in recorded].index(1)]
    assert (wait["ended_by_type"], wait["ended_by_worker"], wait["ended_by_send"]) == ("data_message", 0, 1050)
    worker0 = [(r["type"], r["start"], r["end"]) for r in recorded if r["worker"] == 0]
    assert worker0 == [("operator", 1010, 1100), ("parked", 1200, 3000), ("operator", 3002, 3008)]
    # Under them: the program's time from the first event to the first step and between
    # steps, the root scope's own time in its runs, and worker 0's time after its last event.
    background = {
        w: [(r["type"], r["start"], r["end"], r["name"]) for r in rows if r["type"] in BACKGROUND and r["worker"] == w]
        for w in (0, 1)
    }
    assert background[0] == [
        ("program", 900, 1000, None), ("scope", 1000, 1010, "Dataflow"), ("scope", 1100, 1110, "Dataflow"),
        ("program", 1110, 1200, None), ("scope", 3000, 3002, "Dataflow"), ("scope", 3008, 3010, "Dataflow"),
        ("finished", 3010, 3100, None),
    ]  # fmt: skip
    assert background[1] == [
        ("program", 900, 1000, None), ("program", 1500, 1510, None), ("scope", 1510, 1520, "Dataflow"),
        ("scope", 1800, 1810, "Dataflow"), ("program", 1810, 1900, None),
    ]  # fmt: skip


def test_profiles_are_shares_of_the_critical_path(two):
    by_type = {r["type"]: r for r in table(two, "profile_type", ["type"])}
    assert by_type["user"]["critical_ns"] == 1200 and by_type["data_message"]["critical_ns"] == 350
    assert sum(r["share"] for r in by_type.values()) == pytest.approx(1.0)
    assert two.top[0].name == "report" and two.top[0].critical_ns == 700
    workers = {r["worker"]: r["critical_ns"] for r in table(two, "profile_worker", ["worker"])}
    assert workers == {0: 150, 1: 2050}


def test_the_finding_names_the_top_work_its_worker_and_that_workers_share(two):
    """`report` (user) is 700 of the path's 2,200 ns, all on worker 1, which spent 700 ns in it
    against a mean of 350 over the two workers."""
    by_worker = table(two, "profile_contributor_worker", ["contributor", "type", "worker"])
    report = [(r["worker"], r["critical_ns"], r["busy_ns"]) for r in by_worker if r["contributor"] == "report"]
    assert report == [(1, 700, 700)]
    assert two.finding == (
        "`report` (user) is 32% of the critical path, 100% of that on worker 1, "
        "which spent 2.0x the average worker's time in it."
    )


def test_three_workers_path_follows_the_chain_of_local_messages(three):
    assert path_of(three, 0) == THREE_WORKERS_FIRST_SLICE


def test_three_workers_waits_by_park_by_spinning_and_for_input(three):
    waits = [
        (r["worker"], r["type"], r["start"], r["end"], r["ended_by_worker"])
        for r in table(three, "activities", ["worker", "start"]) if r["type"].startswith("waiting")
    ]  # fmt: skip
    assert waits == [
        (0, "waiting", 200, 295, 2), (0, "waiting_for_input", 400, 1000, None),
        (1, "waiting", 50, 150, 0), (2, "waiting", 50, 180, 1),
    ]  # fmt: skip


def test_slices_cut_activities_at_their_boundaries(three):
    assert path_of(three, 1) == [("operator", 0, 1000, 1050), ("waiting_for_input", 0, 550, 1000)]
    assert path_of(three, 2) == [("scope", 0, 1100, 1105), ("operator", 0, 1050, 1100)]
    slices = table(three, "slices", ["slice"])
    assert [(r["start"], r["end"], r["complete"]) for r in slices] == [
        (50, 550, True),
        (550, 1050, True),
        (1050, 1105, True),
    ]
    assert all(r["critical_ns"] == r["length_ns"] for r in slices)
    assert three.slices == 3 and three.slice_ns == 500


def test_slices_that_end_while_a_worker_waits_for_a_sleeping_sender_get_whole_paths(spark, tmp_path):
    # At 550 and 1050 worker 0 waits for a message worker 1 sends at 1200, and worker 1 sleeps
    # between steps: the walk starts on worker 1, in the program's time.
    result = analyze(sleeping_sender(tmp_path / "trace"), out=tmp_path / "out", slice="500ns", spark=spark, views=False)
    assert [path_of(result, k) for k in range(3)] == SLEEPING_SENDER_PATHS
    assert result.slices == result.complete_slices == 3
    slices = table(result, "slices", ["slice"])
    assert [(s["slice"], s["critical_ns"], s["length_ns"], s["crossings"]) for s in slices] == [
        (0, 500, 500, 0), (1, 500, 500, 0), (2, 355, 355, 1),
    ]  # fmt: skip


def test_imbalance_and_slack_tables(three):
    imbalance = {r["slice"]: r["imbalance"] for r in table(three, "slices", ["slice"])}
    assert all(0 <= value <= 1 for value in imbalance.values()) and imbalance[1] > 0
    slack = {r["contributor"]: r for r in table(three, "slack", ["contributor"])}
    assert slack["Sink"]["activities"] >= 2 and slack["Source"]["on_critical_path"] >= 3


def test_clock_offsets_are_interpolated_between_measurements(spark):
    history = [(1_000, 100), (3_000, 300)]
    times = [0, 1_000, 1_500, 2_999, 3_000, 9_000]
    frame = spark.createDataFrame([(1, t) for t in times], "process long, time_ns long")
    got = [r[0] for r in frame.select(offset_column({1: history})).collect()]
    assert got == [offset_at(history, t) for t in times] == [100, 100, 150, 299, 300, 300]


def test_bad_input_is_a_clear_error(spark, tmp_path):
    with pytest.raises(ValueError, match="no trace directory"):
        analyze(tmp_path / "missing", out=tmp_path / "out", spark=spark)
    empty = tmp_path / "empty" / "process=0"
    empty.mkdir(parents=True)
    (empty / "_process.json").write_text(json.dumps(process_json(0, 1, 1)))
    with pytest.raises(ValueError, match="has no event files"):
        analyze(empty.parent, out=tmp_path / "out", spark=spark)
    with pytest.raises(ValueError, match="duration"):
        parse_duration("fast")
    with pytest.raises(ValueError, match="longer than 0"):
        parse_duration("0ms")


def test_slack_is_the_length_of_the_next_wait_on_the_worker(spark):
    from timely_py.analysis.profiles import slack
    from timely_py.analysis.schemas import CRITICAL_PATH, SLICED, spark_schema

    def frame(schema, rows):
        full = [{**{name: None for name in schema.names}, **row} for row in rows]
        return spark.createDataFrame([tuple(r[n] for n in schema.names) for r in full], spark_schema(schema))

    bounds = {"worker": 0, "slice": 0, "slice_start": 0, "slice_end": 100}
    timeline = [("operator", 0, 10), ("waiting", 10, 13), ("operator", 13, 20), ("waiting_for_input", 20, 28)]
    timeline.append(("operator", 28, 30))
    rows = [dict(bounds, type=t, start=s, end=e, activity_id=i) for i, (t, s, e) in enumerate(timeline)]
    for row in rows:
        row["name"] = "Map" if row["type"] == "operator" else None
    path = [{"slice": 0, "step": 0, "type": "operator", "worker": 0, "name": "Map", "activity_id": 4, "start": 28,
             "end": 30, "duration": 2, "complete": False}]  # fmt: skip
    # Time that is no activity's leads the path here but has no slack: never a leader.
    for step, (kind, start, end) in enumerate([("unknown", 20, 28), ("all_waiting", 0, 20)], start=1):
        path.append(dict(path[0], step=step, type=kind, name=None, activity_id=None, start=start, end=end,
                         duration=end - start))  # fmt: skip
    (row,) = slack(frame(SLICED, rows), frame(CRITICAL_PATH, path), top=1).collect()
    assert row["contributor"] == "Map"
    assert (row["activities"], row["on_critical_path"]) == (3, 1)
    assert (row["min_slack_ns"], row["median_slack_ns"]) == (3, 3)  # the runs before the waits of 3 and 8 ns


def test_a_clock_offset_measured_wrong_gives_negative_transfers_without_breaking_the_walk(spark, tmp_path):
    # Process 1's offset is measured 600 ns too large (its measurement's error is larger than
    # that), so its times land 600 ns early on process 0's clock: the data message is received
    # (network 800, read 930) before it was sent (1050) and the progress batch's transfer is
    # negative too. Transfer times stay as measured; arrivals are clamped; the path is whole.
    trace = two_processes(tmp_path / "trace")
    meta_file = trace / "process=1" / "_process.json"
    meta = json.loads(meta_file.read_text())
    for clock in [meta["clock"], *meta["clock_history"]]:
        clock["offset_ns"] += 600
        clock["error_ns"] = 1_500
    meta_file.write_text(json.dumps(meta))
    result = analyze(trace, out=tmp_path / "out", slice="1s", spark=spark, views=False)
    comms = {r["type"]: r for r in table(result, "communications", ["type"]) if r["target_worker"] == 1}
    data = comms["data_message"]
    assert (data["send"], data["net_recv"], data["read"]) == (1050, 800, 930)
    assert data["transfer_ns"] == 800 - 1120 < 0 and comms["progress_message"]["transfer_ns"] < 0
    assert data["arrival"] == data["read"] and data["recv_buffer_ns"] == 0, "arrival clamped to the read"
    edges = table(result, "critical_path", ["step"])
    assert result.complete_slices == result.slices == 1
    assert all(e["duration"] >= 0 for e in edges) and not [e for e in edges if e["type"] == "waiting"]
    assert sum(e["duration"] for e in edges) == result.critical_ns
    for later, earlier in zip(edges, edges[1:]):
        assert earlier["end"] == later["start"], "connected"


def test_a_message_sent_after_the_wait_it_ended_is_crossed_at_the_wait_s_end():
    # What clocks that disagree by more than their correction look like to the walk: worker 1
    # waits until 100 for a message worker 0 sent at 150 (by the corrected clocks).
    base = {name: None for name in SLICED.names}
    base.update(slice=0, slice_start=0, slice_end=1_000)
    rows = [
        dict(base, worker=0, activity_id=1, type="operator", start=0, end=180, operator=1, name="Source"),
        dict(base, worker=1, activity_id=2, type="waiting", start=0, end=100, ended_by=7,
             ended_by_type="data_message", ended_by_worker=0, ended_by_send=150),
        dict(base, worker=1, activity_id=3, type="operator", start=100, end=200, operator=2, name="Sink"),
    ]  # fmt: skip
    edges = [(e["type"], e["worker"], e["start"], e["end"]) for e in critical_path(rows, 0)]
    assert edges == [("operator", 1, 100, 200), ("data_message", 1, 100, 100), ("operator", 0, 0, 100)]
