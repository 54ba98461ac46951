"""``validate``: checks that a trace directory keeps the promises of ``docs/trace-format.md``.

This module owns the checks on files and metadata (run status, missing processes, part
numbering, unreadable files) and runs the checks on events, which live in
:mod:`~timely_py.trace.linking` (sends and receives), :mod:`~timely_py.trace.causality`
(receives after sends across processes, on process 0's clock),
:mod:`~timely_py.trace.nesting` (order and nesting per worker) and
:mod:`~timely_py.trace.references` (created operators and channels). It reports; it never
repairs a trace.

A process that did not finish (status ``running`` or ``failed``) lost the events it had
buffered, so its run is reported once as incomplete (or failed) instead of as many sends
without receives. Sends and receives are paired only when no events can be missing: every
process completed and left its directory, every file is readable, no part is missing. The
times of the pairs that are there are compared in any case.

>>> from timely_py.trace import validate
>>> validate(example_trace)
[]
"""

from __future__ import annotations

from typing import Any, Dict, List, Set, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

from . import causality, linking, nesting, references
from .reader import PartFile, PathLike, TraceFormatError, metadata, part_files, scan
from .violations import Findings, Violation

#: The statuses of a process whose trace is whole.
COMPLETE = "complete"


def validate(path: PathLike, *, limit: int = 20) -> List[Violation]:
    """The violations of the format in the trace at ``path`` (empty: none found).

    At most ``limit`` violations of each kind are listed, each with the rows involved; one
    more violation of that kind then says how many were left out. Raises
    :class:`~timely_py.trace.TraceFormatError` only when ``path`` is not a trace directory
    at all (see :func:`~timely_py.trace.metadata`).
    """
    processes = metadata(path)
    files = part_files(path)
    readable, unreadable = _split_readable(files)
    table = scan(readable)
    findings = Findings(table, limit)
    for file, error in unreadable:
        findings.add_without_rows("unreadable file", f"{file.path}: {error}")
    complete = _check_processes(processes, files, findings)
    whole_parts = _check_parts(files, findings)
    nesting.check_time_order(table, findings)
    nesting.check_nesting(table, findings, complete)
    references.check_references(table, findings, _recorded_operators(processes))
    workers = _workers_per_process(processes)
    causality.check_clock_order(table, findings, processes, workers)
    events_lost = unreadable or not whole_parts or _missing_processes(processes)
    if len(complete) == len(processes) and not events_lost:
        # Processes past the cluster's initial count (process 0's) joined while it ran.
        joined_from = workers * int(processes[min(processes)].get("processes", len(processes)))
        linking.check_links(table, findings, workers, workers * len(processes), joined_from)
    return findings.result()


def _split_readable(files: List[PartFile]) -> Tuple[List[PartFile], List[Tuple[PartFile, str]]]:
    """The files whose Parquet footer can be read, and the others with their error."""
    readable, unreadable = [], []
    for file in files:
        try:
            pq.read_metadata(file.path)
            readable.append(file)
        except (OSError, pa.ArrowInvalid) as error:
            unreadable.append((file, str(error)))
    return readable, unreadable


def _check_processes(processes: Dict[int, Dict[str, Any]], files: List[PartFile], findings: Findings) -> Set[int]:
    """Reports processes that did not complete or are missing; returns the complete ones."""
    complete = set()
    for process, meta in processes.items():
        status = meta.get("status")
        if status == COMPLETE:
            complete.add(process)
        elif status == "running":
            findings.add_without_rows(
                "incomplete run",
                f"process {process} never finished its trace (status 'running': killed, or still running); "
                "events it had buffered are missing, so sends and receives are not paired",
            )
        elif status == "failed":
            findings.add_without_rows(
                "failed run", f"process {process} ended with an error; sends and receives are not paired"
            )
        else:
            findings.add_without_rows("bad metadata", f"process {process} has an unknown status {status!r}")
    for process in _missing_processes(processes):
        findings.add_without_rows("missing process", f"the run had process {process}, which left no trace")
    workers = _workers_per_process(processes)
    for file in files:
        if file.process in processes and file.worker // workers != file.process:
            findings.add_without_rows("misplaced file", f"{file.path}: worker {file.worker} is not in process {file.process}")
    return complete


def _missing_processes(processes: Dict[int, Dict[str, Any]]) -> List[int]:
    expected = max(int(meta.get("processes", 1)) for meta in processes.values())
    return [p for p in range(expected) if p not in processes]


def _check_parts(files: List[PartFile], findings: Findings) -> bool:
    """Part numbers of each worker count up from 0 without gaps; false if some do not."""
    parts: Dict[int, List[PartFile]] = {}
    for file in files:
        parts.setdefault(file.worker, []).append(file)
    for worker, worker_files in parts.items():
        numbers = [f.part for f in worker_files]
        missing = sorted(set(range(max(numbers) + 1)) - set(numbers))
        if missing:
            directory = worker_files[0].path.parent
            findings.add_without_rows("part gap", f"{directory}: parts {missing} are missing (worker {worker})")
    return "part gap" not in findings.counts


def _workers_per_process(processes: Dict[int, Dict[str, Any]]) -> int:
    values = {int(meta.get("workers_per_process", 0)) for meta in processes.values()}
    if len(values) != 1 or 0 in values:
        raise TraceFormatError(f"the processes disagree on workers_per_process or lack it: {sorted(values)}")
    return values.pop()


def _recorded_operators(processes: Dict[int, Dict[str, Any]]) -> Set[int]:
    """The processes that recorded the ``operators`` class (so creations can be checked)."""
    return {p for p, meta in processes.items() if "operators" in meta.get("event_classes", [])}
