"""The record codec (`timely_py.codec`): round trips of every built-in type and of pickled
objects, exact type preservation, nesting limits, unpicklable objects, and malformed input,
which must raise `CodecError` and never crash. Format: `docs/codec.md`."""

import collections
import doctest
import enum
import math
import pickle
import random
import struct
import sys
import threading

import pytest

import timely_py
from timely_py import codec
from timely_py.codec import CodecError

MAX_DEPTH = 64

# Tags of the format (docs/codec.md).
NONE, FALSE, TRUE, INT, BIG_POS, BIG_NEG, FLOAT, STR, BYTES, TUPLE, LIST, DICT, PICKLED, KEY, KEY_REF = range(15)
VERSION = 1
MAX_KEYS = 4096


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def batch(*values, count=None, pickled=b""):
    """A hand-made batch: the header, the pickled values (bytes of a pickle) and the already
    encoded `values`."""
    count = len(values) if count is None else count
    return bytes([VERSION]) + varint(count) + varint(len(pickled)) + pickled + b"".join(values)


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


# Types that must go through pickle (defined at module level so that pickle finds them).


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2


Pair = collections.namedtuple("Pair", "key value")


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return type(other) is Point and (self.x, self.y) == (other.x, other.y)

    def __repr__(self):
        return f"Point({self.x!r}, {self.y!r})"


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


# --- malformed input ---------------------------------------------------------------------------

RICH_BATCH = [
    None, True, False, 0, -1, 2**63, -(10**40), 1.5, -0.0, "héllo 😀", "\ud800", b"\x00\xff",
    (1, "a"), [2, [3]], {"k": (None, 4), (5, 6): b""}, Color.RED, Point(7, 8), 10**500,
]


def test_every_prefix_of_a_valid_encoding_is_rejected():
    data = codec.encode(RICH_BATCH)
    assert codec.decode(data) is not None
    for end in range(len(data)):
        with pytest.raises(CodecError):
            codec.decode(data[:end])


def test_trailing_bytes_are_rejected():
    data = codec.encode([1, "two"])
    for extra in (b"\x00", b"\x01\x02", bytes(100)):
        with pytest.raises(CodecError, match="trailing"):
            codec.decode(data + extra)


@pytest.mark.parametrize("version", [0, 2, 0x80, 255])
def test_unknown_format_version_is_rejected(version):
    data = codec.encode([1])
    with pytest.raises(CodecError, match="version"):
        codec.decode(bytes([version]) + data[1:])


def test_empty_input_is_rejected():
    with pytest.raises(CodecError, match="empty"):
        codec.decode(b"")


HUGE = [2**31, 2**32 + 5, 2**40, 2**62, 2**63, 2**64 - 1]


@pytest.mark.parametrize("length", HUGE)
@pytest.mark.parametrize("tag", [STR, BYTES, TUPLE, LIST, DICT, BIG_POS, BIG_NEG, KEY])
def test_huge_declared_lengths_are_rejected_without_allocating(tag, length):
    with pytest.raises(CodecError, match="declares length"):
        codec.decode(batch(bytes([tag]) + varint(length) + b"abc"))


@pytest.mark.parametrize("length", HUGE)
def test_huge_pickled_lengths_are_rejected(length):
    data = bytes([VERSION, 1]) + varint(length) + b"\x80\x05abc"
    with pytest.raises(CodecError, match="declares length"):
        codec.decode(data)


@pytest.mark.parametrize("index", [0, 1, 2**32, 2**64 - 1])
@pytest.mark.parametrize("tag", [PICKLED, KEY_REF])
def test_references_to_missing_table_entries_are_rejected(tag, index):
    with pytest.raises(CodecError, match="does not exist"):
        codec.decode(batch(bytes([tag]) + varint(index)))
    with pytest.raises(CodecError, match="does not exist"):
        codec.decode(batch(bytes([KEY, 1]) + b"k", bytes([tag]) + varint(max(index, 1)), pickled=pickle.dumps([0])))


@pytest.mark.parametrize("count", HUGE + [2, 3])
def test_huge_record_counts_are_rejected(count):
    with pytest.raises(CodecError):
        codec.decode(batch(bytes([NONE]), count=count))


def test_overlong_varints_are_rejected():
    for bad in (b"\xff" * 10 + b"\x01", b"\x80" * 9 + b"\x02", b"\xff" * 20):
        with pytest.raises(CodecError, match="varint"):
            codec.decode(batch(bytes([INT]) + bad))
    assert codec.decode(batch(bytes([INT]) + b"\xff" * 9 + b"\x01")) == [-(2**63)]


