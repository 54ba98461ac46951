"""Hand-built and random inputs of the analysis's per-partition kernels: rows of one worker
(`row`, `delivery`, as `WORKER_ROWS`), activities of one slice (`act`, `wait`, as `SLICED`),
random valid timelines whole and cut by a slice's end (hypothesis strategies), random
simulated workers, and the properties every critical path has (`assert_complete_path`).
Timelines and simulated workers come with or without the background of
`timely_py.analysis.background` (scope runs and program time in gaps, the time before a worker
started and after it finished)."""

from hypothesis import assume
from hypothesis import strategies as st
from timely_py.analysis.schemas import SLICED, WORKER_ROWS


def row(row_type, start, end=None, **columns):
    base = {name: None for name in WORKER_ROWS.names}
    base.update(columns, row_type=row_type, worker=columns.get("worker", 1), start=start)
    base["end"] = start if end is None else end
    return base



def delivery(comm_id, send, arrival, read, source=0, known=True, kind="data_message"):
    return row(
        "delivery", read, comm_id=comm_id, comm_type=kind, source_worker=source, send=send, arrival=arrival,
        read=read, arrival_known=known,
    )  # fmt: skip



def act(worker, kind, start, end, slice_start=0, slice_end=1000, **columns):
    base = {name: None for name in SLICED.names}
    base.update(columns, worker=worker, type=kind, start=start, end=end, slice=0)
    base.update(slice_start=slice_start, slice_end=slice_end)
    base.setdefault("activity_id", worker * 1000 + start)
    return base



def wait(worker, start, end, source, send, comm=1):
    return act(
        worker, "waiting", start, end, ended_by=comm, ended_by_type="data_message", ended_by_worker=source,
        ended_by_send=send,
    )  # fmt: skip



#: Activity types in which a worker was not running (`timely_py.analysis.critical_path.ABSENT`).
ABSENT = ("not_started", "finished")


def with_background(rows, fill):
    """`rows` (a timeline) with, on each worker, `not_started` from the first moment of all
    to its first activity and `finished` from its last to the last moment of all, and the
    gaps between its activities for which `fill(worker, start, end)` gives a type (`scope`,
    `program`) covered by an activity of that type."""
    first, last = min(r["start"] for r in rows), max(r["end"] for r in rows)
    added = []
    for worker in sorted({r["worker"] for r in rows}):
        mine = sorted((r for r in rows if r["worker"] == worker), key=lambda r: r["start"])
        for earlier, later in zip(mine, mine[1:]):
            kind = fill(worker, earlier["end"], later["start"]) if later["start"] > earlier["end"] else None
            if kind:
                added.append(act(worker, kind, earlier["end"], later["start"], activity_id=10_000 + len(added)))
        added.append(act(worker, "not_started", first, mine[0]["start"], activity_id=10_000 + len(added)))
        added.append(act(worker, "finished", mine[-1]["end"], last, activity_id=10_000 + len(added)))
    return rows + [r for r in added if r["end"] > r["start"]]


@st.composite
def timelines(draw):
    """Random valid activity timelines of a slice: per worker, a sequence of operator runs
    and gaps (short ones, and long ones where a worker sleeps unrecorded); some runs are
    turned into waits, each ended by a message sent from a run of another worker that is kept
    a run (the sender is not waiting when it sends); and, half of the time, the background
    (:func:`with_background`, some gaps filled)."""
    workers = draw(st.integers(1, 4))
    runs = []
    for worker in range(workers):
        t = draw(st.integers(0, 20))
        for _ in range(draw(st.integers(1, 8))):
            start = t + draw(st.integers(0, 10) | st.integers(30, 80))
            end = start + draw(st.integers(1, 40))
            runs.append(act(worker, "operator", start, end, activity_id=len(runs)))
            t = end
    kept = set()
    for index in draw(st.lists(st.integers(0, len(runs) - 1), max_size=6, unique=True)):
        target = runs[index]
        senders = [
            i for i, r in enumerate(runs)
            if r["worker"] != target["worker"] and r["type"] == "operator" and r["start"] < target["end"] and i != index
        ]  # fmt: skip
        if index in kept or not senders:
            continue
        sender = runs[draw(st.sampled_from(senders))]
        send = draw(st.integers(sender["start"] + 1, min(sender["end"], target["end"])))
        kept.add(runs.index(sender))
        runs[index] = dict(wait(target["worker"], target["start"], target["end"], sender["worker"], send, comm=index))
    if draw(st.booleans()):
        fills = st.sampled_from([None, "program", "scope"])
        runs = with_background(runs, lambda worker, start, end: draw(fills))
    return runs



def cut(rows, at):
    """``rows`` projected onto a slice that ends at ``at`` (definition 3.4): what starts later
    belongs to the next slice, what crosses ``at`` is cut there."""
    return [dict(r, end=min(r["end"], at), slice_end=at) for r in rows if r["start"] < at]



def waits_at(rows, t):
    """The waits covering the moment before ``t``."""
    return [r for r in rows if r["type"] == "waiting" and r["start"] < t <= r["end"]]



