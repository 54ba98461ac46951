"""Signals from a real traced run (in-process `timely_py.execute` with a trace callback)
equal what a plain walk over the same events computes, for the whole run and for a window
that cuts operator runs in two, however the events are split into batches; and the rates
say what the workload is (a map that sleeps per record)."""

import pytest
from support.autoscale import reference_totals, sleepy_main, split_batches, time_span, traced_run
from timely_py.autoscale import EventWindow, compute_signals

pytestmark = pytest.mark.timeout(120)

SLEEP = 0.002
EPOCHS, PER_EPOCH = 6, 20


@pytest.fixture(scope="module")
def run():
    results, batches = traced_run(sleepy_main(EPOCHS, PER_EPOCH, SLEEP), 2)
    records = range(EPOCHS * PER_EPOCH)
    assert sum(results) == sum(2 * x for x in records)
    return batches


def window_of(batches):
    window = EventWindow(keep=3600.0)
    for worker, batch in batches:
        window.add(worker, batch)
    return window


def as_dicts(useful, messages):
    spans = {(r["worker"], r["operator"]): (r["useful_ns"], r["busy_ns"]) for r in useful.to_pylist()}
    sent = {(r["worker"], r["channel"], r["sent"]): r["records"] for r in messages.to_pylist()}
    return spans, sent


