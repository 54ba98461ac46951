"""One key for every keyed operator: every kind of key that `docs/design.md` ("Keys") lists
works in exchange, count_by_key, aggregate, a generic operator's `exchange=` and the
Megaphone operators alike, with its equal forms of other types meeting on one worker; an
object that is not a key fails the run with a `TypeError` naming its type, after everything
sent before it was delivered. (The run on 2 processes, with Megaphone moving the state, is
in `megaphone/test_megaphone_keys.py`.)"""

from dataclasses import dataclass

import pytest
import timely_py as timely
from support.key_kinds import KINDS, check_key_kinds, key_kinds_dataflow


@pytest.mark.parametrize("peers", [1, 3])
def test_every_kind_of_key_works_in_every_keyed_operator(peers):
    check_key_kinds(timely.execute(key_kinds_dataflow, workers=peers))


def test_equal_keys_of_every_kind_have_one_canonical_form_and_route_alike():
    for name, forms in KINDS:
        canonical = {timely._core.key_canonical_bytes(key) for key in forms}
        assert len(canonical) == 1, f"{name}: {forms!r}"
        value = timely._core.key_from_canonical_bytes(canonical.pop())
        assert value == forms[0], f"{name}: the key comes back as {value!r}"
        for peers in (2, 3, 64):
            assert len({timely.route_key(key, peers) for key in forms}) == 1, name
    forms = [timely._core.key_canonical_bytes(forms[0]) for _, forms in KINDS]
    assert len(set(forms)) == len(forms), "keys of different kinds stay apart"


@dataclass(frozen=True)
class Customer:
    """Hashable, but not a key: the hash of its str field differs between processes."""

    name: str


NOT_KEYS = [
    ([1, 2], "unhashable type: 'list'"),
    ({"a": 1}, "unhashable type: 'dict'"),
    ((1, {2}), "unhashable type: 'set'"),
    (Customer("ann"), "type 'Customer' is not a key type"),
    (object(), "type 'object' is not a key type"),
]


def run_until_bad_key(build, bad, seen):
    """Feeds `(i, key)` records through `build(stream)` on 2 workers: good keys at time 0
    (waited for), then `bad` at time 1; what arrives is appended to `seen`."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            build(scope.input_from(inp)).inspect(seen.append).probe_with(probe)
        if worker.index == 0:
            inp.send_batch([(i, f"k{i}") for i in range(20)])
        inp.advance_to(1)
        while probe.less_than(1):
            worker.step()
        if worker.index == 0:
            inp.send_batch([(20, "k20"), (21, bad), (22, "k22")])
        inp.close()
        while not probe.done():
            worker.step()

    timely.execute(main, workers=2)


OPERATORS = {
    "exchange": lambda s: s.exchange(lambda r: r[1]).map(lambda r: r[0]),
    "count_by_key": lambda s: s.count_by_key(lambda r: r[1]).map(lambda kn: int(kn[0][1:])),
    "aggregate": lambda s: s.aggregate(lambda r: r[1], lambda acc, r: r[0], lambda: None),
}


@pytest.mark.parametrize("operator", sorted(OPERATORS))
@pytest.mark.parametrize("bad, named", NOT_KEYS)
def test_an_object_that_is_not_a_key_fails_the_run_naming_its_type_and_loses_nothing_before(
    operator, bad, named
):
    seen = []
    with pytest.raises(TypeError, match=f": key: .* is not a key: {named}.*; keys are None, bool, int"):
        run_until_bad_key(OPERATORS[operator], bad, seen)
    assert sorted(x if isinstance(x, int) else x[1] for x in seen)[:20] == list(range(20)), (
        "every record of the complete time arrived"
    )


def test_route_key_names_the_type_of_what_is_not_a_key():
    for bad, named in NOT_KEYS:
        with pytest.raises(TypeError, match=f"route_key: .* is not a key: {named}"):
            timely.route_key(bad, 3)
