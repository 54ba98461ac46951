"""Megaphone's operators take the one key of every keyed operator (`docs/design.md`, "Keys"):
every kind of key keeps one state per key, whatever the types of its equal forms, and that
state survives moves between workers, in one process and across 2 processes (with every other
keyed operator alongside). The key bytes that move with the state are checked when they are
read back: malformed bytes are a `ValueError`, never a crash."""

import json
import math
import struct

import pytest
import timely_py as timely
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cluster import Cluster
from support.key_kinds import (
    KINDS,
    NOT_KEYS,
    check_key_kinds,
    gather_and_spread,
    key_kinds_dataflow,
    run_until_bad_key,
)
from support.paths import CLUSTER_SCRIPTS as SCRIPTS
from timely_py.megaphone import Control, bin_of

canonical_bytes, from_canonical_bytes = timely._core.key_canonical_bytes, timely._core.key_from_canonical_bytes


@pytest.mark.parametrize("peers", [1, 2, 3])
def test_every_kind_of_key_keeps_one_state_while_its_bin_moves(peers):
    results = timely.execute(lambda worker: key_kinds_dataflow(worker, gather_and_spread(peers)), workers=peers)
    check_key_kinds(results)


def test_every_kind_of_key_keeps_one_state_when_its_bin_moves_between_processes(tmp_path):
    with Cluster(tmp_path, processes=2, workers=2) as cluster:
        cluster.start_all([SCRIPTS / "key_kinds.py"])
        cluster.assert_succeeded()
        lines = [json.loads(line) for index in range(2) for line in cluster.stdout(index).splitlines()]
    assert sorted(line["worker"] for line in lines) == [0, 1, 2, 3]
    results = [None] * 4
    for line in lines:
        worker = line.pop("worker")
        line.pop("peers")
        results[worker] = {name: [tuple(x) for x in seen] for name, seen in line.items()}
    check_key_kinds(results)


def test_equal_keys_of_every_kind_share_a_bin_and_the_logic_gets_the_canonical_key():
    for name, forms in KINDS:
        assert len({bin_of(key, 1024) for key in forms}) == 1, name
    seen = []

    def main(worker):
        data, ctl = timely.InputHandle(), timely.InputHandle()
        with worker.dataflow() as scope:
            control = Control(scope.input_from(ctl), bins=4)
            fold = lambda key, value, state: (state, [(key, value)])  # noqa: E731
            probe = scope.input_from(data).state_machine(control, fold).inspect(seen.append).probe()
        data.send_batch([(True, "bool"), (2.0, "float"), (("a", 1.0), "tuple")])
        data.close()
        ctl.close()
        while not probe.done():
            worker.step()

    timely.execute(main)
    assert sorted(seen, key=repr) == [(("a", 1), "tuple"), (1, "bool"), (2, "float")]
    assert [type(key) for key, _ in sorted(seen, key=repr)] == [tuple, int, int]


def ids_by(operator):
    """`operator` over `(i, key)` records with a control on an empty stream, sending each
    record's id."""

    def build(stream):
        control = Control(stream.filter(lambda _: False), bins=8)
        if operator == "state_machine":
            return stream.map(lambda r: (r[1], r[0])).state_machine(control, lambda k, i, s: (s, [i]))
        logic = lambda key, record, state, context: context.give(record[0])  # noqa: E731
        if operator == "keyed_unary":
            return stream.keyed_unary(control, key=lambda r: r[1], on_record=logic)
        return stream.keyed_binary(stream.filter(lambda _: False), control, key1=lambda r: r[1],
                                   key2=lambda r: r[1], on_first=logic, on_second=logic)

    return build


@pytest.mark.parametrize("operator", ["state_machine", "keyed_unary", "keyed_binary"])
@pytest.mark.parametrize("bad, named", NOT_KEYS)
def test_an_object_that_is_not_a_key_fails_the_run_naming_its_type_and_loses_nothing_before(
    operator, bad, named
):
    seen = []
    with pytest.raises(TypeError, match=f"{operator}: key1?: .* is not a key: {named}.*; keys are None"):
        run_until_bad_key(ids_by(operator), bad, seen)
    assert sorted(seen)[:20] == list(range(20)), "every record of the complete time arrived"


def mutations(encoding):
    """Bytes near `encoding`: one byte changed, cut short, or with bytes after it."""
    at = st.integers(0, len(encoding) - 1)
    return st.one_of(
        st.tuples(at, st.integers(0, 255)).map(lambda p: encoding[: p[0]] + bytes([p[1]]) + encoding[p[0] + 1 :]),
        at.map(lambda n: encoding[:n]),
        st.binary(min_size=1, max_size=4).map(lambda extra: encoding + extra),
    )


def valid_encodings():
    return [canonical_bytes(key) for _, forms in KINDS for key in forms]


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40) | st.sampled_from(valid_encodings()).flatmap(mutations))
def test_key_bytes_that_are_not_canonical_are_refused_never_crash(data):
    try:
        key = from_canonical_bytes(data)
    except ValueError:
        return
    assert canonical_bytes(key) == data, "only canonical bytes decode"


def test_cut_or_padded_key_bytes_are_refused():
    for encoding in valid_encodings():
        for cut in range(len(encoding)):
            with pytest.raises(ValueError, match="malformed key bytes"):
                from_canonical_bytes(encoding[:cut])
        with pytest.raises(ValueError, match="after the key"):
            from_canonical_bytes(encoding + b"\x00")
    def int_(n):
        return b"\x01" + struct.pack("<q", n)

    not_canonical = {
        "an integral float": b"\x03" + struct.pack("<d", 1.0),
        "a NaN float": b"\x03" + struct.pack("<d", math.nan),
        "a big int in 64 bits": b"\x02" + struct.pack("<I", 9) + (1).to_bytes(9, "little", signed=True),
        "a rational not in lowest terms": b"\x05" + int_(2) + int_(6),
        "a rational equal to a float": b"\x05" + int_(1) + int_(4),
        "a complex without imaginary part": b"\x04" + struct.pack("<dd", 1.5, 0.0),
        "an unordered frozenset": b"\x0a" + struct.pack("<I", 2) + int_(2) + int_(1),
        "a frozenset with a repeated element": b"\x0a" + struct.pack("<I", 2) + int_(1) + int_(1),
        "a tuple longer than its bytes": b"\x09" + struct.pack("<I", 2**32 - 1),
        "an unknown tag": b"\x63",
        "invalid UTF-8": b"\x07" + struct.pack("<I", 1) + b"\xff",
    }
    for what, bad in not_canonical.items():
        with pytest.raises(ValueError, match="malformed key bytes"):
            from_canonical_bytes(bad)
            pytest.fail(f"{what} was accepted")