@pytest.mark.parametrize("rows", [None, 7, 1])
def test_window_totals_equal_a_plain_walk_over_the_events(run, rows):
    batches = run if rows is None else split_batches(run, rows)
    first, last = time_span(run)
    window = window_of(batches)
    middle = (first + last) // 2
    for start, end in [(first, last + 1), (first + (last - first) // 3, middle), (middle, last + 1)]:
        spans, sent = as_dicts(*window.totals(start, end))
        ref_spans, ref_sent = reference_totals(run, start, end)
        nonzero = lambda totals: {k: v for k, v in totals.items() if v != (0, 0)}  # noqa: E731
        assert nonzero(spans) == nonzero(ref_spans)
        assert sent == ref_sent


def test_signals_of_the_run_add_up_to_the_workload(run):
    window = window_of(run)
    first, last = time_span(run)
    signals = compute_signals(window.graph, *window.totals(first, last + 1), first, last + 1, window.workers())
    assert signals.workers == (0, 1)
    names = [s.operator.name for s in sorted(signals.operators.values(), key=lambda s: s.operator.id)]
    assert names[:3] == ["Input", "Exchange", "Map"]
    work = signals.by_name("Map")
    total = EPOCHS * PER_EPOCH
    assert work.records_in == total and work.records_out == total
    assert signals.by_name("Input").records_out == total and signals.by_name("Input").source
    assert {w.worker: w.records_in for w in work.workers} == {0: total // 2, 1: total // 2}
    # Each record costs the sleep and a little more: the true rate is at most 1 / SLEEP and,
    # on a loaded machine, not far below it.
    assert 0.2 / SLEEP < work.true_processing_rate <= 1 / SLEEP
    assert work.true_output_rate == pytest.approx(work.true_processing_rate)
    assert work.useful_s >= total * SLEEP
    # Every useful second of the map is in its runs; runs are within the window.
    for w in work.workers:
        assert w.useful_s <= w.busy_s <= signals.window_s
    exchange = signals.by_name("Exchange")
    assert sum(exchange.sent.values()) == total
    assert exchange.selectivity(next(iter(exchange.sent))) == pytest.approx(1.0)


def test_signals_equal_the_reference_rates(run):
    """The per-worker true rates are the reference's records over its useful time."""
    window = window_of(run)
    first, last = time_span(run)
    start, end = first, last + 1
    signals = compute_signals(window.graph, *window.totals(start, end), start, end, window.workers())
    ref_spans, ref_sent = reference_totals(run, start, end)
    graph = window.graph
    for op_id, s in signals.operators.items():
        into = [e.channel for e in graph.inputs(op_id)]
        for w in s.workers:
            records = sum(ref_sent.get((w.worker, c, False), 0) for c in into)
            useful_ns = ref_spans.get((w.worker, op_id), (0, 0))[0]
            assert w.records_in == records
            assert w.useful_s == useful_ns / 1e9
            if useful_ns:
                assert w.true_processing_rate == records / (useful_ns / 1e9)


def test_old_events_leave_the_window():
    import pyarrow as pa

    window = EventWindow(keep=1.0)
    batch = lambda t: pa.RecordBatch.from_pydict({  # noqa: E731
        "time_ns": [t, t + 10], "kind": ["message_send", "message_send"], "channel": [1, 1], "records": [2, 3]})
    window.add(0, batch(0))
    window.add(0, batch(3_000_000_000))
    _, messages = window.totals(0, 10**12)
    assert messages.to_pylist() == [{"worker": 0, "channel": 1, "sent": True, "records": 5, "messages": 2}]


def test_a_loop_is_one_operator_whose_records_enter_through_its_scope():
    """The loop's scope is a top-level operator: the records that enter it (on a channel
    inside it, which the input sends on from the program's code) are its records in, the
    edge Input -> loop is found, and its true rate is records entered per useful second of
    the whole loop: each record costs several iterations' sleeps, so it is far below the
    map's 1 / SLEEP. Inside the loop, that map is the operator blamed."""
    from support.autoscale import looping_main
    from timely_py.autoscale import Policy, Settings

    epochs, per_epoch, sleep = 4, 16, 0.001
    results, batches = traced_run(looping_main(epochs, per_epoch, sleep), 2)
    total = epochs * per_epoch
    assert sum(results) == total
    window = window_of(batches)
    first, last = time_span(batches)
    signals = compute_signals(window.graph, *window.totals(first, last + 1), first, last + 1, window.workers())
    loop = signals.by_name("Halving")
    assert [op.name for op in window.graph.topological_order()][:3] == ["Input", "Halving", "Map"]
    assert loop.records_in == total and loop.records_out == total
    assert signals.by_name("Input").records_out == total
    # Every number 1..64 takes floor(log2 x) + 1 halvings: 321 iterations for 64 records.
    iterations = sum(x.bit_length() for x in range(1, total + 1))
    assert loop.useful_s >= iterations * sleep
    assert loop.true_processing_rate < total / (iterations * sleep) * 1.01
    decision = Policy(Settings(max_processes=8)).decide(signals, processes=1, workers_per_process=2,
                                                        offered={"Input": 2000.0})
    assert decision.bottleneck.operator.name == "Halving" and decision.action == "scale_out"
    # Inside the loop, the map that sleeps per iteration took most of its useful time: it is
    # the operator blamed, and the explanation names it.
    inside = decision.bottleneck.inside
    assert inside and abs(sum(share for _, share in inside) - 1.0) < 1e-9, inside
    blamed = decision.bottleneck.blamed
    assert blamed.name == "Map" and len(blamed.address) == 3 and inside[0][1] > 0.5, inside
    assert f"inside Halving#{loop.operator.id}, its useful time: Map#{blamed.id} " in decision.explain()
    assert decision.to_dict()["bottleneck"]["inside"][0]["name"] == "Map"


def long_run_batches(stop_ns):
    """Worker 0: Input -> Work; at 0.5 s Work starts one run and receives 400 records at
    once (a backlog), and the run stops at `stop_ns` (None: it is still going, and a later
    event of the worker says it is at 2 s)."""
    import pyarrow as pa
    import timely_py

    schema = timely_py._core.trace_format()["schema"]
    rows = [
        {"time_ns": 0, "kind": "operator_created", "operator": 1, "address": [0, 1], "name": "Input"},
        {"time_ns": 0, "kind": "operator_created", "operator": 2, "address": [0, 2], "name": "Work"},
        {"time_ns": 0, "kind": "channel_created", "address": [0], "channel": 5, "channel_kind": "data",
         "source_operator": 1, "source_port": 0, "target_operator": 2, "target_port": 0},
        {"time_ns": 400_000_000, "kind": "message_send", "channel": 5, "records": 400},
        {"time_ns": 500_000_000, "kind": "schedule_start", "operator": 2},
        {"time_ns": 500_000_001, "kind": "message_recv", "channel": 5, "records": 400},
    ]
    first = pa.RecordBatch.from_pylist(rows, schema=schema)
    end = {"time_ns": stop_ns, "kind": "schedule_stop", "operator": 2, "useful": True} if stop_ns else \
        {"time_ns": 2_000_000_000, "kind": "activity_start", "name": "still working"}
    return [first, pa.RecordBatch.from_pylist([end], schema=schema)]


@pytest.mark.parametrize("split", [False, True])
def test_a_run_the_window_cuts_brings_its_share_of_the_records(split):
    """The run [0.5 s, 2.5 s] received 400 records; the window [1 s, 2.5 s) holds 1.5 s of
    it, so 300 records: a true rate of 200 records/s, as the whole run says (400 / 2 s)."""
    window = EventWindow(keep=60.0)
    batches = long_run_batches(2_500_000_000)
    if split:  # the start and the receipt in one batch, the stop in the next
        batches = [b for batch in batches for b in (batch.slice(0, 5), batch.slice(5))]
    for batch in batches:
        window.add(0, batch)
    start, end = 1_000_000_000, 2_500_000_000
    signals = compute_signals(window.graph, *window.totals(start, end), start, end, window.workers())
    work = signals.by_name("Work")
    assert work.records_in == 300 and work.useful_s == pytest.approx(1.5)
    assert work.true_processing_rate == pytest.approx(200.0)
    whole = compute_signals(window.graph, *window.totals(0, end), 0, end, window.workers()).by_name("Work")
    assert whole.records_in == 400 and whole.true_processing_rate == pytest.approx(400 / 2.0, rel=1e-6)


def test_a_run_still_going_counts_up_to_the_window_end():
    """The run started at 0.5 s with 400 records and has not stopped by 2 s, the latest time
    the worker delivered: it is busy, not idle. The window [1 s, 2 s) holds 1 s of its 1.5 s
    so far: 267 records, 267 records/s."""
    window = EventWindow(keep=60.0)
    for batch in long_run_batches(None):
        window.add(0, batch)
    assert window.latest() == 2_000_000_000
    start, end = 1_000_000_000, 2_000_000_000
    signals = compute_signals(window.graph, *window.totals(start, end), start, end, window.workers())
    work = signals.by_name("Work")
    assert work.useful_s == pytest.approx(1.0) and work.records_in == 267
    assert work.true_processing_rate == pytest.approx(267.0)


def test_the_graph_the_policy_walks_is_a_copy():
    """Batches may add operators (a dataflow built later) while a tick walks the graph."""
    window = EventWindow(keep=60.0)
    for batch in long_run_batches(2_500_000_000):
        window.add(0, batch)
    copy = window.graph_copy()
    import pyarrow as pa
    import timely_py

    window.add(0, pa.RecordBatch.from_pylist(
        [{"time_ns": 3_000_000_000, "kind": "operator_created", "operator": 9, "address": [1, 1], "name": "Later"}],
        schema=timely_py._core.trace_format()["schema"]))
    assert 9 in window.graph.operators and 9 not in copy.operators
    assert [op.name for op in copy.topological_order()] == ["Input", "Work"]
