"""Hand-built signals, for working a policy through by hand (tests, docs, experiments)
without running a dataflow.

This module owns `signals_of` only.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .graph import Edge, Graph, Operator
from .signals import OperatorSignals, Signals, WorkerSignals

__all__ = ["signals_of"]


def signals_of(operators: Sequence[str], *, edges: Sequence[Tuple[str, str, float]], window_s: float,
               records_in: Optional[Mapping[str, int]] = None, records_out: Optional[Mapping[str, int]] = None,
               useful_s: Optional[Mapping[str, float]] = None, workers: Sequence[int] = (0,),
               start_s: float = 0.0) -> Signals:
    """Signals of a one-dataflow graph of the named `operators` (ids 1, 2, ... in that
    order) joined by `edges` ``(source, target, share)``: each edge carries ``share`` of its
    source's records out (1.0 for a plain channel). Totals are over all `workers` and are
    split evenly among them; `records_out` defaults to `records_in` (a selectivity of 1). The
    window starts at `start_s` seconds.

    >>> s = signals_of(["Input", "Map"], edges=[("Input", "Map", 1.0)], window_s=1.0,
    ...                records_in={"Map": 100}, records_out={"Input": 100}, useful_s={"Map": 0.5})
    >>> s.by_name("Map").true_processing_rate
    200.0
    """
    records_in = dict(records_in or {})
    records_out = dict(records_out or {})
    useful_s = dict(useful_s or {})
    ids = {name: index + 1 for index, name in enumerate(operators)}
    ops = [Operator(ids[name], (0, ids[name]), name) for name in operators]
    edge_list = [Edge(100 + n, ids[a], 0, ids[b], 0) for n, (a, b, _) in enumerate(edges)]
    graph = Graph.build(ops, edge_list)
    count = len(workers)
    result: Dict[int, OperatorSignals] = {}
    sources = {op.id for op in graph.sources()}
    for op in ops:
        total_in = records_in.get(op.name, 0)
        total_out = records_out.get(op.name, total_in)
        sent = {e.channel: round(total_out * share) for e, (_, _, share) in zip(edge_list, edges)
                if e.source == op.id}
        per: List[WorkerSignals] = []
        for index, w in enumerate(workers):
            per.append(WorkerSignals(
                worker=w, records_in=_share(total_in, index, count), records_out=_share(total_out, index, count),
                useful_s=useful_s.get(op.name, 0.0) / count, busy_s=useful_s.get(op.name, 0.0) / count,
            ))
        result[op.id] = OperatorSignals(op, window_s, tuple(per), sent, op.id in sources)
    start_ns = int(start_s * 1e9)
    return Signals(start_ns, start_ns + int(window_s * 1e9), tuple(workers), result, graph)


def _share(total: int, index: int, count: int) -> int:
    """Worker `index`'s part of `total` split as evenly as whole numbers allow."""
    return total // count + (1 if index < total % count else 0)
