"""What a failed check reports: :class:`Violation`, and the collector that caps how many
violations of one kind are kept.

This module owns the shape of a check's findings; it runs no check itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Sequence

import pyarrow as pa


@dataclass(frozen=True)
class Violation:
    """A property of the format that the trace breaks.

    ``kind`` names the property (``"unmatched send"``, ``"incomplete run"``, ...),
    ``message`` says what is wrong in words, and ``rows`` holds the events involved (a
    pyarrow table with the trace's columns; empty when the violation concerns files or
    metadata rather than events).
    """

    kind: str
    message: str
    rows: pa.Table

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass
class Findings:
    """Violations as the checks find them, at most ``limit`` per kind; the others are
    counted and reported as one closing violation of that kind."""

    table: pa.Table
    limit: int
    kept: List[Violation] = field(default_factory=list)
    counts: Dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, message: str, rows: Sequence[int] = ()) -> None:
        """Records a violation; ``rows`` are indices into ``table``."""
        count = self.counts.get(kind, 0) + 1
        self.counts[kind] = count
        if count <= self.limit:
            selected = self.table.take(pa.array(sorted(set(rows)), pa.int64()))
            self.kept.append(Violation(kind, message, selected))

    def add_without_rows(self, kind: str, message: str) -> None:
        """Records a violation about files or metadata."""
        self.add(kind, message, ())

    def result(self) -> List[Violation]:
        """The kept violations, then one per kind saying how many more were found."""
        result = list(self.kept)
        for kind, count in self.counts.items():
            if count > self.limit:
                more = count - self.limit
                result.append(Violation(kind, f"{more} more violations of this kind are not listed", self.table.slice(0, 0)))
        return result
