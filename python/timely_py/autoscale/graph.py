"""The dataflow graph the policy walks: operators and the data channels between them, read
from the trace's ``operator_created`` and ``channel_created`` events (the ``operators``
event class, ``docs/trace-format.md``).

The policy reasons about each dataflow's *top-level* operators: those directly inside a
dataflow's root scope (addresses of length 2). A nested scope (a loop, a region) is one of
them, a black box whose useful time is its whole run and whose records are those crossing
its boundary; its children belong to it. So the graph the policy walks is a graph of the
root scopes' channels, and loops inside scopes never make it cyclic.

An *epoch scope* (its name starts with `EPOCH_SCOPE_PREFIX`) is the exception: it exists only
to run a keyed Megaphone operator, whose crate keeps ``u64`` times, inside a dataflow whose
times are vectors. The graph looks through it: the operators directly inside it are
top-level operators, the channels between them are edges, records entering it go to the
operator that receives them, and records leaving it come from the operator whose run sends
them (`resolve`). So the policy judges ``WordCount.S`` as it would in the root scope.

This module owns the graph's shape only: no rates, no trace windows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from .._core import EPOCH_SCOPE_PREFIX

__all__ = ["EPOCH_SCOPE_PREFIX", "Edge", "Graph", "Operator"]

Address = Tuple[int, ...]
#: A data channel as its event gives it: (channel, scope, source index, source port, target
#: index, target port).
RawChannel = Tuple[int, Address, int, int, int, int]


@dataclass(frozen=True)
class Operator:
    """An operator as its ``operator_created`` event names it: its id (the same on every
    worker), its address (enclosing scopes' indices, then its own) and its name."""

    id: int
    address: Tuple[int, ...]
    name: str

    @property
    def dataflow(self) -> int:
        """The index of the dataflow the operator belongs to."""
        return self.address[0]

    @property
    def epoch_scope(self) -> bool:
        """True for a keyed operator's epoch scope, which the graph looks through."""
        return len(self.address) == 2 and self.name.startswith(EPOCH_SCOPE_PREFIX)

    def label(self) -> str:
        """``name#id``, how decisions name the operator."""
        return f"{self.name}#{self.id}"


@dataclass(frozen=True)
class Edge:
    """A data channel between two top-level operators: records leave `source` at its
    output port `source_port` and enter `target` at `target_port`."""

    channel: int
    source: int
    source_port: int
    target: int
    target_port: int


@dataclass
class Graph:
    """Operators by id and the edges between top-level operators.

    >>> g = Graph()
    >>> g.add_operator(Operator(1, (0, 1), "Input"))
    >>> g.add_operator(Operator(2, (0, 2), "Map"))
    >>> g.add_channel(7, (0,), 1, 0, 2, 0)
    >>> [op.name for op in g.sources()], [op.name for op in g.topological_order()]
    (['Input'], ['Input', 'Map'])
    """

    operators: Dict[int, Operator] = field(default_factory=dict)
    edges: Dict[int, Edge] = field(default_factory=dict)
    #: Channels inside a top-level scope that start at the scope's own input port: records
    #: entering the scope. Its parent has no channel for them (`enter` allocates inside), so
    #: the edge into the scope is found from who sends on them (`resolve`). Each maps to the
    #: scope's address, its input port, and the index and port of the child receiving them.
    boundaries: Dict[int, Tuple[Address, int, int, int]] = field(default_factory=dict)
    #: Root channels out of an epoch scope: records an operator inside it sends out. Each maps
    #: to the operator receiving them and its port; the sender is found like a boundary's.
    exits: Dict[int, Tuple[int, int]] = field(default_factory=dict)
    _by_address: Dict[Address, int] = field(default_factory=dict)
    _pending: List[RawChannel] = field(default_factory=list)

    def add_operator(self, operator: Operator) -> None:
        """Adds `operator` (again: no change), and the channels that were waiting for it."""
        self.operators[operator.id] = operator
        self._by_address[operator.address] = operator.id
        if self._pending:
            pending, self._pending = self._pending, []
            for channel in pending:
                self.add_channel(*channel)

    def add_channel(self, channel: int, scope: Address, source_index: int, source_port: int,
                    target_index: int, target_port: int) -> None:
        """Adds the data channel `channel` of the scope at `scope` from its child
        `source_index` to its child `target_index`, if both are top-level operators (index 0,
        the scope's own boundary, and channels inside nested scopes are not edges, except
        those of epoch scopes, which the graph looks through)."""
        raw = (channel, scope, source_index, source_port, target_index, target_port)
        if len(scope) == 2 and source_index == 0 and target_index != 0:
            self.boundaries[channel] = (scope, source_port, target_index, target_port)
            return
        if source_index == 0 or target_index == 0 or len(scope) not in (1, 2):
            return
        if len(scope) == 2:  # inside a top-level scope: edges only if it is an epoch scope
            enclosing = self._operator_at(scope)
            if enclosing is None:
                self._pending.append(raw)
                return
            if not enclosing.epoch_scope:
                return
        source = self._operator_at(scope + (source_index,))
        target = self._by_address.get(scope + (target_index,))
        if source is None or target is None:
            self._pending.append(raw)
        elif source.epoch_scope:
            self.exits[channel] = (target, target_port)
        else:
            self.edges[channel] = Edge(channel, source.id, source_port, target, target_port)

    def _operator_at(self, address: Address) -> Optional[Operator]:
        found = self._by_address.get(address)
        return None if found is None else self.operators[found]

    def _in_epoch_scope(self, address: Address) -> bool:
        """True for an address directly inside an epoch scope."""
        enclosing = self._operator_at(address[:2]) if len(address) == 3 else None
        return enclosing is not None and enclosing.epoch_scope

    def add_events(self, rows: Iterable[Mapping[str, object]]) -> None:
        """Adds the operators and data channels of trace rows (dicts with the format's
        columns), ignoring rows of other kinds."""
        for row in rows:
            kind = row.get("kind")
            if kind == "operator_created":
                address = tuple(int(i) for i in row["address"])  # type: ignore[attr-defined]
                self.add_operator(Operator(int(row["operator"]), address, str(row.get("name") or "")))  # type: ignore[call-overload]
            elif kind == "channel_created" and row.get("channel_kind") == "data":
                scope = tuple(int(i) for i in row["address"])  # type: ignore[attr-defined]
                self.add_channel(int(row["channel"]), scope,  # type: ignore[call-overload]
                                 int(row["source_operator"]), int(row["source_port"]),  # type: ignore[call-overload]
                                 int(row["target_operator"]), int(row["target_port"]))  # type: ignore[call-overload]

    def _boundary_target(self, channel: int) -> Optional[Tuple[int, int]]:
        """The top-level operator records entering on boundary `channel` go to, and its
        port: the scope, or for an epoch scope the child that receives them."""
        scope, port, child, child_port = self.boundaries[channel]
        enclosing = self._operator_at(scope)
        if enclosing is None:
            return None
        if not enclosing.epoch_scope:
            return enclosing.id, port
        inside = self._by_address.get(scope + (child,))
        return None if inside is None else (inside, child_port)

    def unresolved(self) -> List[Tuple[int, int, bool]]:
        """``(channel, receiving operator, entering)`` of every channel whose sending
        top-level operator is not known yet: boundary channels into a top-level scope
        (`entering`), and channels out of an epoch scope."""
        found = []
        for channel in sorted(self.boundaries):
            target = self._boundary_target(channel)
            if target is not None and channel not in self.edges:
                found.append((channel, target[0], True))
        found.extend((channel, target, False) for channel, (target, _) in sorted(self.exits.items())
                     if channel not in self.edges)
        return found

    def resolve(self, channel: int, source: int) -> None:
        """Records that top-level operator `source` sends the records of channel `channel`
        (one of `unresolved`): the edge into a scope, or out of an epoch scope."""
        if channel in self.exits:
            target, port = self.exits[channel]
        else:
            found = self._boundary_target(channel)
            assert found is not None, f"channel {channel} enters a scope not seen yet"
            target, port = found
        self.edges[channel] = Edge(channel, source, 0, target, port)

    def program_fed(self, exclude: int) -> Optional[int]:
        """The one top-level operator that no channel enters or leaves, other than
        `exclude`: the input whose records the program hands on from its own code (None if
        there is not exactly one)."""
        touched = {e.source for e in self.edges.values()} | {e.target for e in self.edges.values()}
        entered = {found[0] for found in map(self._boundary_target, self.boundaries) if found is not None}
        entered |= {target for target, _ in self.exits.values()}
        lone = [op.id for op in self.top_level() if op.id not in touched | entered and op.id != exclude]
        return lone[0] if len(lone) == 1 else None

    def leaves(self) -> Set[int]:
        """The operators that are not scopes (no operator lies inside them)."""
        return set(self.operators) - self.scopes()

    def scopes(self) -> Set[int]:
        """The operators that are scopes (a dataflow's root, a loop, a region)."""
        enclosing = {op.address[:-1] for op in self.operators.values()}
        return {op.id for op in self.operators.values() if op.address in enclosing}

    def is_top_level(self, operator: Operator) -> bool:
        """True for an operator directly inside a dataflow's root scope, other than an epoch
        scope, or directly inside an epoch scope."""
        if len(operator.address) == 2:
            return not operator.epoch_scope
        return self._in_epoch_scope(operator.address)

    def top_level(self) -> List[Operator]:
        """Every top-level operator, in id order."""
        return [op for _, op in sorted(self.operators.items()) if self.is_top_level(op)]

    def inputs(self, operator: int) -> List[Edge]:
        """The edges into `operator`, in channel order."""
        return [e for _, e in sorted(self.edges.items()) if e.target == operator]

    def outputs(self, operator: int) -> List[Edge]:
        """The edges out of `operator`, in channel order."""
        return [e for _, e in sorted(self.edges.items()) if e.source == operator]

    def sources(self) -> List[Operator]:
        """Top-level operators no edge enters: inputs, `to_stream`, generic sources."""
        entered = {e.target for e in self.edges.values()}
        return [op for op in self.top_level() if op.id not in entered]

    def owner(self, operator: int) -> Optional[int]:
        """The top-level operator `operator` belongs to (itself if it is one; None for a
        dataflow's root scope or an operator not seen)."""
        found = self.operators.get(operator)
        if found is None or len(found.address) < 2 or found.epoch_scope:
            return None
        depth = 3 if self._in_epoch_scope(found.address[:3]) else 2
        return self._by_address.get(found.address[:depth])

    def topological_order(self) -> List[Operator]:
        """The top-level operators, every one after all that feed it; raises ValueError if
        the root scopes' channels form a cycle (they cannot in timely: loops live in scopes)."""
        operators = self.top_level()
        indegree = {op.id: 0 for op in operators}
        for e in self.edges.values():
            indegree[e.target] = indegree.get(e.target, 0) + 1
        ready = sorted(i for i, d in indegree.items() if d == 0)
        order: List[int] = []
        seen: Set[int] = set()
        while ready:
            current = ready.pop(0)
            order.append(current)
            seen.add(current)
            for e in self.outputs(current):
                indegree[e.target] -= 1
                if indegree[e.target] == 0:
                    ready.append(e.target)
                    ready.sort()
        if len(order) != len(indegree):
            raise ValueError("the dataflow graph has a cycle among its top-level operators")
        return [self.operators[i] for i in order if i in self.operators]

    def copy(self) -> "Graph":
        """A copy that later additions to this graph leave unchanged (operators and edges
        are immutable; the dicts are copied)."""
        return Graph(dict(self.operators), dict(self.edges), dict(self.boundaries), dict(self.exits),
                     dict(self._by_address), list(self._pending))

    @staticmethod
    def build(operators: Sequence[Operator], edges: Sequence[Edge]) -> "Graph":
        """A graph of the given operators and edges (for hand-built examples and tests)."""
        graph = Graph()
        for op in operators:
            graph.add_operator(op)
        for e in edges:
            graph.edges[e.channel] = e
        return graph
