"""Hand-built traces with known critical paths for the analysis tests, written in the trace
format with `tracedirs.write_trace` (times below are on process 0's clock; each process's
events are stamped on its own clock, `offset` ahead).

* `two_processes`: worker 0 (process 0) sends one data message and one progress batch to
  worker 1 (process 1, whose clock runs 5 us ahead), over the network with every buffer
  time known. Worker 1 runs an unproductive step, parks, is woken by the message, processes
  it, then runs nested user activities. Critical path (latest first): worker 1's user
  activities, the program's time and its root scope's before them, Sink, the rest of its
  park after the message arrived, the message, worker 0's Source up to the send, its root
  scope and the program's time since the dataflow was built (at 900).
* `three_workers`: one process, three workers, local messages (arrival = send). A chain
  w0 -> w1 -> w2 -> w0 of messages ends a park, a park, and spinning (unproductive steps);
  then worker 0 waits for input. Slices of 500 ns from the first event (t = 50) cut the trace.
* `sleeping_sender`: one process, two workers. Worker 0 parks until worker 1's message
  arrives; worker 1 records nothing from 255 to 1145 (it sleeps between steps: the program's
  time), then sends it at 1200. Slices of 500 ns end at 550 and 1050 where worker 0 waits
  for a message not yet sent and worker 1 runs the program: the path starts there.
* `late_and_early`: two processes of one worker (process 1's clock 5 us ahead), a dataflow
  with an Input, a loop scope around Map, and Sink. Process 1 starts 1500 ns after process
  0, and process 0 ends 1900 ns before process 1. Each worker sends into its Input between
  steps (the program's own time), runs the loop and Sink in steps, and has time between
  steps in which it sends nothing: every background type occurs (`BACKGROUND_ACTIVITIES`).
"""

from support.tracedirs import process_json, write_trace

OPERATORS = [(0, "Dataflow", [0]), (1, "Source", [0, 1]), (2, "Sink", [0, 2])]


class Trace:
    """Rows of a trace under construction."""

    def __init__(self, workers_per_process, offsets):
        self.wpp, self.offsets, self.rows = workers_per_process, offsets, []

    def event(self, worker, t, kind, **columns):
        process = worker // self.wpp
        self.rows.append(
            {"process": process, "worker": worker, "time_ns": t + self.offsets[process], "kind": kind, **columns}
        )

    def created(self, worker, t, operators=OPERATORS):
        for operator, name, address in operators:
            self.event(worker, t, "operator_created", operator=operator, name=name, address=address)

    def run(self, worker, operator, start, end, useful, inside=()):
        """A schedule of `operator` with `inside` events (t, kind, columns) in between."""
        self.event(worker, start, "schedule_start", operator=operator)
        for t, kind, columns in inside:
            self.event(worker, t, kind, **columns)
        self.event(worker, end, "schedule_stop", operator=operator, useful=useful)

    def step(self, worker, start, end, runs=()):
        """A step of the dataflow (operator 0) around operator runs (operator, start, end, useful, inside)."""
        self.event(worker, start, "schedule_start", operator=0)
        for run in runs:
            self.run(worker, *run)
        self.event(worker, end, "schedule_stop", operator=0, useful=any(r[3] for r in runs))

    def park(self, worker, start, end, wake):
        self.event(worker, start, "park", duration_ns=None)
        self.event(worker, end, "unpark", wake=wake)

    def write(self, directory, processes):
        metas = {p: process_json(p, processes, self.wpp, offset_ns=self.offsets[p]) for p in range(processes)}
        for p, meta in metas.items():
            meta["start_time_ns"] = meta["clock"]["measured_at_ns"] = 0
            meta["clock_history"] = [] if p == 0 else [meta["clock"]]
            meta["clock"]["error_ns"] = 0 if p == 0 else 10
        return write_trace(directory, sorted(self.rows, key=lambda r: (r["worker"], r["time_ns"])), metas)


#: Process 1's clock is this far ahead of process 0's in `two_processes`.
SKEW = 5_000

