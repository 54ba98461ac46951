"""`timely_py.megaphone.Controller`: a program's planned table and the moves due at each time
(the Rust crate's `Controller`, bound in `crates/python/src/megaphone/plan.rs`)."""

import pytest
from timely_py.megaphone import Controller, Move, RoutingTable, Strategy


def test_plans_follow_each_other_and_every_move_comes_out_once_in_time_order():
    start = RoutingTable.round_robin(bins=16, peers=2)
    controller = Controller(start)
    assert controller.idle and controller.table == start
    first = controller.rebalance(peers=4, strategy=Strategy.batched(2), earliest=3)
    second = controller.move_to(RoutingTable([3] * 16), Strategy.fluid(), earliest=3)
    assert first == 8 and second == 12
    sent = []
    for time in range(40):
        due = controller.due(time)
        assert all(isinstance(move, Move) for move in due)
        sent += due
    assert controller.idle and len(sent) == first + second
    assert start.apply(sent) == controller.table == RoutingTable([3] * 16)


def test_moves_whose_time_passed_come_out_with_the_current_time():
    controller = Controller(RoutingTable.round_robin(bins=8, peers=1))
    assert controller.rebalance(peers=2, strategy=Strategy.fluid(), earliest=5) == 4
    assert controller.due(4) == []
    assert len(controller.due(7)) == 3, "times 5, 6 and 7"
    assert len(controller.due(100)) == 1 and controller.idle


def test_bad_plans_raise_value_errors_and_change_nothing():
    controller = Controller(RoutingTable.round_robin(bins=8, peers=2))
    with pytest.raises(ValueError, match="Controller.move_to"):
        controller.move_to(RoutingTable([0] * 16))
    with pytest.raises(ValueError, match="Controller.rebalance"):
        controller.rebalance(peers=0)
    assert controller.idle and controller.table == RoutingTable.round_robin(bins=8, peers=2)


def test_next_step_paces_a_plan_one_planned_time_at_a_time():
    controller = Controller(RoutingTable.round_robin(bins=16, peers=2))
    assert controller.next_step() == []
    assert controller.rebalance(peers=4, strategy=Strategy.batched(1), earliest=50) == 8
    steps = []
    while not controller.idle:
        steps.append(controller.next_step())
    assert [len(step) for step in steps] == [2, 2, 2, 2], "one move per sending worker and step"
    assert RoutingTable.round_robin(bins=16, peers=2).apply(sum(steps, [])) == controller.table
