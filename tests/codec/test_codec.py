"""The record codec (`timely_py.codec`): round trips of every built-in type and of pickled
objects, exact type preservation, the key table, nesting limits, unpicklable objects, and the
format as documented. Malformed input is in `test_codec_malformed.py`. Format: `docs/codec.md`."""

import collections
import doctest
import math
import pickle
import random
import struct
import sys
import threading

import pytest
import timely_py
from support.codec import (
    BIG_NEG,
    BIG_POS,
    BYTES,
    DICT,
    FALSE,
    FLOAT,
    INT,
    KEY,
    KEY_REF,
    LIST,
    NONE,
    PICKLED,
    STR,
    TRUE,
    TUPLE,
    VERSION,
    Color,
    Point,
    batch,
    varint,
)
from timely_py import codec
from timely_py.codec import CodecError

MAX_DEPTH = 64
MAX_KEYS = 4096


def round_trip(records, **kwargs):
    return codec.decode(codec.encode(records), **kwargs)


def same(a, b):
    """Deep equality that also requires exact types, tells -0.0 from 0.0 and NaN == NaN."""
    assert type(a) is type(b), (a, b)
    if type(a) is float:
        if math.isnan(a):
            assert math.isnan(b)
        else:
            assert a == b and math.copysign(1.0, a) == math.copysign(1.0, b), (a, b)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b), (a, b)
        for key in a:
            same(a[key], b[key])
        if isinstance(a, collections.defaultdict):
            assert a.default_factory is b.default_factory
    else:
        assert a == b, (a, b)


def check_round_trip(records):
    decoded = round_trip(records)
    same(decoded, list(records))
    return decoded


# More types that must go through pickle (`Color` and `Point` are in codec_helpers.py).


Pair = collections.namedtuple("Pair", "key value")


class Text(str):
    pass


class Number(int):
    pass


# --- round trips of built-in types ---------------------------------------------------------

INTS = [
    0, 1, -1, 63, -64, 64, -65, 127, 128, 255, 256, -256, 2**31 - 1, -(2**31), 2**32,
    2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**64 - 1, 2**64, -(2**64), 2**64 + 1,
    2**127, -(2**128) + 1, 10**500, -(10**500), 2**4096 - 1,
]


@pytest.mark.parametrize("value", INTS, ids=lambda v: f"int{v.bit_length()}{'n' if v < 0 else ''}")
def test_ints_round_trip_exactly(value):
    (decoded,) = check_round_trip([value])
    assert decoded == value


def test_random_ints_of_every_size():
    rng = random.Random(7)
    values = []
    for bits in range(0, 300):
        for _ in range(3):
            n = rng.getrandbits(bits) if bits else 0
            values.extend([n, -n, n - 1, -n - 1])
    check_round_trip(values)


def test_bool_stays_bool_and_int_stays_int():
    decoded = check_round_trip([True, 1, False, 0, [True, 1], {True: 0, 2: False}])
    assert [type(x) for x in decoded[:4]] == [bool, int, bool, int]
    assert decoded[0] is True and decoded[2] is False


FLOATS = [0.0, -0.0, 1.5, -2.25, math.inf, -math.inf, 5e-324, sys.float_info.max, sys.float_info.min, 0.1]


def test_floats_round_trip_bit_for_bit():
    decoded = check_round_trip(FLOATS + [math.nan])
    for a, b in zip(FLOATS, decoded):
        assert struct.pack("<d", a) == struct.pack("<d", b)
    assert math.isnan(decoded[-1])
    assert math.copysign(1.0, decoded[1]) == -1.0


STRS = ["", "a", "hello world", "é", "日本語", "😀 astral \U0010ffff", "\x00nul", "x" * 100_000]


def test_strs_round_trip():
    check_round_trip(STRS)


def test_strs_with_lone_surrogates_round_trip_through_pickle():
    values = ["\ud800", "a\udfffb", "\udc80" * 3, ["ok", "\ud83d"]]
    check_round_trip(values)
    with pytest.raises(CodecError, match="allow_pickle"):
        codec.decode(codec.encode(["\ud800"]), allow_pickle=False)