MESSAGE = dict(channel=0, source_worker=0, target_worker=1, seq=0)
PROGRESS = dict(channel=1, address=[0], source_worker=0, seq=0, records=1)


def two_processes(directory):
    trace = Trace(1, {0: 0, 1: SKEW})
    for worker in (0, 1):
        trace.created(worker, 900)
    send = (1050, "message_send", dict(records=4, **MESSAGE))
    trace.step(0, 1000, 1110, [(1, 1010, 1100, True, [send])])
    trace.event(0, 1105, "progress_send", **PROGRESS)
    trace.event(0, 1106, "progress_recv", target_worker=0, **PROGRESS)
    trace.event(0, 1120, "network_send_start", channel_kind="data", bytes=64, **MESSAGE)
    trace.event(0, 1130, "network_send_start", channel=1, channel_kind="progress", source_worker=0,
                target_worker=1, seq=0, bytes=32)  # fmt: skip
    trace.park(0, 1200, 3000, "timeout")
    trace.step(0, 3000, 3010, [(1, 3002, 3008, False)])
    trace.step(1, 1000, 1020, [(2, 1005, 1010, False)])
    trace.park(1, 1030, 1500, "data")
    trace.event(1, 1400, "network_recv_end", channel_kind="data", bytes=64, **MESSAGE)
    trace.step(1, 1510, 1810, [(2, 1520, 1800, True, [(1530, "message_recv", dict(records=4, **MESSAGE))])])
    trace.event(1, 1700, "network_recv_end", channel=1, channel_kind="progress", source_worker=0,
                target_worker=1, seq=0, bytes=32)  # fmt: skip
    trace.event(1, 1850, "progress_recv", target_worker=1, **PROGRESS)
    trace.event(1, 1900, "activity_start", name="report")
    trace.event(1, 2000, "activity_start", name="format")
    trace.event(1, 2500, "activity_stop", name="format")
    trace.event(1, 3100, "activity_stop", name="report")
    return trace.write(directory, 2)


#: The critical path of `two_processes` (type, worker, start, end), latest first.
TWO_PROCESSES_PATH = [
    ("user", 1, 2500, 3100), ("user", 1, 2000, 2500), ("user", 1, 1900, 2000), ("program", 1, 1810, 1900),
    ("scope", 1, 1800, 1810), ("operator", 1, 1520, 1800), ("scope", 1, 1510, 1520), ("program", 1, 1500, 1510),
    ("parked", 1, 1400, 1500), ("data_message", 1, 1050, 1400), ("operator", 0, 1010, 1050),
    ("scope", 0, 1000, 1010), ("program", 0, 900, 1000),
]  # fmt: skip


def _message(source, target, seq=0):
    return dict(channel=0, source_worker=source, target_worker=target, seq=seq, records=1)


def three_workers(directory):
    trace = Trace(3, {0: 0})
    for worker in range(3):
        trace.created(worker, 50)
    to1, to2, to0 = _message(0, 1), _message(1, 2), _message(2, 0)
    trace.step(0, 100, 205, [(1, 100, 200, True, [(150, "message_send", to1)])])
    trace.park(0, 250, 298, "data")
    trace.step(0, 299, 405, [(1, 300, 400, True, [(310, "message_recv", to0)])])
    trace.park(0, 450, 900, "activation")
    trace.step(0, 990, 1105, [(1, 1000, 1100, True)])
    trace.step(1, 50, 60, [(2, 52, 58, False)])
    trace.park(1, 70, 155, "data")
    trace.step(1, 165, 405, [(2, 170, 400, True, [(175, "message_recv", to1), (180, "message_send", to2)])])
    for start, end in ((50, 60), (100, 110), (140, 158)):
        trace.step(2, start, end, [(2, start + 2, end - 2, False)])
    trace.step(2, 183, 302, [(2, 185, 300, True, [(190, "message_recv", to2), (295, "message_send", to0)])])
    return trace.write(directory, 1)


