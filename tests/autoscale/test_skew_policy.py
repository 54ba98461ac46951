"""The policy under skew, on hand-built signal windows (no dataflow runs), worked out by hand.

A keyed operator `WordCount.S` (the stateful half of a Megaphone `Control` named
"WordCount") on 2 processes of 1 worker, 8 bins, round-robin (bin b on worker b % 2), is
fed by `Input`. Over a 2 s window it received 600 records in 3.0 s of useful time: one
instance's true rate is 200 records/s. Target 0.7, band 0.49-0.85; a bin needs a worker of
its own from 0.7 x 200 = 140 records/s on.

* Hot, but a layout fits: 300 records/s offered, bin 1 gets 150 of them, the other seven
  150 / 7 = 21.4 each. Pooled (DS2 as is), 300 / (200 x 2) = 0.75, within the band: stay,
  while worker 1 holds 150 + 3 x 21.4 = 214 records/s, utilisation 1.07, and falls behind.
  Moving worker 1's three cold bins to worker 0 leaves 150 on each (0.75): rebalance.
* A bin no process can help: 360 offered, bin 1 gets 240 (1.2 instances: it alone
  overloads any worker), the others 120 / 7. Pooled, 360 / 400 = 0.90 > 0.85 and 360 /
  140 = 2.6 instances: scale out to 3. But the bins can use 1 (bin 1) + 120 / 140 = 1.86
  instances, 2 processes: a third process would take cold bins off a worker that is not
  the bottleneck. The policy keeps 2 and moves the cold bins off bin 1's worker (1.46 ->
  1.2, the best any layout does; the other worker is then at 120 / 200 = 0.6).
* After that move, with the true rate fallen to 150 records/s (a loaded machine), bin 1
  alone is at 1.6 and the other worker at 0.8: still no process (the others are within
  the band). At 120 records/s the others are at 1.0: then a third process helps them.
* Load that is spread: 500 offered evenly (62.5 per bin, no hot bin): the bins need
  500 / 140 = 3.6 instances, as pooled: scale out to 4.
"""

import pytest
from timely_py.autoscale import Policy, Settings
from timely_py.autoscale.bins import BinLoad, balance
from timely_py.autoscale.testing import signals_of

pytestmark = pytest.mark.timeout(30)

TWO = dict(processes=2, workers_per_process=1, members=[0, 1])
ROUND_ROBIN = (0, 1, 0, 1, 0, 1, 0, 1)


def window():
    return signals_of(["Input", "WordCount.S"], edges=[("Input", "WordCount.S", 1.0)], window_s=2.0,
                      records_in={"WordCount.S": 600}, records_out={"Input": 600},
                      useful_s={"WordCount.S": 3.0, "Input": 0.05}, workers=[0, 1])


def hot_bin(total, hot):
    cold = (total - hot) / 7
    return BinLoad("WordCount", ROUND_ROBIN, tuple(hot if b == 1 else cold for b in range(8)))


def decide(offered, bins=None):
    policy = Policy(Settings(min_processes=1, max_processes=4))
    return policy.decide(window(), offered={"Input": offered}, bins=bins, **TWO)


def test_a_hot_worker_that_a_layout_fixes_gets_its_bins_moved_not_a_process():
    pooled = decide(300)
    assert pooled.action == "stay" and pooled.bottleneck.utilisation == pytest.approx(0.75)
    decision = decide(300, hot_bin(300, 150))
    assert decision.action == "rebalance" and decision.desired == decision.current == 2
    assert decision.layout == (0, 1, 0, 0, 0, 0, 0, 0)  # worker 1 keeps the hot bin alone
    assert "hottest worker 1 is at utilisation 1.07" in decision.reason
    assert "brings it to 0.75" in decision.reason and "moving 3 bins" in decision.reason


def test_a_bin_too_hot_for_any_worker_adds_no_process_it_cannot_use():
    pooled = decide(360)
    assert pooled.action == "scale_out" and pooled.desired == 3
    bins = hot_bin(360, 240)
    assert bins.hot_bins(200.0, 0.7) == [1]
    assert bins.instances_needed(200.0, 0.7) == pytest.approx(1 + 120 / 140)
    decision = decide(360, bins)
    assert decision.desired == 2, decision.reason
    assert decision.action == "rebalance" and decision.layout == (0, 1, 0, 0, 0, 0, 0, 0)
    assert "bin 1 needs a worker each and cannot be split" in decision.reason
    assert "leaves one bin alone at 1.20" in decision.reason and "the others at most 0.60" in decision.reason


def slower_window(true_rate):
    return signals_of(["Input", "WordCount.S"], edges=[("Input", "WordCount.S", 1.0)], window_s=2.0,
                      records_in={"WordCount.S": 600}, records_out={"Input": 600},
                      useful_s={"WordCount.S": 600 / true_rate, "Input": 0.05}, workers=[0, 1])


