"""Random inputs for the analysis's per-partition kernels, from a seeded generator, to hold
the native kernels to the Python reference on shapes the hand-built tests do not reach.

`worker_table(rng)` is one worker's `WORKER_ROWS`: any mix of operator runs (useful or not),
steps, nested scope runs, parks (woken by data, progress, activation, a timeout or nothing
recorded), progress instants, nested user activities, input sends, lifetimes and trace bounds
(none, one or several) and deliveries (known and unknown arrivals, repeated ids, messages
read before others arrived), on a small time range so that times often coincide.
`slice_table(rng)` is one slice's `SLICED` activities: per worker a timeline that never
overlaps itself, of operator runs, user activities, scope runs, program time, `parked`,
`waiting_for_input`, `not_started`, `finished` and waits ended by messages (some without a
message, some sent after the wait ended, some from a worker that has no activity in the
slice), with the slice's bounds inside or around them.
`in_chunks(table, rng)` cuts a table into several record batches.
"""

import pyarrow as pa
from timely_py.analysis.schemas import SLICED, WORKER_ROWS

WAKES = ["data", "progress", "activation", "timeout", None]


def _blank(schema):
    return {name: None for name in schema.names}


def _own_row(rng, worker, horizon):
    kind = rng.choice(["operator", "operator", "step", "park", "instant", "user", "other", "scope", "input",
                       "lifetime", "trace"])  # fmt: skip
    start = rng.randrange(horizon)
    end = start if kind in ("instant", "input") else start + rng.randrange(0, horizon // (1 if kind == "trace" else 4))
    row = dict(_blank(WORKER_ROWS), row_type=kind, worker=worker, start=start, end=end)
    if kind == "operator":
        row.update(operator=rng.randrange(4), useful=rng.choice([True, False, None]), name=rng.choice(["Map", None]))
    elif kind == "park":
        row.update(wake=rng.choice(WAKES))
    elif kind == "user":
        row.update(name=rng.choice(["load", "compute"]), depth=rng.choice([0, 1, 2, None]))
    elif kind in ("step", "scope"):
        row.update(operator=rng.randrange(90, 93), useful=rng.choice([True, False]), depth=rng.choice([1, 2, 60, None]))
    elif kind == "input":
        row.update(operator=rng.choice([5, 6, None]))
    return row


def _delivery(rng, worker, horizon):
    send = rng.randrange(horizon)
    arrival = send + rng.randrange(horizon // 5 + 1)
    read = arrival + rng.randrange(horizon // 5 + 1)
    return dict(
        _blank(WORKER_ROWS), row_type="delivery", worker=worker, start=read, end=read, comm_id=rng.randrange(30),
        comm_type=rng.choice(["data_message", "progress_message", None]), source_worker=rng.choice([0, 1, 2, None]),
        send=send, arrival=arrival, read=read, arrival_known=rng.choice([True, False, None]),
    )  # fmt: skip


def worker_table(rng, size=None):
    """One worker's rows (:data:`WORKER_ROWS`), `size` of them (random when None)."""
    worker, horizon = rng.randrange(3), rng.choice([50, 200, 1000])
    size = rng.randrange(0, 60) if size is None else size
    rows = [_delivery(rng, worker, horizon) if rng.random() < 0.3 else _own_row(rng, worker, horizon) for _ in range(size)]
    return pa.Table.from_pylist(rows, schema=WORKER_ROWS)


def _activity(rng, worker, start, end, workers):
    kind = rng.choice(["operator", "operator", "user", "waiting", "waiting", "waiting_for_input", "parked", "scope",
                       "program", "not_started", "finished"])  # fmt: skip
    row = dict(_blank(SLICED), worker=worker, type=kind, start=start, end=end, activity_id=rng.randrange(1 << 20))
    if kind in ("operator", "user", "scope", "program"):
        row.update(operator=rng.randrange(4), name=rng.choice(["Map", "load", None]), depth=rng.choice([0, 1, None]))
    if kind == "waiting" and rng.random() < 0.9:
        row.update(
            ended_by=rng.randrange(100), ended_by_type=rng.choice(["data_message", "progress_message"]),
            ended_by_worker=rng.choice([*range(workers), workers + 3, None]),
            ended_by_send=rng.choice([None, start + rng.randrange(-20, max(1, end - start) + 20)]),
        )  # fmt: skip
    return row


def slice_table(rng, size=None):
    """One slice's activities (:data:`SLICED`): per worker a timeline that never overlaps."""
    workers = rng.randrange(1, 5)
    rows = []
    for worker in range(workers):
        t = rng.randrange(0, 30)
        for _ in range(rng.randrange(0, 12) if size is None else size):
            start = t + rng.choice([0, 0, rng.randrange(1, 15)])
            end = start + rng.randrange(0, 40)
            rows.append(_activity(rng, worker, start, end, workers))
            t = end
    rng.shuffle(rows)
    bounds = dict(slice=rng.randrange(10), slice_start=rng.randrange(-10, 40), slice_end=rng.randrange(100, 600))
    return pa.Table.from_pylist([dict(r, **bounds) for r in rows], schema=SLICED)


def in_chunks(table, rng):
    """`table` as several record batches (cut at random rows, some of them empty)."""
    cuts = sorted(rng.randrange(table.num_rows + 1) for _ in range(rng.randrange(1, 4)))
    edges = [0, *cuts, table.num_rows]
    return pa.Table.from_batches(
        [b for a, z in zip(edges, edges[1:]) for b in table.slice(a, z - a).to_batches()] or [], schema=table.schema
    )
