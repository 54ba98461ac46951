"""Frontiers and notifications as Python sees them: probes, input handles, epochs advanced
by different workers at different times, and completion."""

import threading

import pytest
import timely_py as timely
from support.dataflows import counts, drive, run, step_until


def spin(worker, times=50):
    """Steps `worker` a number of times (letting progress messages arrive) without a goal."""
    for _ in range(times):
        worker.step_or_park(0.001)


# --- InputHandle ---------------------------------------------------------------------------


def test_input_handle_starts_open_at_epoch_zero():
    inp = timely.InputHandle()
    assert inp.time == 0
    assert inp.closed is False
    assert "time=0" in repr(inp)


def test_input_handle_advance_to_and_time():
    inp = timely.InputHandle()
    inp.advance_to(3)
    assert inp.time == 3
    inp.advance_to(3)  # staying put is allowed
    assert inp.time == 3
    inp.advance_to(10)
    assert inp.time == 10


def test_input_handle_advance_to_going_back_raises_value_error():
    inp = timely.InputHandle()
    inp.advance_to(5)
    with pytest.raises(ValueError):
        inp.advance_to(4)
    assert inp.time == 5, "a failed advance leaves the time unchanged"


@pytest.mark.parametrize("bad", ["1", 1.0, None, (1,), True])
def test_input_handle_advance_to_non_int_raises_type_error(bad):
    inp = timely.InputHandle()
    with pytest.raises(TypeError, match="timestamp"):
        inp.advance_to(bad)
    assert inp.time == 0


@pytest.mark.parametrize("bad", [-1, 2**64])
def test_input_handle_advance_to_out_of_range_raises_value_error(bad):
    inp = timely.InputHandle()
    with pytest.raises(ValueError, match="non-negative"):
        inp.advance_to(bad)


def test_input_handle_close_is_idempotent_and_send_after_close_raises():
    inp = timely.InputHandle()
    inp.close()
    inp.close()
    assert inp.closed
    with pytest.raises(ValueError):
        inp.send(1)
    with pytest.raises(ValueError):
        inp.send_batch([1, 2])
    with pytest.raises(ValueError):
        inp.advance_to(1)


def test_input_handle_context_manager_closes_it():
    with timely.InputHandle() as inp:
        assert not inp.closed
    assert inp.closed


def test_input_handle_context_manager_closes_on_exception_and_does_not_swallow_it():
    inp = timely.InputHandle()
    with pytest.raises(RuntimeError, match="inside"):
        with inp:
            raise RuntimeError("inside")
    assert inp.closed


def test_send_batch_takes_any_iterable_and_errors_in_it_propagate():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            scope.input_from(inp).inspect(seen.append).probe_with(probe)

        def broken():
            yield "first"
            raise KeyError("generator")

        with inp:
            inp.send_batch(x * 2 for x in range(3))
            inp.send_batch({"k": 1})
            inp.send_batch("ab")
            with pytest.raises(KeyError):
                inp.send_batch(broken())
        step_until(worker, lambda: not probe.done())
        return seen

    (seen,) = run(main, 1)
    assert counts(seen) == counts([0, 2, 4, "k", "a", "b"])


def test_records_arrive_at_the_epoch_they_were_sent(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            scope.input_from(inp).exchange().inspect_time(lambda t, x: seen.append((t, x))).probe_with(probe)
        with inp:
            for epoch in (0, 3, 7):
                inp.advance_to(epoch)
                inp.send_batch([(epoch, worker.index, i) for i in range(5)])
        step_until(worker, lambda: not probe.done())
        return seen

    results = run(main, workers)
    everything = [item for seen in results for item in seen]
    assert len(everything) == 3 * 5 * workers
    assert all(t == record[0] for t, record in everything)


# --- ProbeHandle -------------------------------------------------------------------------


def test_unattached_probe_is_done():
    probe = timely.ProbeHandle()
    assert probe.frontier == []
    assert probe.done()
    assert not probe.less_than(0) and not probe.less_equal(10**6)


def test_probe_holds_at_the_minimum_until_the_dataflow_runs():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp).probe_with(probe)
        observed = [list(probe.frontier)]
        inp.advance_to(4)
        observed.append(list(probe.frontier))  # no step yet: nothing has run
        step_until(worker, lambda: probe.less_than(4))
        observed.append(list(probe.frontier))
        inp.close()
        observed.append((list(probe.frontier), probe.done()))
        step_until(worker, lambda: not probe.done())
        observed.append(list(probe.frontier))
        return observed

    ((before, advanced, stepped, closed, done),) = run(main, 1)
    assert before == [0]
    assert advanced == [0]
    assert stepped == [4]
    assert closed == ([4], False)
    assert done == []