def test_bytes_round_trip():
    check_round_trip([b"", b"\x00", bytes(range(256)), b"\xff" * 70_000])


def test_none_and_empty_containers():
    check_round_trip([None, (), [], {}, "", b"", ((),), [[]], {(): ()}])


def test_nested_containers_and_dicts_with_tuple_keys():
    records = [
        (1, "a", [2.5, None, {"k": (b"v", [True])}]),
        {(1, 2): "pair", ("a", (None, b"x")): [1, 2], 3: {4: {5: ()}}, None: 0, 2.5: -1, -(10**30): "big"},
        [[[]], [()], ({},)],
        {"": [], "nested": {"deeper": {"deepest": [1, [2, [3]]]}}},
    ]
    check_round_trip(records)


def test_dict_order_is_kept():
    d = {k: i for i, k in enumerate(["z", "a", "m", "b"])}
    (decoded,) = check_round_trip([d])
    assert list(decoded) == ["z", "a", "m", "b"]


def test_empty_batch_and_big_batch():
    assert codec.decode(codec.encode([])) == []
    check_round_trip(list(range(100_000)))


def test_built_in_types_use_no_pickle():
    records = INTS + FLOATS + STRS + [None, True, False, b"x", (1, [2, {3: 4}]), {(1, "a"): [b""]}]
    same(codec.decode(codec.encode(records), allow_pickle=False), records)


def test_encode_takes_any_iterable_and_decode_any_bytes_like():
    data = codec.encode(x for x in (1, "b"))
    assert data == codec.encode([1, "b"]) == codec.encode((1, "b"))
    assert codec.decode(bytearray(data)) == codec.decode(memoryview(data)) == [1, "b"]


def test_identity_is_not_preserved_but_sharing_is_harmless():
    shared = [1, 2]
    a, b = round_trip([shared, shared])
    assert a == b == shared and a is not b


def test_random_nested_batches_round_trip():
    rng = random.Random(2024)
    for _ in range(300):
        check_round_trip([random_value(rng, 0) for _ in range(rng.randrange(0, 20))])


