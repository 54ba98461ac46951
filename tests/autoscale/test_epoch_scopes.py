"""The autoscaler's graph looks through a keyed operator's epoch scope: the Megaphone
operators inside it are top-level operators, records entering the scope are those of the
operator that receives them, records leaving it are those of the operator that sends them,
and the scope itself is judged as nothing. Checked on a hand-built graph and on a real traced
`state_machine` run, whose fold sleeps per record so that `WordCount.S` owns the useful time."""

import time

import pytest
from support.autoscale import traced_run
from timely_py.autoscale import EventWindow, compute_signals
from timely_py.autoscale.graph import EPOCH_SCOPE_PREFIX, Graph, Operator
from timely_py.megaphone import Control

import timely_py as timely

pytestmark = pytest.mark.timeout(120)


def keyed_graph():
    """Input (0, 1) -> Map (0, 2) -> [epoch scope (0, 3): F (0, 3, 1) -> S (0, 3, 2)] -> Probe
    (0, 4), with the children and their channels announced before the scope, as the engine
    announces them."""
    g = Graph()
    g.add_operator(Operator(1, (0, 1), "Input"))
    g.add_operator(Operator(2, (0, 2), "Map"))
    g.add_channel(10, (0,), 1, 0, 2, 0)
    g.add_operator(Operator(3, (0, 3, 1), "WordCount.F"))
    g.add_operator(Operator(4, (0, 3, 2), "WordCount.S"))
    g.add_channel(11, (0, 3), 0, 0, 1, 0)  # entering the scope, to F
    g.add_channel(12, (0, 3), 1, 0, 2, 0)  # F -> S, inside
    g.add_operator(Operator(5, (0, 3), EPOCH_SCOPE_PREFIX + "StateMachine"))
    g.add_operator(Operator(6, (0, 4), "Probe"))
    g.add_channel(13, (0,), 3, 0, 4, 0)  # leaving the scope, to Probe
    return g


def test_the_graph_judges_the_operators_inside_an_epoch_scope():
    g = keyed_graph()
    assert [op.name for op in g.top_level()] == ["Input", "Map", "WordCount.F", "WordCount.S", "Probe"]
    assert g.owner(3) == 3 and g.owner(4) == 4 and g.owner(5) is None
    assert sorted(g.unresolved()) == [(11, 3, True), (13, 6, False)]
    g.resolve(11, 2)
    g.resolve(13, 4)
    assert g.unresolved() == []
    assert [op.name for op in g.topological_order()] == ["Input", "Map", "WordCount.F", "WordCount.S", "Probe"]
    assert [(e.source, e.target) for e in g.inputs(6)] == [(4, 6)]
    assert [(e.source, e.target) for e in g.outputs(3)] == [(3, 4)]


def test_a_scope_of_another_name_stays_one_black_box():
    g = keyed_graph()
    g.add_operator(Operator(5, (0, 3), "Region"))
    names = [op.name for op in Graph.build(list(g.operators.values()), []).top_level()]
    assert names == ["Input", "Map", "Region", "Probe"]


WORDS, EPOCHS, PER_EPOCH, SLEEP = 5, 4, 20, 0.002


def keyed_main(worker):
    """Words of `WORDS` kinds, counted by a `state_machine` whose fold sleeps per record."""
    inp, ctl, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()

    def count(key, value, state):
        time.sleep(SLEEP)
        total = (state or 0) + value
        return total, [(key, total)]

    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=8, name="WordCount")
        scope.input_from(inp).map(lambda x: (f"w{x % WORDS}", 1)).state_machine(control, count).probe_with(probe)
    for epoch in range(EPOCHS):
        if worker.index == 0:
            inp.send_batch(list(range(epoch * PER_EPOCH, (epoch + 1) * PER_EPOCH)))
        inp.advance_to(epoch + 1)
        ctl.advance_to(epoch + 1)
        while probe.less_than(inp.time):
            worker.step_or_park(0.01)
    return None


def test_signals_of_a_traced_state_machine_name_its_stateful_operator():
    _, batches = traced_run(keyed_main, 2)
    window = EventWindow(keep=3600.0)
    for worker, batch in batches:
        window.add(worker, batch)
    first = min(b.column("time_ns")[0].as_py() for _, b in batches if b.num_rows)
    last = max(b.column("time_ns")[-1].as_py() for _, b in batches if b.num_rows)
    signals = compute_signals(window.graph, *window.totals(first, last + 1), first, last + 1, window.workers())
    names = {s.operator.name for s in signals.operators.values()}
    assert "WordCount.S" in names and "WordCount.F" in names, names
    assert not any(name.startswith(EPOCH_SCOPE_PREFIX) for name in names), names
    stateful = signals.by_name("WordCount.S")
    total = EPOCHS * PER_EPOCH
    assert stateful.records_in == total
    assert stateful.records_out == total  # one output per record, out of the scope
    assert stateful.useful_s >= total * SLEEP * 0.9
    # S owns the sleeping: no other operator has half its useful time.
    others = [s.useful_s for s in signals.operators.values() if s.operator.name != "WordCount.S"]
    assert max(others) < stateful.useful_s / 2