def test_probe_frontier_advances_only_as_epochs_complete(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = {}
        with worker.dataflow() as scope:
            (
                scope.input_from(inp)
                .exchange()
                .inspect_time(lambda t, x: seen.setdefault(t, []).append(x))
                .probe_with(probe)
            )
        checks = []
        for epoch in range(5):
            if worker.index == 0:
                inp.send_batch(range(epoch * 10, epoch * 10 + 10))
            spin(worker, 5)
            # The input has not advanced: the epoch cannot be complete.
            checks.append(("open", list(probe.frontier), probe.less_equal(epoch)))
            inp.advance_to(epoch + 1)
            step_until(worker, lambda: probe.less_than(epoch + 1))
            # Once the probe passed the epoch, every record of it has been seen here.
            mine = sorted(x for x in range(epoch * 10, epoch * 10 + 10) if x % worker.peers == worker.index)
            checks.append(("done", list(probe.frontier), sorted(seen.get(epoch, [])) == mine))
        inp.close()
        step_until(worker, lambda: not probe.done())
        return checks

    for checks in run(main, workers):
        for epoch in range(5):
            assert checks[2 * epoch] == ("open", [epoch], True)
            assert checks[2 * epoch + 1] == ("done", [epoch + 1], True)


def test_less_than_and_less_equal_against_the_frontier():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp).probe_with(probe)
        inp.advance_to(2)
        step_until(worker, lambda: probe.less_than(2))
        answers = [(t, probe.less_than(t), probe.less_equal(t)) for t in (0, 1, 2, 3)]
        inp.close()
        step_until(worker, lambda: not probe.done())
        return answers

    ((answers),) = run(main, 1)
    assert answers == [(0, False, False), (1, False, False), (2, False, True), (3, True, True)]


def test_probe_time_arguments_are_checked():
    probe = timely.ProbeHandle()
    with pytest.raises(TypeError):
        probe.less_than("1")
    with pytest.raises(ValueError):
        probe.less_equal(-1)


def test_a_probe_on_two_streams_reports_the_lower_frontier():
    def main(worker):
        fast, slow, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(fast).probe_with(probe)
            scope.input_from(slow).probe_with(probe)
        fast.advance_to(5)
        slow.advance_to(2)
        step_until(worker, lambda: probe.less_than(2))
        spin(worker)
        first = list(probe.frontier)
        slow.close()
        step_until(worker, lambda: probe.less_than(5))
        second = list(probe.frontier)
        fast.close()
        step_until(worker, lambda: not probe.done())
        return first, second

    assert run(main, 1) == [([2], [5])]


def test_jumping_epochs_moves_the_frontier_straight_there():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp).exchange().probe_with(probe)
        inp.advance_to(1000)
        step_until(worker, lambda: probe.less_than(1000))
        frontier = list(probe.frontier)
        inp.close()
        step_until(worker, lambda: not probe.done())
        return frontier

    assert run(main, 2) == [[1000], [1000]]


def test_epochs_advanced_by_different_workers_at_different_times():
    """Worker 0 races ahead to epoch 3; worker 1 advances one epoch at a time. Every worker's
    probe follows the slower worker, never passing an epoch it has not closed."""
    barrier = threading.Barrier(2, timeout=20)

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp).exchange().probe_with(probe)
        observed = []
        if worker.index == 0:
            inp.send("early")
            inp.advance_to(3)
            spin(worker, 100)
            observed.append(list(probe.frontier))  # held back by worker 1
        barrier.wait()
        for epoch in (1, 2, 3):
            if worker.index == 1:
                inp.advance_to(epoch)
            barrier.wait()
            step_until(worker, lambda: probe.less_than(epoch))
            spin(worker, 20)
            observed.append(list(probe.frontier))
            barrier.wait()
        inp.close()
        step_until(worker, lambda: not probe.done())
        return observed

    first, second = run(main, 2)
    assert first == [[0], [1], [2], [3]]
    assert second == [[1], [2], [3]]