def test_once_the_hot_bin_is_alone_only_the_other_workers_load_can_add_a_process():
    moved = BinLoad("WordCount", (0, 1, 0, 0, 0, 0, 0, 0), hot_bin(360, 240).rates)
    policy = Policy(Settings(min_processes=1, max_processes=4))
    stay = policy.decide(slower_window(150.0), offered={"Input": 360}, bins=moved, **TWO)
    assert (stay.action, stay.desired, stay.layout) == ("stay", 2, None), stay.reason
    assert "more processes would not help" in stay.reason and "the others are at most 0.80" in stay.reason
    grow = policy.decide(slower_window(120.0), offered={"Input": 360}, bins=moved, **TWO)
    assert (grow.action, grow.desired) == ("scale_out", 3), grow.reason
    assert "more than one bin are at up to 1.00" in grow.reason


def test_spread_load_scales_out_as_without_bins():
    even = BinLoad("WordCount", ROUND_ROBIN, (62.5,) * 8)
    pooled, decision = decide(500), decide(500, even)
    assert pooled.action == decision.action == "scale_out"
    assert pooled.desired == decision.desired == 4
    assert decision.layout is None and "can use 4 processes" in decision.reason


def test_light_load_scales_in_by_the_bins():
    decision = decide(60, BinLoad("WordCount", ROUND_ROBIN, (7.5,) * 8))
    assert decision.action == "scale_in" and decision.desired == 1


def test_bins_of_another_operator_change_nothing():
    other = BinLoad("Sessions", ROUND_ROBIN, hot_bin(300, 150).rates)
    pooled, decision = decide(300), decide(300, other)
    assert (decision.action, decision.desired, decision.layout) == (pooled.action, pooled.desired, None)


def test_metrics_only_still_says_rebalance_and_the_dict_has_the_layout():
    policy = Policy(Settings(min_processes=1, max_processes=4, metrics_only=True))
    decision = policy.decide(window(), offered={"Input": 300}, bins=hot_bin(300, 150), **TWO)
    assert decision.action == "rebalance" and "(metrics only: not done)" in decision.explain()
    assert decision.to_dict()["layout"] == [0, 1, 0, 0, 0, 0, 0, 0]


def test_balance_hands_the_bins_of_a_worker_gone_to_the_lightest_and_never_splits_a_bin():
    # Worker 2 left: its bins go to the lightest member; the hot bin 0 stays alone on 0.
    assert balance((0, 1, 2, 2), (100.0, 10.0, 10.0, 10.0), [0, 1]) == (0, 1, 1, 1)
    # Nothing to gain: one bin per worker stays where it is.
    assert balance((0, 1), (500.0, 1.0), [0, 1]) == (0, 1)
    with pytest.raises(ValueError):
        balance((0, 1), (1.0, 1.0), [])
    with pytest.raises(ValueError):
        BinLoad("X", (0, 1), (1.0,))


class FakeControl:
    """What keep_balanced needs of a control input handle."""

    time = 0

    def send_batch(self, moves):
        raise AssertionError("nothing is sent in this test")


def test_offer_bins_needs_the_keyed_state_and_one_rate_per_bin():
    from timely_py.autoscale import AutoscaleError, Autoscaler
    from timely_py.megaphone import Controller, RoutingTable

    scaler = Autoscaler(Settings(min_processes=1, max_processes=4), processes=2, workers_per_process=1)
    with pytest.raises(AutoscaleError, match="keep_balanced"):
        scaler.offer_bins("WordCount", [1.0] * 8)
    controller = Controller(RoutingTable.round_robin(8, 2))
    scaler.keep_balanced(controller, FakeControl())
    with pytest.raises(AutoscaleError, match="7 rates for 8 bins"):
        scaler.offer_bins("WordCount", [1.0] * 7)
    scaler.offer_bins("WordCount", [10.0] * 8)
    load = scaler.bin_load()
    assert load.operator == "WordCount" and load.owners == ROUND_ROBIN and load.rates == (10.0,) * 8
    scaler.offer_bins("WordCount", None)
    assert scaler.bin_load() is None


def test_balance_evens_the_other_workers_when_the_hottest_is_one_bin():
    # After a join: bin 1 (210/s) alone on worker 1, the 15 cold bins (6/s) on worker 0,
    # worker 2 new and empty: the hot worker has nothing to give, worker 0 gives worker 2 half.
    owners = tuple(1 if b == 1 else 0 for b in range(16))
    rates = tuple(210.0 if b == 1 else 6.0 for b in range(16))
    layout = balance(owners, rates, [0, 1, 2])
    assert layout[1] == 1 and [layout.count(w) for w in (0, 1, 2)] in ([8, 1, 7], [7, 1, 8])
