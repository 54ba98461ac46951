"""The codec that carries records between processes.

Inside a process records move as references. Between processes a batch of records is
encoded as bytes: exact built-in types (``None``, ``bool``, ``int`` of any size, ``float``,
``str``, ``bytes``, ``tuple``, ``list``, ``dict``) have a compact native encoding, and
everything else, including subclasses of the built-in types (``IntEnum``, ``namedtuple``,
``OrderedDict``, ...), is pickled so that its type survives. The format is described in
``docs/codec.md``.

.. warning::
   Unpickling runs code chosen by whoever wrote the bytes. Decode only bytes from trusted
   peers, or pass ``allow_pickle=False``, which rejects a batch with pickled values (with
   `CodecError`) and decodes only the native encoding (safe for untrusted input).

Example::

    >>> from timely_py import codec
    >>> codec.decode(codec.encode([1, "two", (3.0, None)]))
    [1, 'two', (3.0, None)]
"""

from typing import Any, Iterable, List, Union

from . import _core
from ._core import CodecError

__all__ = ["CodecError", "decode", "encode"]


def encode(records: Iterable[object]) -> bytes:
    """Encodes a batch of records as bytes.

    Exact built-in types are encoded natively; any other object is pickled (protocol 5,
    one pickle for all such values of the batch), as is a container nested more than 64
    deep. An object that cannot be pickled raises the pickling error, with a note naming
    the record's index and type.

    >>> from collections import OrderedDict
    >>> data = encode([True, 2**100, {"k": [b"v", -0.0]}, OrderedDict(a=1)])
    >>> decode(data)
    [True, 1267650600228229401496703205376, {'k': [b'v', -0.0]}, OrderedDict([('a', 1)])]
    """
    if type(records) is not list:
        records = list(records)
    return _core.encode_records(records)


def decode(data: Union[bytes, bytearray, memoryview], *, allow_pickle: bool = True) -> List[Any]:
    """Decodes a batch made by `encode` into a list of records.

    Malformed input (truncated, trailing bytes, unknown tags, lengths beyond the input,
    invalid UTF-8, an unsupported format version) raises `CodecError`, a subclass of
    `timely_py.TimelyError`. Unless something is unpickled, memory use is bounded by a
    multiple of ``len(data)``.

    **Unpickling runs arbitrary code.** Decode only bytes from trusted peers, or pass
    ``allow_pickle=False`` to reject a batch with pickled values (with `CodecError`)
    instead of unpickling them.

    >>> decode(encode([1, ("a", 2)]), allow_pickle=False)
    [1, ('a', 2)]
    >>> decode(encode([range(3)]), allow_pickle=False)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
      ...
    CodecError: ... the batch has pickled values, and unpickling is not allowed (allow_pickle=False)
    """
    if type(data) is not bytes:
        data = memoryview(data).tobytes()
    return _core.decode_records(data, allow_pickle)