def test_done_only_after_every_worker_closes_its_input():
    barrier = threading.Barrier(2, timeout=20)

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp).probe_with(probe)
        observed = []
        if worker.index == 0:
            inp.close()
            spin(worker, 100)
            observed.append(probe.done())
        barrier.wait()
        if worker.index == 1:
            inp.advance_to(7)
            inp.close()
        step_until(worker, lambda: not probe.done())
        observed.append((probe.done(), list(probe.frontier)))
        return observed

    first, second = run(main, 2)
    assert first[0] is False, "worker 1 still holds its input open"
    assert first[1] == (True, [])
    assert second == [(True, [])]


def test_dataflow_completes_after_main_returns_without_stepping(workers):
    """`execute` keeps stepping each worker after `main` returns, until its dataflows end."""

    def main(worker):
        inp = timely.InputHandle()
        seen = []
        with worker.dataflow() as scope:
            scope.input_from(inp).exchange().count_by_key(lambda x: x % 3).inspect(seen.append)
        if worker.index == 0:
            inp.send_batch(range(30))
        inp.close()
        return seen  # filled after main returns, before execute returns

    results = run(main, workers)
    assert sorted(kv for seen in results for kv in seen) == [(0, 10), (1, 10), (2, 10)]


def test_notification_waits_for_the_epoch_to_complete():
    """count_by_key emits a time's counts only once the time is complete."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            scope.input_from(inp).count_by_key().inspect_time(lambda t, kn: seen.append((t, kn))).probe_with(probe)
        inp.send_batch("aab")
        spin(worker, 100)
        before = list(seen)
        inp.advance_to(1)
        inp.send("c")
        step_until(worker, lambda: probe.less_than(1))
        middle = sorted(seen)
        inp.close()
        step_until(worker, lambda: not probe.done())
        return before, middle, sorted(seen)

    ((before, middle, final),) = run(main, 1)
    assert before == []
    assert middle == [(0, ("a", 2)), (0, ("b", 1))]
    assert final == [(0, ("a", 2)), (0, ("b", 1)), (1, ("c", 1))]


def test_two_dataflows_on_one_worker_progress_independently():
    def main(worker):
        a, b = timely.InputHandle(), timely.InputHandle()
        with worker.dataflow("A") as scope:
            pa = scope.input_from(a).probe()
        with worker.dataflow("B") as scope:
            pb = scope.input_from(b).probe()
        a.advance_to(3)
        step_until(worker, lambda: pa.less_than(3))
        spin(worker)
        frontiers = (list(pa.frontier), list(pb.frontier))
        a.close()
        step_until(worker, lambda: not pa.done())
        still = worker.has_dataflows
        b.close()
        step_until(worker, lambda: not pb.done())
        return frontiers, still

    assert run(main, 1) == [(([3], [0]), True)]


def test_step_while_steps_until_the_condition_is_false():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp).probe_with(probe)
        inp.advance_to(2)
        worker.step_while(lambda: probe.less_than(2))
        frontier = list(probe.frontier)
        inp.close()
        worker.step_while(lambda: not probe.done())
        return frontier, probe.done()

    assert run(main, 1) == [([2], True)]


def test_drive_helper_sends_epoch_batches(workers):
    # The shared helper itself: an off-by-one in it would weaken every other test.
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            scope.input_from(inp).inspect_time(lambda t, x: seen.append((t, x))).probe_with(probe)
        drive(worker, inp, probe, [["a"], [], ["b", "c"]], by=None)
        return sorted(seen), inp.closed, probe.done()

    for seen, closed, done in run(main, workers):
        assert seen == [(0, "a"), (2, "b"), (2, "c")]
        assert closed and done
