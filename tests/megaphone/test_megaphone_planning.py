"""Planning migrations from Python (`timely_py.megaphone`): each strategy reaches its target
moving only the bins whose owner differs, batches respect `per_worker`, `rebalance` is even
and minimal, routing tables replay commands, and the module's documented examples run."""

import doctest
from collections import Counter

import pytest
import timely_py.megaphone as megaphone
from timely_py.megaphone import Move, RoutingTable, Strategy, bin_of, plan, rebalance


def test_the_documented_examples_run():
    failures, tried = doctest.testmod(megaphone)
    assert tried >= 18 and failures == 0


@pytest.mark.parametrize("strategy", [Strategy.all_at_once(), Strategy.fluid(), Strategy.batched(2)])
def test_every_strategy_reaches_its_target_moving_only_differing_bins(strategy):
    current = RoutingTable.round_robin(64, 4)
    target = RoutingTable([(b * 7) % 3 for b in range(64)])
    commands = plan(current, target, strategy, start=10)
    differing = {b for b in range(64) if current.owners[b] != target.owners[b]}
    assert sorted(move.bin for _, move in commands) == sorted(differing)
    assert current.apply(commands) == target
    times = [t for t, _ in commands]
    assert times == sorted(times) and times[0] == 10
    per_time = Counter(times)
    if strategy.kind == "all_at_once":
        assert set(times) == {10}
    elif strategy.kind == "fluid":
        assert times == list(range(10, 10 + len(differing)))
    else:
        for time in per_time:
            moves = [(current.owners[m.bin], m.worker) for t, m in commands if t == time]
            assert max(Counter(f for f, _ in moves).values()) <= 2, "a worker sends at most 2"
            assert max(Counter(w for _, w in moves).values()) <= 2, "a worker receives at most 2"


def test_rebalance_spreads_bins_evenly_and_moves_only_what_the_new_workers_need():
    current = RoutingTable.round_robin(256, 2)
    commands = rebalance(current, 3, Strategy.fluid(), start=4)
    table = current.apply(commands)
    assert sorted(table.loads(3)) == [85, 85, 86]
    assert len(commands) == 85, "exactly the new worker's share moves"
    assert {move.worker for _, move in commands} == {2}
    assert rebalance(table, 3) == [], "an even table stays"


def test_keys_fall_in_stable_bins_and_tables_say_their_owner():
    assert bin_of("apple", 256) == bin_of("apple", 256)
    assert bin_of(("a", 1), 2**20) != bin_of(("a", 2), 2**20)
    bins = Counter(bin_of(f"key{i}", 16) for i in range(16_000))
    assert len(bins) == 16 and min(bins.values()) > 800, "keys spread over every bin"
    table = RoutingTable([3] * 16)
    assert table.owner("anything") == 3
    assert RoutingTable.round_robin(4, 3).apply([Move(0, 2), (1, (3, 0))]).owners == (2, 1, 2, 0)