def random_value(rng, depth):
    choice = rng.randrange(16 if depth < 4 else 9)
    if choice == 0:
        return None
    if choice == 1:
        return rng.random() < 0.5
    if choice == 2:
        return rng.getrandbits(rng.choice([3, 30, 63, 64, 65, 200])) * rng.choice([1, -1])
    if choice == 3:
        return rng.choice([rng.uniform(-1e9, 1e9), -0.0, math.inf, math.nan])
    if choice == 4:
        return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0xD800), rng.randrange(0x10000, 0x110000)])) for _ in range(rng.randrange(12)))
    if choice == 5:
        return rng.randbytes(rng.randrange(12))
    if choice == 6:
        return Color(rng.choice([1, 2]))
    if choice == 7:
        return Point(rng.randrange(10), "p")
    if choice == 8:
        return rng.choice(["\ud800x", Text("t"), Number(5), frozenset({1, 2}), 3 + 4j])
    items = [random_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    if choice in (9, 10):
        return tuple(items)
    if choice in (11, 12):
        return items
    if choice == 13:
        return Pair(*items[:2]) if len(items) >= 2 else collections.OrderedDict(a=items)
    keys = [random_key(rng) for _ in items]
    return dict(zip(keys, items))


def random_key(rng):
    return rng.choice([rng.randrange(-5, 2**70), str(rng.random()), (rng.randrange(9), "k"), None, b"k", 1.5])


# --- subclasses and other types go through pickle and keep their type ------------------------

NOT_BUILT_IN = [
    Color.GREEN,
    Pair("k", [1, 2]),
    Point(1, (2, "three")),
    collections.OrderedDict([("b", 1), ("a", 2)]),
    Text("subclass of str"),
    Number(12),
    {1, 2, 3},
    frozenset({"x"}),
    3 + 4j,
    range(5),
]


@pytest.mark.parametrize("value", NOT_BUILT_IN, ids=lambda v: type(v).__name__)
def test_other_types_keep_their_exact_type(value):
    (decoded,) = check_round_trip([value])
    assert type(decoded) is type(value)
    with pytest.raises(CodecError, match="allow_pickle"):
        codec.decode(codec.encode([value]), allow_pickle=False)


def test_defaultdict_keeps_its_factory_and_items():
    d = collections.defaultdict(list, {"a": [1]})
    (decoded,) = check_round_trip([d])
    decoded["new"].append(2)
    assert decoded == {"a": [1], "new": [2]}


def test_pickled_values_inside_native_containers():
    records = [(Color.RED, [Point(0, 0), {"when": Pair(1, 2)}]), {Color.GREEN: "enum key"}]
    decoded = check_round_trip(records)
    assert type(decoded[0][0]) is Color and type(next(iter(decoded[1]))) is Color


# --- the key table -----------------------------------------------------------------------


def test_repeated_dict_keys_are_sent_once_and_decoded_as_one_object():
    records = [{"id": i, "name": f"n{i}", ("t", 1): None} for i in range(100)]
    data = codec.encode(records)
    assert data.count(b"name") == 1
    decoded = codec.decode(data)
    assert decoded == records
    first, second = (list(d) for d in decoded[:2])
    assert first[0] is second[0] and first[1] is second[1]


def test_more_keys_than_the_table_holds():
    records = [{f"key{i}": i, "shared": i} for i in range(MAX_KEYS + 100)]
    assert codec.decode(codec.encode(records), allow_pickle=False) == records


def test_decoding_rejects_an_overfull_key_table():
    defs = b"".join(bytes([KEY, 1, 97]) for _ in range(MAX_KEYS))
    assert len(codec.decode(batch(bytes([LIST]) + varint(MAX_KEYS) + defs))[0]) == MAX_KEYS
    with pytest.raises(CodecError, match="key table"):
        codec.decode(batch(bytes([LIST]) + varint(MAX_KEYS + 1) + defs + bytes([KEY, 1, 97])))


def test_key_table_entries_may_appear_anywhere():
    assert codec.decode(batch(bytes([KEY, 1]) + b"k", bytes([TUPLE, 1, KEY_REF, 0]))) == ["k", ("k",)]


# --- nesting --------------------------------------------------------------------------------


def nested(depth, leaf=0, make=lambda x: [x]):
    value = leaf
    for _ in range(depth):
        value = make(value)
    return value


@pytest.mark.parametrize("make", [lambda x: [x], lambda x: (x,), lambda x: {"k": x}], ids=["list", "tuple", "dict"])
def test_nesting_up_to_the_limit_is_native_and_deeper_is_pickled(make):
    at_limit = nested(MAX_DEPTH, make=make)
    same(codec.decode(codec.encode([at_limit]), allow_pickle=False), [at_limit])
    deeper = nested(MAX_DEPTH + 1, make=make)
    with pytest.raises(CodecError, match="allow_pickle"):
        codec.decode(codec.encode([deeper]), allow_pickle=False)
    check_round_trip([deeper, nested(300, make=make)])


def test_self_referencing_containers_do_not_loop():
    cyclic = [1]
    cyclic.append(cyclic)
    (decoded,) = round_trip([cyclic])
    for _ in range(MAX_DEPTH + 10):
        assert decoded[0] == 1
        decoded = decoded[1]


def test_decoding_bounds_nesting():
    too_deep = batch(bytes([LIST, 1]) * (MAX_DEPTH + 1) + bytes([NONE]))
    with pytest.raises(CodecError, match="nested deeper"):
        codec.decode(too_deep)
    ok = batch(bytes([LIST, 1]) * MAX_DEPTH + bytes([NONE]))
    assert codec.decode(ok) == [nested(MAX_DEPTH, leaf=None)]
    with pytest.raises(CodecError):
        codec.decode(batch(bytes([TUPLE, 1]) * 1_000_000 + bytes([NONE])))


# --- unpicklable objects ---------------------------------------------------------------------


def notes(error):
    return " ".join(getattr(error, "__notes__", []))


def test_unpicklable_record_raises_with_its_type():
    with pytest.raises(Exception) as info:
        codec.encode([1, lambda x: x])
    assert "record 1" in notes(info.value) and "'function'" in notes(info.value)


def test_unpicklable_value_inside_a_record_names_both_types():
    with pytest.raises(TypeError, match="pickle") as info:
        codec.encode([("ok", [threading.Lock()])])
    note = notes(info.value)
    assert "record 0" in note and "'tuple'" in note and "_thread.lock" in note


def test_unpicklable_user_object():
    class Local:  # local classes cannot be pickled by reference
        pass

    with pytest.raises((pickle.PicklingError, AttributeError)) as info:
        codec.encode([{"x": Local()}])
    assert "Local" in notes(info.value) and "'dict'" in notes(info.value)


# --- API ------------------------------------------------------------------------------------


def test_codec_error_is_a_timely_error():
    assert issubclass(CodecError, timely_py.TimelyError)
    assert CodecError is timely_py._core.CodecError


def test_wrong_argument_types_raise_type_error():
    with pytest.raises(TypeError):
        codec.encode(5)
    with pytest.raises(TypeError):
        timely_py._core.decode_records("not bytes")
    with pytest.raises(TypeError):
        codec.decode(5)


def test_format_is_as_documented():
    assert codec.encode([]) == bytes([VERSION, 0, 0])
    assert codec.encode([None, False, True, 0, -1, 1, 64]) == batch(
        bytes([NONE]), bytes([FALSE]), bytes([TRUE]), bytes([INT, 0]), bytes([INT, 1]), bytes([INT, 2]), bytes([INT, 0x80, 1])
    )
    assert codec.encode([2**64, -(2**64)]) == batch(bytes([BIG_POS, 9]) + bytes(8) + b"\x01", bytes([BIG_NEG, 9]) + bytes(8) + b"\x01")
    assert codec.encode([1.5]) == batch(bytes([FLOAT]) + struct.pack("<d", 1.5))
    assert codec.encode(["é", b"ab"]) == batch(bytes([STR, 2]) + "é".encode(), bytes([BYTES, 2]) + b"ab")
    assert codec.encode([(None,), [True], {0: b""}]) == batch(
        bytes([TUPLE, 1, NONE]), bytes([LIST, 1, TRUE]), bytes([DICT, 1, INT, 0, BYTES, 0])
    )
    pickled = pickle.dumps([Color.RED, "\ud800"], protocol=5)
    assert codec.encode([Color.RED, ("\ud800",)]) == batch(bytes([PICKLED, 0]), bytes([TUPLE, 1, PICKLED, 1]), pickled=pickled)
    k = "key"
    assert codec.encode([{k: 1}, {k: 2, "x": k}]) == batch(
        bytes([DICT, 1, KEY, 3]) + b"key" + bytes([INT, 2]),
        bytes([DICT, 2, KEY_REF, 0, INT, 4, KEY, 1]) + b"x" + bytes([STR, 3]) + b"key",
    )


def test_the_example_of_the_docs():
    expected = "01 05 00 00 03 01 09 02 07 01 61 06 00 00 00 00 00 00 00 40 0b 01 0d 01 6b 03 02 0b 01 0e 00 03 04"
    assert codec.encode([None, -1, ("a", 2.0), {"k": 1}, {"k": 2}]).hex(" ") == expected


def test_nan_payloads_survive():
    odd_nan = struct.unpack("<d", bytes.fromhex("010000000000f87f"))[0]
    (decoded,) = round_trip([odd_nan])
    assert struct.pack("<d", decoded).hex() == "010000000000f87f"


def test_module_doctests():
    failures, tests = doctest.testmod(codec, verbose=False)
    assert tests >= 3 and failures == 0
