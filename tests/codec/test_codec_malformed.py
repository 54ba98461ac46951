"""The record codec (`timely_py.codec`) on malformed input: truncated, trailing, huge, overlong,
unknown, invalid and random or mutated bytes must raise `CodecError` and never crash.
Format: `docs/codec.md`."""

import collections
import pickle
import random

import pytest
from support.codec import (
    BIG_NEG,
    BIG_POS,
    BYTES,
    DICT,
    INT,
    KEY,
    KEY_REF,
    LIST,
    NONE,
    PICKLED,
    STR,
    TUPLE,
    VERSION,
    Color,
    Point,
    batch,
    varint,
)
from timely_py import codec
from timely_py.codec import CodecError

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
