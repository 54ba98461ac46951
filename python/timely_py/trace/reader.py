"""Reading a trace directory (``docs/trace-format.md``) into pyarrow tables.

This module owns the directory layout: finding the processes, their ``_process.json``
metadata and their workers' part files, and loading events with filters pushed down to the
Parquet scan. It knows the format document only, never the engine's internals, and it does
not judge whether a trace is consistent (that is :mod:`timely_py.trace.validate`).

>>> import timely_py.trace as trace
>>> trace.read("no/such/dir")
Traceback (most recent call last):
    ...
timely_py.trace.reader.TraceFormatError: no trace directory at no/such/dir
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc

# Absolute, unlike the package's other imports: a copy of this package imported on its own
# (benches/python/bench_trace_compare.py) reads the format from the installed module.
from timely_py import _core

#: The trace format, declared once in the Rust crate (``timely_trace::schema``).
_FORMAT = _core.trace_format()

#: The trace format version these readers understand.
FORMAT_VERSION: int = _FORMAT["version"]

#: The columns of every event file, in the document's order, and their types.
FILE_SCHEMA: pa.Schema = _FORMAT["schema"]

#: The event kinds, in the order of their dictionary codes.
KINDS: Tuple[str, ...] = tuple(name for name, _class, _when, _columns in _FORMAT["kinds"])

#: The columns ``read`` returns: the files' columns, then the two partition columns.
SCHEMA = FILE_SCHEMA.append(pa.field("process", pa.int64())).append(pa.field("worker", pa.int64()))

PathLike = Union[str, "os.PathLike[str]"]

_PROCESS_DIR = re.compile(r"^process=(\d+)$")
_WORKER_DIR = re.compile(r"^worker=(\d+)$")
_PART_FILE = re.compile(r"^part-(\d+)\.parquet$")


class TraceFormatError(_core.TimelyError, ValueError):
    """The path is not a trace directory this reader understands (missing, malformed
    metadata, unknown ``format_version``, unreadable files); a ``TimelyError`` and a
    ``ValueError``."""


@dataclass(frozen=True)
class PartFile:
    """One data file of a trace: where it is, whose events it holds, and its size."""

    path: Path
    process: int
    worker: int
    part: int
    size: int


def metadata(path: PathLike) -> Dict[int, Dict[str, Any]]:
    """The ``_process.json`` of every process of the trace at ``path``, by process index.

    Raises :class:`TraceFormatError` when the directory holds no process, a process has no
    readable metadata, or its ``format_version`` is not one this reader knows.
    """
    root = _trace_root(path)
    result = {}
    for process, directory in _process_dirs(root).items():
        result[process] = _read_process_json(directory, process)
    return result


def part_files(path: PathLike) -> List[PartFile]:
    """Every complete data file of the trace, ordered by process, worker and part number.

    Files whose names start with ``.`` or ``_`` (files being written, metadata) are not
    data files and are left out; so is anything else not named ``part-N.parquet``.
    """
    root = _trace_root(path)
    files = []
    for process, process_dir in _process_dirs(root).items():
        for worker_dir in process_dir.iterdir():
            worker_match = _WORKER_DIR.match(worker_dir.name)
            if not worker_match or not worker_dir.is_dir():
                continue
            for file in worker_dir.iterdir():
                part_match = _PART_FILE.match(file.name)
                if part_match and file.is_file():
                    files.append(
                        PartFile(file, process, int(worker_match.group(1)), int(part_match.group(1)), file.stat().st_size)
                    )
    files.sort(key=lambda f: (f.process, f.worker, f.part))
    return files


def read(
    path: PathLike,
    *,
    processes: Optional[Iterable[int]] = None,
    workers: Optional[Iterable[int]] = None,
    kinds: Optional[Iterable[str]] = None,
    start_ns: Optional[int] = None,
    end_ns: Optional[int] = None,
    columns: Optional[Sequence[str]] = None,
) -> pa.Table:
    """The events of the trace at ``path`` as one table, sorted by worker, then time.

    Rows of one worker keep the order of its files when times are equal. The filters are
    pushed down to the Parquet scan: ``processes`` and ``workers`` (global worker indices)
    select files, ``kinds`` selects event kinds, ``start_ns <= time_ns < end_ns`` a time
    range on the writing process's clock. ``columns`` picks columns (``process`` and
    ``worker`` are always included, ``time_ns`` too so that rows can be ordered).

    >>> table = read(example_trace, workers=[0], kinds=["schedule_start"])
    >>> table.column("operator").to_pylist(), set(table.column("kind").to_pylist())
    ([0, 1], {'schedule_start'})
    """
    metadata(path)  # checks the directory and every format_version
    table = scan(
        part_files(path),
        processes=processes,
        workers=workers,
        kinds=kinds,
        start_ns=start_ns,
        end_ns=end_ns,
        columns=columns,
    )
    if table.num_rows == 0:
        return table
    order = pc.sort_indices(table, sort_keys=[("worker", "ascending"), ("time_ns", "ascending")])
    return table.take(order)


def scan(
    files: Sequence[PartFile],
    *,
    processes: Optional[Iterable[int]] = None,
    workers: Optional[Iterable[int]] = None,
    kinds: Optional[Iterable[str]] = None,
    start_ns: Optional[int] = None,
    end_ns: Optional[int] = None,
    columns: Optional[Sequence[str]] = None,
) -> pa.Table:
    """The events of ``files`` in file order (no sorting), filtered like :func:`read`."""
    wanted_processes = _int_set(processes)
    wanted_workers = _int_set(workers)
    chosen = [
        f
        for f in files
        if (wanted_processes is None or f.process in wanted_processes)
        and (wanted_workers is None or f.worker in wanted_workers)
    ]
    names = _columns(columns)
    if not chosen:
        return SCHEMA.empty_table().select(names)
    import pyarrow.dataset as ds  # here, not at the top: it imports pandas (a second or more)

    dataset = ds.dataset(
        [str(f.path) for f in chosen],
        schema=SCHEMA,
        format="parquet",
        partitioning=ds.partitioning(pa.schema([("process", pa.int64()), ("worker", pa.int64())]), flavor="hive"),
        partition_base_dir=str(_common_root(chosen)),
    )
    try:
        table = dataset.to_table(columns=names, filter=_filter(kinds, start_ns, end_ns))
    except (OSError, pa.ArrowInvalid) as error:
        raise TraceFormatError(f"cannot read the trace's files: {error}") from error
    return table.unify_dictionaries()  # one dictionary of kinds for every file


def _filter(kinds: Optional[Iterable[str]], start_ns: Optional[int], end_ns: Optional[int]) -> Optional[Any]:
    """The dataset expression (``pyarrow.dataset.Expression``) selecting ``kinds`` and the
    time range (none: everything)."""
    import pyarrow.dataset as ds

    conditions = []
    if kinds is not None:
        conditions.append(ds.field("kind").isin(pa.array(_kinds(kinds), pa.string())))
    if start_ns is not None:
        conditions.append(ds.field("time_ns") >= start_ns)
    if end_ns is not None:
        conditions.append(ds.field("time_ns") < end_ns)
    if not conditions:
        return None
    expression = conditions[0]
    for condition in conditions[1:]:
        expression = expression & condition
    return expression


def _kinds(kinds: Iterable[str]) -> List[str]:
    """``kinds`` as a list (a single name is accepted too), all of them known."""
    chosen = [kinds] if isinstance(kinds, str) else list(kinds)
    unknown = [k for k in chosen if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown event kinds {unknown}; the kinds are {list(KINDS)}")
    return chosen


def _columns(columns: Optional[Sequence[str]]) -> List[str]:
    if columns is None:
        return list(SCHEMA.names)
    unknown = [c for c in columns if c not in SCHEMA.names]
    if unknown:
        raise ValueError(f"unknown trace columns {unknown}; the columns are {SCHEMA.names}")
    required = ["time_ns", "process", "worker"]
    return [c for c in SCHEMA.names if c in columns or c in required]


def _int_set(values: Optional[Iterable[int]]) -> Optional[Set[int]]:
    return None if values is None else {int(v) for v in values}


def _common_root(files: Sequence[PartFile]) -> Path:
    """The trace directory the files belong to (two levels above any of them)."""
    return files[0].path.parent.parent.parent


def _trace_root(path: PathLike) -> Path:
    root = Path(path)
    if not root.is_dir():
        raise TraceFormatError(f"no trace directory at {path}")
    return root


def _process_dirs(root: Path) -> Dict[int, Path]:
    found = {}
    for entry in root.iterdir():
        match = _PROCESS_DIR.match(entry.name)
        if match and entry.is_dir():
            found[int(match.group(1))] = entry
    if not found:
        raise TraceFormatError(f"{root} is not a trace directory: it has no process=P subdirectory")
    return dict(sorted(found.items()))


def _read_process_json(directory: Path, process: int) -> Dict[str, Any]:
    file = directory / "_process.json"
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        raise TraceFormatError(f"{file} is missing") from None
    except (OSError, ValueError) as error:
        raise TraceFormatError(f"{file} is not readable JSON: {error}") from error
    if not isinstance(data, dict):
        raise TraceFormatError(f"{file} does not hold a JSON object")
    version = data.get("format_version")
    if version != FORMAT_VERSION:
        raise TraceFormatError(f"{file} has format_version {version!r}; this reader knows version {FORMAT_VERSION}")
    if data.get("process", process) != process:
        raise TraceFormatError(f"{file} describes process {data.get('process')}, not {process}")
    return data