def everyone_waits(rows, t):
    """Whether every worker running at ``t`` (an activity ends at or after it, and it has not
    finished or not started there) is in a wait there, and some worker is."""
    absent = {r["worker"] for r in rows if r["type"] in ABSENT and r["start"] < t <= r["end"]}
    running = {r["worker"] for r in rows if r["end"] >= t} - absent
    return bool(running) and running == {r["worker"] for r in waits_at(rows, t)}



@st.composite
def sliced_timelines(draw, waiting_at_end=None):
    """:func:`timelines` cut by a slice's end: anywhere (``waiting_at_end=None``), or at a
    moment where every running worker waits, each for a message in flight there (``"in
    flight"``) or each for one sent after it (``"sent later"``)."""
    rows = draw(timelines())
    first, last = min(r["start"] for r in rows), max(r["end"] for r in rows)
    moments = [t for t in range(first + 1, last + 1) if waiting_at_end is None or everyone_waits(cut(rows, t), t)]
    if waiting_at_end is not None:
        later = waiting_at_end == "sent later"
        moments = [t for t in moments if all((w["ended_by_send"] > t) == later for w in waits_at(rows, t))]
    assume(moments)
    return cut(rows, draw(st.sampled_from(moments)))



def assert_complete_path(path, start, end, valid=True):
    """The properties of every critical path: complete, no waiting edge, the snapshot's length,
    from its end to its start, connected (across a communication or an ``all_waiting`` edge
    to the worker it names in ``source_worker``, otherwise on the same worker); and in a
    ``valid`` trace no ``all_waiting`` edge (there is always a message or a worker to follow)."""
    assert path and all(e["complete"] for e in path)
    assert all(e["type"] != "waiting" for e in path)
    assert not valid or all(e["type"] != "all_waiting" for e in path)
    assert sum(e["duration"] for e in path) == end - start
    assert path[0]["end"] == end and path[-1]["start"] == start
    for later, earlier in zip(path, path[1:]):
        assert earlier["end"] == later["start"]  # connected in time
        moved = later["type"] in ("data_message", "progress_message", "all_waiting")
        assert earlier["worker"] == (later["source_worker"] if moved else later["worker"])



@st.composite
def simulated_workers(draw):
    """Random kernel input (:data:`WORKER_ROWS`) of 1 to 3 simulated workers: the worker whose
    clock is earliest acts next; it runs an operator (useful when it reads the messages that
    have arrived, or by chance: input), which may send messages to other workers, or it parks
    when nothing has arrived, until its next message arrives (wake `data`) or for a while
    (wake `activation` or `timeout`). Messages take 0 to 20 ns to arrive. Half of the time
    each worker also has its `lifetime`, the `trace` bounds and, where it sent into an input
    just before a step, `input` rows (the background's material)."""
    workers = draw(st.integers(1, 3))
    clock, inbox, rows, comm = [0] * workers, [[] for _ in range(workers)], [], 0
    for _ in range(draw(st.integers(1, 25))):
        w = min(range(workers), key=lambda v: clock[v])
        arrived = [m for m in inbox[w] if m["arrival"] <= clock[w]]
        if not arrived and draw(st.booleans()):
            later = min((m["arrival"] for m in inbox[w]), default=None)
            wake = "data" if later is not None else draw(st.sampled_from(["activation", "timeout"]))
            end = later + draw(st.integers(0, 5)) if later is not None else clock[w] + draw(st.integers(5, 50))
            rows.append(row("park", clock[w], end, worker=w, wake=wake))
            clock[w] = end
            continue
        start = clock[w] + draw(st.integers(0, 5))
        end = start + draw(st.integers(2, 30))
        for message in arrived:
            rows.append(delivery(message["comm_id"], message["send"], message["arrival"], start + 1, message["source"]))
            rows[-1]["worker"] = w
            inbox[w].remove(message)
        useful = bool(arrived) or draw(st.booleans())
        rows.append(row("step", start, end, worker=w))
        rows.append(row("operator", start, end, worker=w, operator=1, useful=useful))
        for target in draw(st.lists(st.integers(0, workers - 1), max_size=2)) if useful else []:
            if target != w:
                send = draw(st.integers(start + 1, end))
                message = {"comm_id": comm, "send": send, "arrival": send + draw(st.integers(0, 20)), "source": w}
                inbox[target].append(message)
                comm += 1
        clock[w] = end
    if draw(st.booleans()):
        rows += _background_rows(draw, rows)
    return rows


def _background_rows(draw, rows):
    """Each worker's `lifetime` (its own rows' span), the `trace` row (all workers' span) and
    `input` sends of operator 5 at the start of some steps."""
    own = [r for r in rows if r["row_type"] != "delivery"]
    first, last = min(r["start"] for r in own), max(r["end"] for r in own)
    added = []
    for w in sorted({r["worker"] for r in own}):
        mine = [r for r in own if r["worker"] == w]
        added.append(row("lifetime", min(r["start"] for r in mine), max(r["end"] for r in mine), worker=w))
        added.append(row("trace", first, last, worker=w))
        steps = [r for r in mine if r["row_type"] == "step"]
        added += [row("input", r["start"], worker=w, operator=5) for r in steps if draw(st.booleans())]
    return added