#: The critical path of `three_workers`' first slice ([50, 550)), latest first.
THREE_WORKERS_FIRST_SLICE = [
    ("waiting_for_input", 0, 400, 550), ("operator", 0, 300, 400), ("scope", 0, 299, 300), ("program", 0, 298, 299),
    ("parked", 0, 295, 298), ("data_message", 0, 295, 295), ("operator", 2, 185, 295), ("scope", 2, 183, 185),
    ("program", 2, 180, 183), ("data_message", 2, 180, 180), ("operator", 1, 170, 180), ("scope", 1, 165, 170),
    ("program", 1, 155, 165), ("parked", 1, 150, 155), ("data_message", 1, 150, 150), ("operator", 0, 100, 150),
    ("program", 0, 50, 100),
]  # fmt: skip


def sleeping_sender(directory):
    trace = Trace(2, {0: 0})
    for worker in range(2):
        trace.created(worker, 50)
    to0 = _message(1, 0)
    trace.step(0, 100, 205, [(1, 100, 200, True)])
    trace.park(0, 210, 1300, "data")
    trace.step(0, 1305, 1405, [(1, 1310, 1400, True, [(1320, "message_recv", to0)])])
    trace.step(1, 100, 255, [(2, 100, 250, True)])
    trace.step(1, 1145, 1305, [(2, 1150, 1300, True, [(1200, "message_send", to0)])])
    return trace.write(directory, 1)


#: The critical paths of `sleeping_sender`'s three slices of 500 ns, latest edge first.
SLEEPING_SENDER_PATHS = [
    [("program", 1, 255, 550), ("scope", 1, 250, 255), ("operator", 1, 100, 250), ("program", 1, 50, 100)],
    [("program", 1, 550, 1050)],
    [
        ("scope", 0, 1400, 1405), ("operator", 0, 1310, 1400), ("scope", 0, 1305, 1310), ("program", 0, 1300, 1305),
        ("parked", 0, 1200, 1300), ("data_message", 0, 1200, 1200), ("operator", 1, 1150, 1200),
        ("scope", 1, 1145, 1150), ("program", 1, 1050, 1145),
    ],
]  # fmt: skip


#: The operators of `late_and_early`: the root scope, an Input, a loop scope around Map, Sink.
LOOP_OPERATORS = [
    (0, "Dataflow", [0]), (1, "Input", [0, 1]), (2, "Loop", [0, 2]), (3, "Map", [0, 2, 1]), (4, "Sink", [0, 3]),
]  # fmt: skip
#: The data channel from the Input (operator 1 of the root scope) into the loop.
INPUT_CHANNEL = 10


def _loop_step(trace, worker, start, end, loop, map_run, message, after=()):
    """A step (the root scope's run) around a run of the loop around a useful run of Map that
    reads `message`, then the operator runs `after` (operator, start, end, useful)."""
    trace.event(worker, start, "schedule_start", operator=0)
    trace.event(worker, loop[0], "schedule_start", operator=2)
    trace.run(worker, 3, *map_run, True, [(map_run[0] + 10, "message_recv", message)])
    trace.event(worker, loop[1], "schedule_stop", operator=2, useful=True)
    for run in after:
        trace.run(worker, *run)
    trace.event(worker, end, "schedule_stop", operator=0, useful=True)


def late_and_early(directory):
    trace = Trace(1, {0: 0, 1: SKEW})
    for worker, t in ((0, 1000), (1, 2500)):
        trace.created(worker, t, LOOP_OPERATORS)
        trace.event(worker, t, "channel_created", channel=INPUT_CHANNEL, channel_kind="data", address=[0],
                    source_operator=1, source_port=0, target_operator=2, target_port=0)  # fmt: skip
    to0, to1 = (dict(channel=INPUT_CHANNEL, source_worker=w, target_worker=w, seq=0, records=3) for w in (0, 1))
    trace.event(0, 1900, "message_send", **to0)  # the program feeds the input, then steps
    _loop_step(trace, 0, 2000, 2300, (2050, 2250), (2100, 2200), to0, after=[(4, 2260, 2290, True)])
    trace.step(0, 3000, 3100, [(4, 3010, 3090, True)])  # after 700 ns of the program's own code
    trace.step(1, 2600, 2700, [(4, 2610, 2690, True)])
    trace.event(1, 4800, "message_send", **to1)
    _loop_step(trace, 1, 4900, 5000, (4905, 4995), (4920, 4980), to1)
    return trace.write(directory, 2)