def test_unknown_tags_are_rejected():
    for tag in (15, 0x7F, 0xFF):
        with pytest.raises(CodecError, match="unknown tag"):
            codec.decode(batch(bytes([tag])))


def test_invalid_utf8_is_rejected():
    for bad in (b"\xff", b"\xc3", b"\xed\xa0\x80", b"a\x80b", b"\xf4\x90\x80\x80"):
        with pytest.raises(CodecError, match="UTF-8") as info:
            codec.decode(batch(bytes([STR]) + varint(len(bad)) + bad))
        assert isinstance(info.value.__cause__, UnicodeDecodeError)


def test_non_canonical_big_ints_are_rejected():
    for bad in (b"", b"\x01\x00"):
        with pytest.raises(CodecError, match="magnitude"):
            codec.decode(batch(bytes([BIG_POS]) + varint(len(bad)) + bad))


def test_unhashable_dict_keys_are_rejected():
    with pytest.raises(CodecError, match="dict key") as info:
        codec.decode(batch(bytes([DICT, 1, LIST, 0, NONE])))
    assert isinstance(info.value.__cause__, TypeError)


def test_pickled_items_are_rejected_unless_allowed():
    data = codec.encode([1, Point(1, 2)])
    with pytest.raises(CodecError, match="allow_pickle=False"):
        codec.decode(data, allow_pickle=False)
    assert codec.decode(data) == [1, Point(1, 2)]


def test_corrupt_pickles_raise_codec_error():
    for payload in (b"garbage", b"\x80\x05", pickle.dumps([1])[:-1], b"\x80\x05c" + b"no_such_module\nX\n."):
        with pytest.raises(CodecError, match="unpickled") as info:
            codec.decode(batch(bytes([PICKLED, 0]), pickled=payload))
        assert info.value.__cause__ is not None


def test_pickled_values_must_be_a_list():
    for payload in (pickle.dumps((1,)), pickle.dumps(None), pickle.dumps(collections.UserList([1]))):
        with pytest.raises(CodecError, match="not a list"):
            codec.decode(batch(bytes([PICKLED, 0]), pickled=payload))
    assert codec.decode(batch(bytes([PICKLED, 1]), bytes([PICKLED, 1]), pickled=pickle.dumps(["a", "b"]))) == ["b", "b"]


def test_random_bytes_never_crash():
    rng = random.Random(12345)
    decoded = 0
    for i in range(4000):
        data = rng.randbytes(rng.randrange(0, 40))
        if i % 2 and data:
            data = bytes([VERSION]) + data[1:]  # get past the version check half of the time
        try:
            codec.decode(data, allow_pickle=False)
            decoded += 1
        except CodecError:
            pass
    assert decoded < 4000


def read_varint(data, pos):
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def mutated(rng, data, start=0):
    """`data` with 1 to 3 bytes at `start` or later replaced, deleted or inserted."""
    data = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        pos = rng.randrange(start, len(data))
        action = rng.randrange(3)
        if action == 0:
            data[pos] = rng.randrange(256)
        elif action == 1 and len(data) > start + 1:
            del data[pos]
        else:
            data.insert(pos, rng.randrange(256))
    return bytes(data)


NATIVE_BATCH = [v for v in RICH_BATCH if type(v) not in (Color, Point) and v != "\ud800"] + [
    {"key": 1, "other": [2]},
    {"key": (3,), "other": {"key": None}},
]


def test_mutated_native_encodings_never_crash():
    rng = random.Random(54321)
    corpus = [codec.encode([v]) for v in NATIVE_BATCH] + [codec.encode(NATIVE_BATCH)]
    for data in corpus:
        assert codec.decode(data, allow_pickle=False) is not None
    for _ in range(4000):
        try:
            codec.decode(mutated(rng, rng.choice(corpus)), allow_pickle=False)
        except CodecError:
            pass


def test_mutated_values_next_to_pickled_values_never_crash():
    """Mutations after the (intact) pickled values, so that references into them are
    exercised with unpickling allowed."""
    rng = random.Random(777)
    data = codec.encode(RICH_BATCH + [Point(1, 2), (Color.GREEN, {"key": Point(3, 4)})])
    _count, pos = read_varint(data, 1)
    pickled_len, pos = read_varint(data, pos)
    values_start = pos + pickled_len
    for _ in range(3000):
        try:
            codec.decode(mutated(rng, data, values_start))
        except CodecError:
            pass


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
