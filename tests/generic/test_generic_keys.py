"""The generic operators' `exchange=` takes the one key of every keyed operator
(`docs/design.md`, "Keys"): on each input of `binary` and `unary_notify`, every kind of key
goes to the worker `route_key` names, so that equal keys of different types, arriving on
different inputs, meet; an object that is not a key fails the run with a `TypeError` naming
its type and the operator's input."""

from collections import defaultdict

import pytest
import timely_py as timely
from support.generic import drop_capability, run, step_until
from support.key_kinds import KINDS


def joined(worker, firsts, seconds):
    """Feeds `(kind, key)` records to the two inputs of a `binary` exchanged by key on both;
    returns `(input, worker, kind)` for every record."""
    left, right, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
    out = []

    def logic(input1, input2, output):
        for _cap, records in input1:
            out.extend(("first", worker.index, kind) for kind, _ in records)
        for _cap, records in input2:
            out.extend(("second", worker.index, kind) for kind, _ in records)

    with worker.dataflow() as scope:
        a, b = scope.input_from(left), scope.input_from(right)
        key = lambda record: record[1]  # noqa: E731
        a.binary(b, drop_capability(logic), name="Meet", exchange1=key, exchange2=key).probe_with(probe)
    if worker.index == 0:
        left.send_batch(firsts)
        right.send_batch(seconds)
    left.close()
    right.close()
    step_until(worker, lambda: not probe.done())
    return out


@pytest.mark.parametrize("peers", [2, 3])
def test_equal_keys_of_every_kind_meet_across_the_inputs_of_binary(peers):
    firsts = [(kind, forms[0]) for kind, (_, forms) in enumerate(KINDS)]
    seconds = [(kind, form) for kind, (_, forms) in enumerate(KINDS) for form in forms[1:] or forms]
    workers = defaultdict(set)
    seen = [record for out in run(lambda worker: joined(worker, firsts, seconds), peers) for record in out]
    assert len(seen) == len(firsts) + len(seconds), "every record once"
    for _, worker, kind in seen:
        workers[kind].add(worker)
    for kind, (name, forms) in enumerate(KINDS):
        assert workers[kind] == {timely.route_key(forms[0], peers)}, f"{name}: on workers {workers[kind]}"


def test_unary_notify_counts_every_kind_of_key_on_one_worker():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        counts = defaultdict(int)

        def logic(input, output, notificator):
            for cap, records in input:
                for kind, _key in records:
                    counts[kind] += 1
                notificator.notify_at(cap.retain())
            for _cap, _count in notificator.items():
                pass

        with worker.dataflow() as scope:
            scope.input_from(inp).unary_notify(logic, name="Count", exchange=lambda r: r[1]).probe_with(probe)
        records = [(kind, form) for kind, (_, forms) in enumerate(KINDS) for form in forms]
        inp.send_batch(records[worker.index :: worker.peers])
        inp.close()
        step_until(worker, lambda: not probe.done())
        return dict(counts)

    results = run(main, 3)
    for kind, (name, forms) in enumerate(KINDS):
        holders = [w for w, counts in enumerate(results) if kind in counts]
        assert len(holders) == 1, f"{name}: counted on workers {holders}"
        assert results[holders[0]][kind] == len(forms)


@pytest.mark.parametrize(
    "bad, named", [([1], "unhashable type: 'list'"), (object(), "type 'object' is not a key type")]
)
def test_an_object_that_is_not_a_key_fails_the_run_naming_its_type_and_the_input(bad, named):
    with pytest.raises(TypeError, match=f"Meet.exchange1: key: .* is not a key: {named}") as raised:
        run(lambda worker: joined(worker, [(0, "fine"), (1, bad)], [(0, "fine")]), 2)
    assert "raised in operator 'Meet.exchange1'" in str(raised.value.__notes__)
