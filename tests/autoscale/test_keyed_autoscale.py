"""The autoscaler keeps Megaphone keyed state balanced across its own joins and leaves
(`Autoscaler.keep_balanced`), under the launcher: a word count whose fold waits 5 ms per
record (a remote call per key: only a bin's owner can make it) cannot keep up with 400
records/s on 2 processes of 1 worker, so the autoscaler adds a third process and moves its
share of the bins to it; when the rate steps down to 80 records/s it moves process 2's bins
off it and only then asks for its leave. Every word's counts are exactly those of a
sequential count, the joined worker counted words, and it held bins until the evacuation.
When the leave fails after the evacuation, the bins are spread over the three workers again
(the low rate goes on until they are, on a loaded machine)."""

import re
from collections import Counter

import pytest
from support.cluster import write_hostfile
from support.launched import Launched

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(180)]

SCRIPT = "tests/autoscale/scripts/keyed_autoscaled.py"
WORDS = 40  # as in the script


def counted(out):
    """`{word: [counts in the order printed]}` and `{worker: folds}` from the fold lines."""
    counts, by_worker = {}, Counter()
    for worker, word, n in re.findall(r"^\[\d+\] worker (\d+): counted (\w+) (\d+)$", out, re.M):
        counts.setdefault(word, []).append(int(n))
        by_worker[int(worker)] += 1
    return counts, by_worker


def bins_lines(out):
    """`(bins per worker, time in s)` of each `worker 0: bins [...] after M moves` line."""
    return [([int(b) for b in loads.split(", ")], float(at)) for loads, at in
            re.findall(r"^\[0\] worker 0: bins \[([\d, ]+)\] after \d+ moves, epoch \d+, ([\d.]+) s$", out, re.M)]


def assert_exact(out, sent):
    """Every word's counts are 1..n, each once, n its count among the `sent` records; returns
    the folds per worker."""
    reference = Counter(f"w{x % WORDS}" for x in range(sent))
    counts, by_worker = counted(out)
    assert {word: sorted(ns) for word, ns in counts.items()} == \
        {word: list(range(1, n + 1)) for word, n in reference.items()}
    return by_worker


def test_bins_follow_the_autoscalers_joins_and_leaves_and_counts_stay_exact(tmp_path):
    hostfile, _ = write_hostfile(tmp_path, 3)
    with Launched(tmp_path, "-n", 2, "--hostfile", hostfile, "--max-processes", 3,
                  SCRIPT, 400, 6, 80, 9, 0.005, 2, 3) as run:
        assert run.status(timeout=150) == 0, run.out()[-3000:] + run.err()
    out, err = run.out(), run.err()
    scale_out = out.find("[0] autoscale: scale out from 2 to 3 processes: WordCount.S#")
    scale_in = out.find("[0] autoscale: scale in from 3 to 2 processes: WordCount.S#")
    assert 0 <= scale_out < scale_in, out[-3000:]
    evacuation = re.search(r"^\[0\]   \|   outcome: started: (\d+) bins move off processes \[2\] first$", out, re.M)
    assert evacuation and int(evacuation.group(1)) > 0, out[-3000:]
    assert "[launch] process 2 left the cluster" in err

    sent = int(re.search(r"^\[0\] worker 0: done, (\d+) records, 2 actions, 2 processes$", out, re.M).group(1))
    by_worker = assert_exact(out, sent)

    # The joined worker got bins after the join, counted with them, and gave them back before
    # its process left; the bins ended even over the workers present.
    assert by_worker[2] > 0, "the joined worker counted nothing: it never got bins"
    tables = bins_lines(out)
    assert tables, out[-3000:]
    after_join = tables[0][0]
    assert len(after_join) == 3 and min(after_join) >= 10, tables
    last, evacuated_at = tables[-1]
    assert last[2] == 0 and sorted(last[:2]) == [16, 16], tables
    left_at = float(re.search(r"^\[0\] worker 0: epoch \d+, workers present \[0, 1\], ([\d.]+) s$", out, re.M).group(1))
    assert evacuated_at <= left_at, "the leave happened before the bins were moved off"


def test_a_refused_leave_spreads_the_evacuated_bins_again(tmp_path):
    hostfile, _ = write_hostfile(tmp_path, 3)
    with Launched(tmp_path, "-n", 2, "--hostfile", hostfile, "--max-processes", 3,
                  SCRIPT, 400, 6, 80, 9, 0.005, 2, 3, "refuse") as run:
        assert run.status(timeout=150) == 0, run.out()[-3000:] + run.err()
    out, err = run.out(), run.err()
    # (Printed when it happens: the autoscaler may try again, which clears its last failure.)
    assert "[0] worker 0: refused: scale_in failed: this test refuses to remove process 2" in out, out[-3000:]
    assert "left the cluster" not in err
    done = re.search(r"^\[0\] worker 0: done, (\d+) records, (\d+) actions, 3 processes$", out, re.M)
    assert done and int(done.group(2)) >= 2, out[-3000:]
    assert_exact(out, int(done.group(1)))
    tables = [loads for loads, _ in bins_lines(out)]
    evacuated = tables.index([16, 16, 0])
    assert evacuated > 0 and sorted(tables[evacuated + 1]) == [10, 11, 11], tables


