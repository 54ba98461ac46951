"""timely_py.trace on hand-made traces (tests/support/tracedirs.py): the consistent crafted trace
passes every check, and breaking one property at a time gives exactly that violation, with
the rows involved; reader errors; the Perfetto export's clock correction and flows."""

import json
import shutil

import pytest
import timely_py.trace as trace
from support.tracedirs import (
    CRAFTED_OFFSET_NS,
    crafted_metas,
    crafted_rows,
    process_json,
    write_crafted,
)
from timely_py.cli import main as cli_main


def without(rows, kind, worker=None):
    """`rows` less the first event of `kind` (on `worker`, if given)."""
    index = next(i for i, r in enumerate(rows) if r["kind"] == kind and worker in (None, r["worker"]))
    return rows[:index] + rows[index + 1 :]


def changed(rows, kind, **columns):
    """`rows` with the first event of `kind` given other column values."""
    index = next(i for i, r in enumerate(rows) if r["kind"] == kind)
    return rows[:index] + [{**rows[index], **columns}] + rows[index + 1 :]


def kinds_of(violations):
    return sorted({v.kind for v in violations})


def test_the_crafted_trace_is_consistent(tmp_path):
    path = write_crafted(tmp_path / "t")
    assert trace.validate(path) == []
    kinds = set(trace.read(path).column("kind").to_pylist())
    assert len(kinds) == 17  # every kind of the format


def test_a_trace_split_over_parts_reads_in_order(tmp_path):
    whole = trace.read(write_crafted(tmp_path / "one"))
    parts = write_crafted(tmp_path / "three", parts_per_worker=3)
    assert sorted(p.name for p in (parts / "process=0" / "worker=0").iterdir()) == [
        f"part-00000{i}.parquet" for i in range(3)
    ]
    assert trace.read(parts).equals(whole)
    assert trace.validate(parts) == []


def test_events_at_equal_times_keep_their_file_order(tmp_path):
    rows = [{**r, "time_ns": 7} for r in crafted_rows() if r["worker"] == 0]
    path = write_crafted(tmp_path / "t", rows, {0: process_json(0, 1, 1)}, parts_per_worker=4)
    assert trace.read(path).column("kind").to_pylist() == [r["kind"] for r in rows]
    assert "time goes back" not in {v.kind for v in trace.validate(path)}


