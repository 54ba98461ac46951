"""The finding (`timely_py.analysis.findings`): the sentence built from the profile tables,
on hand-made tables (no Spark): the top work contributor, its worker and that worker's time
against the average, and what comes first when the path is mostly waiting or messages."""

import pyarrow as pa
from timely_py.analysis.findings import finding


def profile(*rows):
    return pa.Table.from_pylist(
        [{"contributor": c, "type": t, "critical_ns": n, "share": s} for c, t, n, s in rows],
        schema=pa.schema([("contributor", pa.string()), ("type", pa.string()), ("critical_ns", pa.int64()),
                          ("share", pa.float64())]),
    )  # fmt: skip


def by_worker(*rows):
    return pa.Table.from_pylist(
        [{"contributor": c, "type": t, "worker": w, "critical_ns": n, "busy_ns": b} for c, t, w, n, b in rows],
        schema=pa.schema([("contributor", pa.string()), ("type", pa.string()), ("worker", pa.int64()),
                          ("critical_ns", pa.int64()), ("busy_ns", pa.int64())]),
    )  # fmt: skip


def test_a_skewed_operator_is_named_with_its_worker_and_how_much_more_it_did():
    top = profile(("Normalize", "operator", 610, 0.61), ("parked", "parked", 390, 0.39))
    workers = by_worker(
        ("Normalize", "operator", 0, 100, 400), ("Normalize", "operator", 2, 510, 1200),
        ("Normalize", "operator", 1, 0, 200), ("parked", "parked", 1, 390, 0),
    )  # fmt: skip
    assert finding(top, workers, workers=4) == (
        "`Normalize` (operator) is 61% of the critical path, 84% of that on worker 2, "
        "which spent 2.7x the average worker's time in it."
    )


def test_waiting_first_is_said_before_the_top_work():
    top = profile(("progress_message", "progress_message", 500, 0.5), ("program", "program", 300, 0.3))
    workers = by_worker(("program", "program", 0, 300, 300), ("program", "program", 1, 0, 300))
    assert finding(top, workers, workers=2) == (
        "The critical path is mostly `progress_message` (50%); `program` is 30% of the critical path, "
        "100% of that on worker 0, which spent 1.0x the average worker's time in it."
    )


def test_no_work_on_the_path_and_no_path_at_all():
    assert finding(profile(("parked", "parked", 10, 1.0)), by_worker(), workers=1) == (
        "The critical path is mostly `parked` (100%)."
    )
    assert finding(profile(), by_worker(), workers=2) == ""


def test_one_worker_gets_no_comparison():
    top = profile(("Map", "operator", 10, 1.0))
    assert finding(top, by_worker(("Map", "operator", 0, 10, 10)), workers=1) == (
        "`Map` (operator) is 100% of the critical path, 100% of that on worker 0."
    )
