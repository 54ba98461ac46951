"""One key for every keyed operator: every kind of key that `docs/design.md` ("Keys") lists
works in exchange, count_by_key, aggregate, a generic operator's `exchange=` and the
Megaphone operators alike, with its equal forms of other types meeting on one worker; an
object that is not a key fails the run with a `TypeError` naming its type, after everything
sent before it was delivered. (The run on 2 processes, with Megaphone moving the state, is
in `megaphone/test_megaphone_keys.py`.)"""

import pytest
import timely_py as timely
from support.key_kinds import KINDS, NOT_KEYS, check_key_kinds, key_kinds_dataflow, run_until_bad_key


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
