"""Shared by the codec's suites (`test_codec.py`, `test_codec_malformed.py`): the tags of the
format (docs/codec.md), hand-made batches, and record types that go through pickle."""

import enum

# Tags of the format (docs/codec.md).
NONE, FALSE, TRUE, INT, BIG_POS, BIG_NEG, FLOAT, STR, BYTES, TUPLE, LIST, DICT, PICKLED, KEY, KEY_REF = range(15)
VERSION = 1


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


# Types that must go through pickle (defined at module level so that pickle finds them).


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return type(other) is Point and (self.x, self.y) == (other.x, other.y)

    def __repr__(self):
        return f"Point({self.x!r}, {self.y!r})"