#: The activities of `late_and_early` (type, worker, name, start, end), by worker and time.
BACKGROUND_ACTIVITIES = [
    ("program", 0, "Input", 1000, 2000), ("scope", 0, "Dataflow", 2000, 2050), ("scope", 0, "Loop", 2050, 2100),
    ("operator", 0, "Map", 2100, 2200), ("scope", 0, "Loop", 2200, 2250), ("scope", 0, "Dataflow", 2250, 2260),
    ("operator", 0, "Sink", 2260, 2290), ("scope", 0, "Dataflow", 2290, 2300), ("program", 0, None, 2300, 3000),
    ("scope", 0, "Dataflow", 3000, 3010), ("operator", 0, "Sink", 3010, 3090), ("scope", 0, "Dataflow", 3090, 3100),
    ("finished", 0, None, 3100, 5000),
    ("not_started", 1, None, 1000, 2500), ("program", 1, None, 2500, 2600), ("scope", 1, "Dataflow", 2600, 2610),
    ("operator", 1, "Sink", 2610, 2690), ("scope", 1, "Dataflow", 2690, 2700), ("program", 1, "Input", 2700, 4900),
    ("scope", 1, "Dataflow", 4900, 4905), ("scope", 1, "Loop", 4905, 4920), ("operator", 1, "Map", 4920, 4980),
    ("scope", 1, "Loop", 4980, 4995), ("scope", 1, "Dataflow", 4995, 5000),
]  # fmt: skip


#: A root scope, an Input, a loop scope (depth 1) around a scope (depth 2) around Map, and Sink.
DEEP_OPERATORS = [
    (0, "Dataflow", [0]), (1, "Input", [0, 1]), (2, "Loop", [0, 2]), (3, "Inner", [0, 2, 1]),
    (4, "Map", [0, 2, 1, 1]), (5, "Sink", [0, 3]),
]  # fmt: skip



