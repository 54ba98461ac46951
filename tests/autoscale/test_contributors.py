"""Each decision says where the time went over its window: the critical path's top
contributors when the live analysis runs beside the autoscaler (its slices handed in with
`Autoscaler.observe_critical_path`), else the operators' useful time from the trace."""

from types import SimpleNamespace

import pytest
import timely_py as timely
from support.autoscale import sleepy_main
from timely_py import autoscale

SLEEP = 0.002


def settings():
    return autoscale.Settings(min_processes=1, max_processes=3, window=0.4, metrics_only=True)


def scaler_of(batches):
    """A metrics-only autoscaler for 1 process of 2 workers that observed `batches`."""
    scaler = autoscale.Autoscaler(settings(), processes=1, workers_per_process=2)
    for worker, batch in batches:
        scaler.observe(worker, batch)
    scaler.offer("Input", 3000.0)
    return scaler


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """One run of the sleepy workload, traced to a directory and to a callback at once."""
    trace = tmp_path_factory.mktemp("contributors") / "trace"
    batches = []
    results = timely.execute(sleepy_main(30, 20, SLEEP), workers=2, trace_dir=trace, trace_flush=0.2,
                             trace_callback=lambda w, b: batches.append((w, b)))
    assert sum(results) == sum(2 * x for x in range(30 * 20))
    return trace, batches


@pytest.mark.timeout(120)
def test_without_the_analysis_a_decision_names_the_busiest_operators_by_useful_time(traced):
    _, batches = traced
    decision = scaler_of(batches).tick()
    found = decision.contributors
    assert found is not None and found.source == autoscale.contributors.USEFUL_TIME
    assert found.top[0].name.startswith("Map#"), found
    assert found.top[0].share > 0.5 and sum(c.share for c in found.top) <= 1 + 1e-9
    shares = [c.share for c in found.top]
    assert shares == sorted(shares, reverse=True)
    # The map sleeps SLEEP per record: its useful time over the window is at least what the
    # window's records slept, on the workers seen.
    signals = scaler_of(batches).signals(*decision.window[::-1])
    mapped = signals.by_name("Map")
    assert found.top[0].seconds == pytest.approx(mapped.useful_s)
    assert "useful time over the window (no critical path" in decision.explain()
    assert decision.to_dict()["contributors"]["top"][0]["name"] == found.top[0].name


@pytest.mark.timeout(120)
def test_slices_handed_in_are_summed_over_the_window_by_their_overlap(traced):
    _, batches = traced
    scaler = scaler_of(batches)
    end = scaler.window.latest()
    start = end - int(0.4e9)
    half = int(0.2e9)
    # Three slices: one wholly inside, one half inside, one outside the window.
    scaler.observe_critical_path(SimpleNamespace(start=start, end=start + half, top=[
        SimpleNamespace(name="Map", critical_ns=150_000_000), SimpleNamespace(name="Exchange", critical_ns=50_000_000)]))
    scaler.observe_critical_path(SimpleNamespace(start=end - half // 2, end=end + half // 2, top=[
        SimpleNamespace(name="Exchange", critical_ns=200_000_000)]))
    scaler.observe_critical_path(SimpleNamespace(start=end + half, end=end + 2 * half, top=[
        SimpleNamespace(name="Probe", critical_ns=200_000_000)]))
    found = scaler.tick().contributors
    assert found.source == autoscale.contributors.CRITICAL_PATH and found.slices == 2
    # Map 150 ms; Exchange 50 + 200 / 2 = 150 ms: equal, so by name.
    assert [(c.name, round(c.seconds, 3), round(c.share, 3)) for c in found.top] == \
        [("Exchange", 0.15, 0.5), ("Map", 0.15, 0.5)]


@pytest.mark.timeout(600)
def test_the_live_analysis_slices_name_the_critical_paths_contributors(traced, spark, tmp_path):
    """The analysis's own slices of the same run (its follow mode, on the finished trace):
    they are on the clock of the events the autoscaler windows, and the sleeping map is the
    critical path's top contributor."""
    from timely_py.analysis import follow

    trace, batches = traced
    scaler = scaler_of(batches)
    follower = follow(trace, out=tmp_path / "out", slice="100ms", spark=spark, views=False, timeout=300)
    slices = list(follower)
    assert follower.stopped_by == "finished" and slices
    for result in slices:
        scaler.observe_critical_path(result)
    decision = scaler.tick()
    found = decision.contributors
    window = decision.window[1] - decision.window[0]
    assert found.source == autoscale.contributors.CRITICAL_PATH
    assert 1 <= found.slices <= window // int(100e6) + 2, (found.slices, window)
    assert found.top[0].name == "Map", found
    assert "critical path over the window (live analysis" in decision.explain()
