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


def test_rebalance_over_the_members_leaves_departed_workers_without_bins():
    # Worker 1 left (its index stays in use); workers 0, 2 and 3 are present.
    controller = Controller(RoutingTable.round_robin(bins=16, peers=4))
    moved = controller.rebalance(peers=[0, 2, 3], strategy=Strategy.all_at_once())
    assert moved == 4, "only worker 1's bins move"
    assert controller.table.loads(peers=4) == [6, 0, 5, 5]


def test_evacuate_moves_only_the_leaving_workers_bins_to_the_least_loaded_members():
    controller = Controller(RoutingTable([0, 0, 0, 1, 2, 2, 2, 3]))
    assert controller.evacuate(leaving=[2], members=[0, 1, 2, 3], strategy=Strategy.batched(1), earliest=7) == 3
    assert controller.table == RoutingTable([0, 0, 0, 1, 1, 3, 1, 3]), "to the fewest bins, lowest index first"
    assert [controller.due(t) for t in (7, 8, 9)] == [[Move(4, 1)], [Move(5, 3)], [Move(6, 1)]], "one a step"
    assert controller.idle
    # Nothing left to move; bins of a worker that is not a member (3) move too.
    assert controller.evacuate(leaving=[2], members=[0, 1, 3]) == 0
    assert controller.evacuate(leaving=[2], members=[0, 1]) == 2 and 3 not in controller.table.owners
    planned = controller.table
    with pytest.raises(ValueError, match="Controller.evacuate: there are no workers"):
        controller.evacuate(leaving=[0, 1], members=[0, 1])
    assert controller.table == planned, "a refused plan changes nothing"