BROKEN = {
    "unmatched send": lambda rows: without(rows, "message_recv"),
    "unmatched receive": lambda rows: without(rows, "message_send"),
    "unmatched send (progress)": lambda rows: without(rows, "progress_recv", worker=1),
    "unmatched receive (progress)": lambda rows: without(rows, "progress_send"),
    "unmatched send (network)": lambda rows: without(rows, "network_recv_end"),
    "unmatched receive (network)": lambda rows: without(rows, "network_send_start"),
    "duplicate message": lambda rows: rows + [{**next(r for r in rows if r["kind"] == "message_recv"), "time_ns": 10**9}],
    "time goes back": lambda rows: changed(rows, "trace_wait", time_ns=1),
    "unbalanced schedule": lambda rows: without(rows, "schedule_stop", worker=1),
    "unbalanced activity": lambda rows: [r for r in rows if (r["kind"], r.get("name")) != ("activity_stop", "outer")],
    "unbalanced park": lambda rows: without(rows, "unpark"),
    "bad nesting": lambda rows: changed(rows, "activity_stop", name="outer"),
    "unknown operator": lambda rows: changed(rows, "progress_push", operator=99),
    "unknown channel": lambda rows: changed(rows, "message_send", channel=7),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_broken_property_is_reported_with_its_rows(tmp_path, case):
    expected = case.split(" (")[0]
    rows = BROKEN[case](crafted_rows())
    violations = trace.validate(write_crafted(tmp_path / "t", rows))
    assert expected in kinds_of(violations), [str(v) for v in violations]
    found = next(v for v in violations if v.kind == expected)
    assert found.rows.num_rows >= 1
    assert set(found.rows.schema.names) >= {"time_ns", "kind", "process", "worker"}
    assert str(found).startswith(expected + ": ")


def test_each_broken_property_gives_only_its_own_violations(tmp_path):
    # A missing receive is one unmatched send, not also a nesting or reference problem.
    violations = trace.validate(write_crafted(tmp_path / "t", without(crafted_rows(), "message_recv")))
    assert [v.kind for v in violations] == ["unmatched send"]
    assert violations[0].rows.column("kind").to_pylist() == ["message_send"]
    assert "channel 0, source_worker 0, target_worker 1, seq 0" in violations[0].message


def test_a_schedule_outside_the_running_scope_is_bad_nesting(tmp_path):
    rows = crafted_rows()
    rows = changed(rows, "operator_created", address=[1])  # the outer "scope" no longer contains Source
    violations = trace.validate(write_crafted(tmp_path / "t", rows))
    assert kinds_of(violations) == ["bad nesting"]
    assert violations[0].rows.column("kind").to_pylist() == ["schedule_start", "schedule_start"]


def test_unknown_references_are_not_checked_when_creations_were_not_recorded(tmp_path):
    rows = [r for r in changed(crafted_rows(), "progress_push", operator=99) if not r["kind"].endswith("_created")]
    metas = crafted_metas()
    for meta in metas.values():
        meta["event_classes"].remove("operators")
    assert trace.validate(write_crafted(tmp_path / "t", rows, metas)) == []


@pytest.mark.parametrize("status,kind", [("running", "incomplete run"), ("failed", "failed run")])
def test_an_unfinished_process_is_reported_once_instead_of_unpaired_events(tmp_path, status, kind):
    rows = without(without(crafted_rows(), "message_recv"), "schedule_stop", worker=1)
    violations = trace.validate(write_crafted(tmp_path / "t", rows, crafted_metas(("complete", status))))
    assert [v.kind for v in violations] == [kind]
    assert "process 1" in violations[0].message


def test_a_missing_process_and_a_part_gap_are_reported(tmp_path):
    path = write_crafted(tmp_path / "t", parts_per_worker=3)
    (path / "process=0" / "worker=0" / "part-000001.parquet").unlink()
    shutil.rmtree(path / "process=1")
    violations = trace.validate(path)
    # The lost part's events also leave a schedule unbalanced; sends are not paired.
    assert {"missing process", "part gap"} <= set(kinds_of(violations))
    assert not any(v.kind.startswith("unmatched") for v in violations)
    assert "parts [1] are missing" in next(v.message for v in violations if v.kind == "part gap")


def test_a_part_gap_alone_stops_pairing(tmp_path):
    path = write_crafted(tmp_path / "t", parts_per_worker=3)
    (path / "process=1" / "worker=1" / "part-000001.parquet").unlink()
    kinds = set(kinds_of(trace.validate(path)))
    assert "part gap" in kinds and not any(k.startswith("unmatched") for k in kinds)


def test_an_unreadable_file_is_reported_and_the_rest_is_checked(tmp_path):
    path = write_crafted(tmp_path / "t")
    (path / "process=1" / "worker=1" / "part-000001.parquet").write_bytes(b"not parquet")
    violations = trace.validate(path)
    assert kinds_of(violations) == ["unreadable file"]
    with pytest.raises(trace.TraceFormatError, match="cannot read"):
        trace.read(path)


def test_violations_beyond_the_limit_are_counted(tmp_path):
    rows = crafted_rows()
    rows = [r for r in rows if r["kind"] != "message_recv"]
    send = next(r for r in rows if r["kind"] == "message_send")
    rows += [{**send, "seq": seq, "time_ns": 10_000 + seq} for seq in range(1, 30)]
    violations = trace.validate(write_crafted(tmp_path / "t", rows), limit=5)
    assert [v.kind for v in violations] == ["unmatched send"] * 6
    assert violations[-1].message == "25 more violations of this kind are not listed"


def test_the_cli_lists_violations_and_fails(tmp_path, capsys):
    path = write_crafted(tmp_path / "t", without(crafted_rows(), "unpark"))
    assert cli_main(["trace", "validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "unbalanced park: worker 0: a park is followed by activity_stop instead of an unpark" in out
    assert "kind=park" in out and out.strip().endswith("1 violations")


# --- reader errors ----------------------------------------------------------------------


def test_reader_errors_are_clear(tmp_path):
    with pytest.raises(trace.TraceFormatError, match="no trace directory"):
        trace.read(tmp_path / "missing")
    with pytest.raises(trace.TraceFormatError, match="no process=P subdirectory"):
        trace.read(tmp_path)
    path = write_crafted(tmp_path / "t")
    (path / "process=1" / "_process.json").write_text(json.dumps(process_json(1, 2, 1, format_version=2)))
    with pytest.raises(trace.TraceFormatError, match="format_version 2"):
        trace.metadata(path)
    (path / "process=1" / "_process.json").write_text("{")
    with pytest.raises(trace.TraceFormatError, match="not readable JSON"):
        trace.validate(path)
    (path / "process=1" / "_process.json").unlink()
    with pytest.raises(trace.TraceFormatError, match="_process.json is missing"):
        trace.summary(path)
    assert issubclass(trace.TraceFormatError, ValueError)


def test_kinds_are_checked_and_one_kind_may_be_named_alone(tmp_path):
    path = write_crafted(tmp_path / "t")
    assert trace.read(path, kinds="park").column("kind").to_pylist() == ["park"]
    with pytest.raises(ValueError, match="unknown event kinds \\['schedule'\\]"):
        trace.read(path, kinds=["schedule"])


def test_files_being_written_and_hidden_files_are_skipped(tmp_path):
    path = write_crafted(tmp_path / "t")
    before = trace.read(path)
    worker = path / "process=0" / "worker=0"
    (worker / ".part-000001.parquet.tmp").write_bytes(b"half a file")
    (worker / "_SUCCESS").write_bytes(b"")
    assert trace.read(path).equals(before)
    assert trace.validate(path) == []


# --- Perfetto on the crafted trace ------------------------------------------------------


def test_the_export_applies_clock_offsets_and_draws_every_span(tmp_path):
    events = trace.perfetto_events(write_crafted(tmp_path / "t"))
    slices = {(e["tid"], e["name"]): e for e in events if e["ph"] == "X"}
    assert set(slices) == {(0, "outer"), (0, "Dataflow"), (0, "Source"), (0, "inner"), (0, "park"), (1, "Sink")}
    # Trace start is worker 0's first event (1000 ns); process 1's clock is 5 µs ahead.
    assert slices[(0, "outer")]["ts"] == 1.0 and slices[(0, "outer")]["dur"] == 0.5
    assert slices[(1, "Sink")]["ts"] == pytest.approx((2_300 + CRAFTED_OFFSET_NS - CRAFTED_OFFSET_NS - 1_000) / 1000)
    assert slices[(0, "park")]["cat"] == "idle" and slices[(0, "park")]["args"]["wake"] == "timeout"
    assert slices[(0, "inner")]["cat"] == "activity"
    send, receive = (next(e for e in events if e["ph"] == ph) for ph in "sf")
    assert (send["tid"], receive["tid"], send["id"]) == (0, 1, receive["id"])
    assert send["ts"] == 1.13 and receive["ts"] == 1.31 and receive["bp"] == "e"
    assert {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"} == {0, 1}
    wait = next(e for e in events if e["ph"] == "i")
    assert (wait["name"], wait["args"], wait["ts"]) == ("trace_wait", {"duration_ns": 5}, 1.2)


def test_the_export_closes_spans_of_a_run_cut_short(tmp_path):
    rows = [r for r in crafted_rows() if r["kind"] not in ("schedule_stop", "activity_stop")]
    events = trace.perfetto_events(write_crafted(tmp_path / "t", rows, crafted_metas(("running", "running"))))
    outer = next(e for e in events if e["ph"] == "X" and e["name"] == "outer")
    assert outer["args"]["unfinished"] is True and outer["dur"] == 0.6  # up to worker 0's last event


def test_a_misplaced_worker_and_an_unknown_status_are_reported(tmp_path):
    metas = crafted_metas(("complete", "finished"))
    path = write_crafted(tmp_path / "t", metas=metas)
    (path / "process=1" / "worker=1").rename(path / "process=0" / "worker=1")
    violations = trace.validate(path)
    assert kinds_of(violations) == ["bad metadata", "misplaced file"]


def test_a_run_killed_before_its_first_file_is_incomplete_and_empty(tmp_path):
    path = write_crafted(tmp_path / "t", rows=[], metas=crafted_metas(("running", "running")))
    assert trace.read(path).num_rows == 0
    assert [v.kind for v in trace.validate(path)] == ["incomplete run", "incomplete run"]
    assert trace.summary(path).events == 0
    assert [e["ph"] for e in trace.perfetto_events(path)] == ["M", "M"]


def test_the_export_draws_progress_flows_to_every_receiver_and_network_instants(tmp_path):
    events = trace.perfetto_events(write_crafted(tmp_path / "t"))
    flows = {}
    for event in events:
        if event["ph"] in "sf":
            flows.setdefault(event["id"], {})[event["ph"]] = event
    progress = [pair for pair in flows.values() if pair["s"]["cat"] == "progress"]
    # Worker 0 sends one batch, received by worker 0 (itself) and worker 1 (process 1).
    assert sorted((p["s"]["tid"], p["f"]["tid"], p["f"]["pid"]) for p in progress) == [(0, 0, 0), (0, 1, 1)]
    assert {p["s"]["ts"] for p in progress} == {1.17}
    assert sorted(p["f"]["ts"] for p in progress) == [1.175, 1.33]  # process 1's 7330 ns is 2330 on process 0's
    assert all(p["s"]["args"]["seq"] == 0 and p["s"]["args"]["source_worker"] == 0 for p in progress)
    assert len(flows) == 3 and len(set(flows)) == 3  # and one data message: ids unique across kinds
    network = [e for e in events if e.get("cat") == "network"]
    assert sorted((e["name"], e["tid"], e["ts"]) for e in network) == [
        ("network receive", 1, 1.25), ("network receive", 1, 1.26),
        ("network send", 0, 1.18), ("network send", 0, 1.19),
    ]  # fmt: skip
    assert all(e["ph"] == "i" and e["s"] == "t" for e in network)
    assert next(e for e in network if e["ts"] == 1.18)["args"] == {
        "channel_kind": "data", "channel": 0, "source_worker": 0, "target_worker": 1, "seq": 0, "bytes": 40,
    }  # fmt: skip


def test_the_export_interpolates_clock_offsets(tmp_path):
    # Measured 5000 at 6000 and 9000 at 100000 on process 1's clock: its message_recv at
    # 7310 is at 7310 - 5056 = 2254 on process 0's clock (the latest offset would say -1690).
    metas = crafted_metas()
    history = [{"measured_at_ns": 6_000, "offset_ns": 5_000, "error_ns": 10},
               {"measured_at_ns": 100_000, "offset_ns": 9_000, "error_ns": 10}]  # fmt: skip
    metas[1].update(clock=history[-1], clock_history=history)
    events = trace.perfetto_events(write_crafted(tmp_path / "t", metas=metas))
    receive = next(e for e in events if e["ph"] == "f" and e["cat"] == "message")
    assert receive["ts"] == pytest.approx((2_254 - 1_000) / 1000)


def test_progress_flows_can_be_left_out(tmp_path):
    path = write_crafted(tmp_path / "t")
    events = trace.perfetto_events(path, progress=False)
    assert sorted((e["cat"], e["ph"]) for e in events if e["ph"] in "sf") == [("message", "f"), ("message", "s")]
    output = tmp_path / "run.json"
    assert cli_main(["trace", "export", str(path), "--no-progress", "-o", str(output)]) == 0
    written = json.loads(output.read_text())["traceEvents"]
    assert len(written) == len(events) and not any(e.get("cat") == "progress" for e in written)
    assert len(written) + 4 == len(trace.perfetto_events(path))  # two progress flows of two events