def every_kind(directory):
    """Two processes of one worker (process 1's clock ahead) with every event kind the pieces read."""
    trace = Trace(1, {0: 0, 1: SKEW})
    to1, to0 = (dict(channel=0, source_worker=s, target_worker=t, seq=0, records=2) for s, t in ((0, 1), (1, 0)))
    for worker, t in ((0, 1000), (1, 1500)):
        trace.created(worker, t, DEEP_OPERATORS)
        trace.event(worker, t, "channel_created", channel=INPUT_CHANNEL, channel_kind="data", address=[0],
                    source_operator=1, source_port=0, target_operator=2, target_port=0)  # fmt: skip
    feed = dict(channel=INPUT_CHANNEL, source_worker=0, target_worker=0, records=3)
    trace.event(0, 1100, "message_send", seq=0, **feed)  # the program feeds its input
    trace.event(0, 1150, "message_send", seq=1, **feed)
    trace.event(0, 1200, "schedule_start", operator=0)
    trace.event(0, 1210, "schedule_start", operator=2)
    trace.event(0, 1220, "schedule_start", operator=3)
    trace.run(0, 4, 1230, 1300, True, [(1240, "message_recv", dict(feed, seq=0)), (1260, "message_send", to1)])
    trace.event(0, 1310, "activity_start", name="outer")
    trace.event(0, 1320, "activity_start", name="inner")
    trace.event(0, 1330, "activity_stop", name="inner")
    trace.event(0, 1340, "activity_stop", name="outer")
    trace.run(0, 4, 1350, 1400, False)
    trace.event(0, 1500, "activity_start", name="blink")  # empty, start and stop at one moment
    trace.event(0, 1500, "activity_stop", name="blink")
    trace.event(0, 1580, "schedule_stop", operator=3, useful=True)
    trace.event(0, 1590, "schedule_stop", operator=2, useful=True)
    trace.run(0, 5, 1592, 1598, True)
    trace.event(0, 1599, "progress_send", **PROGRESS)  # two instants at one moment
    trace.event(0, 1599, "progress_push", channel=1)
    trace.event(0, 1600, "schedule_stop", operator=0, useful=True)
    trace.park(0, 1700, 1900, "data")
    trace.event(0, 1850, "network_recv_end", channel_kind="data", bytes=64, **to0)
    trace.park(0, 1950, 1960, "timeout")
    trace.step(0, 2000, 2100, [(5, 2010, 2090, True, [(2020, "message_recv", to0)])])
    trace.event(0, 2200, "schedule_start", operator=5)  # never stopped
    trace.event(0, 2250, "unpark", wake="timeout")  # no park before it
    trace.event(0, 2260, "activity_stop", name="stray")  # no start before it
    trace.event(0, 2300, "network_send_start", channel_kind="data", bytes=64, **to1)  # not the worker's own
    trace.step(1, 1600, 1700, [(5, 1610, 1690, True)])
    trace.step(1, 1750, 1850, [(5, 1760, 1840, True, [(1800, "message_send", to0)])])
    trace.event(1, 1810, "network_send_start", channel_kind="data", bytes=64, **to0)
    trace.event(1, 1860, "progress_recv", target_worker=1, **PROGRESS)
    trace.event(1, 1900, "activity_start", name="load")
    trace.event(1, 2000, "activity_stop", name="load")
    trace.park(1, 2050, 2380, "data")
    trace.event(1, 2350, "network_recv_end", channel_kind="data", bytes=64, **to1)
    trace.event(1, 2385, "message_send", **dict(feed, source_worker=1, target_worker=1, seq=0))
    trace.step(1, 2390, 2500, [(5, 2400, 2490, True, [(2410, "message_recv", to1)])])
    return trace.write(directory, 2)


#: The tables `analyze` writes, for comparing two runs of it table by table.
ANALYSIS_TABLES = [
    "communications", "activities", "critical_path", "slices", "profile", "profile_type", "profile_operator",
    "profile_worker", "profile_contributor_worker", "imbalance", "slack",
]  # fmt: skip

#: Every hand-built trace, by name.
BUILDERS = {
    "every_kind": every_kind, "two_processes": two_processes, "three_workers": three_workers,
    "sleeping_sender": sleeping_sender, "late_and_early": late_and_early,
}  # fmt: skip


def write_all(root):
    """Writes every hand-built trace under `root`; returns their directories by name."""
    for name, build in BUILDERS.items():
        build(root / name)
    return {name: root / name for name in BUILDERS}


def ordered(rows):
    """Rows in one order that only depends on their values (nulls and all)."""
    return sorted(rows, key=repr)


def written_tables(result):
    """Each table of an analysis's `result`: its schema (metadata left out) and rows, sorted."""
    import pyarrow.parquet as pq

    tables = {name: pq.read_table(result.tables[name]) for name in ANALYSIS_TABLES}
    return {name: (table.schema.remove_metadata(), ordered(table.to_pylist())) for name, table in tables.items()}


def assert_same_tables(before, after):
    """Two analyses wrote the same tables: schemas, rows (sorted, floats exactly), the ordered
    tables in the same order, and the same headline."""
    import pyarrow.parquet as pq

    tables_before, tables_after = written_tables(before), written_tables(after)
    for table in ANALYSIS_TABLES:
        schema_before, schema_after = tables_before[table][0], tables_after[table][0]
        assert schema_after == schema_before, f"{table}: {schema_after} / {schema_before}"
        assert tables_after[table][1] == tables_before[table][1], table
    for ordered_table in ("profile", "profile_contributor_worker", "slack"):  # written in Spark's order
        rows = [pq.read_table(r.tables[ordered_table]).to_pylist() for r in (before, after)]
        assert rows[1] == rows[0], ordered_table
    assert after.top == before.top and after.finding == before.finding