@pytest.mark.timeout(30)
def test_keep_balanced_checks_what_it_is_given_and_needs_the_ticking_worker():
    from timely_py import autoscale
    from timely_py.megaphone import Controller, RoutingTable, Strategy
    import timely_py as timely

    scaler = autoscale.Autoscaler(autoscale.Settings(), processes=1, workers_per_process=1,
                                  actuator=autoscale.RecordingActuator())
    controller = Controller(RoutingTable.round_robin(8, 1))
    with pytest.raises(TypeError, match="keep_balanced: controller must be a timely_py.megaphone.Controller"):
        scaler.keep_balanced(RoutingTable.round_robin(8, 1), timely.InputHandle())
    with pytest.raises(TypeError, match="keep_balanced: control must be the control stream's InputHandle"):
        scaler.keep_balanced(controller, [])
    with pytest.raises(TypeError, match="keep_balanced: strategy must be a timely_py.megaphone.Strategy"):
        scaler.keep_balanced(controller, timely.InputHandle(), strategy="batched")
    with scaler.keep_balanced(controller, timely.InputHandle(), strategy=Strategy.fluid()) as state:
        assert state.strategy == Strategy.fluid() and not state.released
        with pytest.raises(autoscale.AutoscaleError, match=r"needs tick\(worker\)"):
            scaler.tick()
    assert state.released and state.send() == 0


def paced_run(with_probe):
    """2 workers in one process count words with a Megaphone `state_machine`; worker 0's
    `KeyedState` sends a plan that gathers every bin on worker 0 (batched(2): 4 steps). The
    workers step only every other epoch, so a probe is behind every other time. Returns the
    steps sent, whether the state ended done, and every (word, count) output."""
    import timely_py as timely
    from timely_py import autoscale
    from timely_py.megaphone import Control, Controller, RoutingTable, Strategy

    def main(worker):
        data, ctl, probe, outputs = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle(), []
        with worker.dataflow() as scope:
            control = Control(scope.input_from(ctl), bins=16)
            (scope.input_from(data)
             .state_machine(control, lambda w, n, c: ((c or 0) + n, [(w, (c or 0) + n)]))
             .inspect(outputs.append).probe_with(probe))
        controller = Controller(RoutingTable.round_robin(16, 2))
        controller.move_to(RoutingTable([0] * 16), Strategy.batched(2))
        with autoscale.KeyedState(controller, ctl, Strategy.batched(2), probe if with_probe else None) as state:
            for epoch in range(12):
                data.send_batch([(f"w{i}", 1) for i in range(epoch % 5 + 3)])
                if worker.index == 0:
                    state.send()
                data.advance_to(epoch + 1)
                ctl.advance_to(epoch + 1)
                while epoch % 2 and probe.less_than(epoch + 1):
                    worker.step()
            steps, done = list(state.steps), state.done
        data.close()
        ctl.close()
        while worker.step():
            pass
        return steps, done, outputs

    return timely.execute(main, workers=2)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("with_probe", [False, True])
def test_keyed_moves_go_one_step_per_time_and_with_a_probe_once_the_last_is_complete(with_probe):
    results = paced_run(with_probe)
    steps, done, _ = results[0]
    # Without a probe, one step per control time; with one, a step waits until the probe has
    # passed the previous step's time, which happens only after the odd epochs' stepping.
    assert [t for t, _ in steps] == ([0, 2, 4, 6] if with_probe else [0, 1, 2, 3])
    assert [n for _, n in steps] == [2, 2, 2, 2] and done
    # Exact: each word's counts are 1..n, n its count over the 12 epochs, on both workers.
    fed = {}
    for epoch in range(12):
        for i in range(epoch % 5 + 3):
            fed[f"w{i}"] = fed.get(f"w{i}", 0) + 2
    got = {}
    for _, _, outputs in results:
        for word, count in outputs:
            got.setdefault(word, []).append(count)
    assert {w: sorted(c) for w, c in got.items()} == {w: list(range(1, n + 1)) for w, n in fed.items()}
    # The last outputs (after every move) all came from worker 0.
    assert not [o for o in results[1][2] if o[1] == fed[o[0]]], "worker 1 still counted at the end"
