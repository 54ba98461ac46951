"""Hand-built traces with known critical paths for the analysis tests, written in the trace
format with `tracedirs.write_trace` (times below are on process 0's clock; each process's
events are stamped on its own clock, `offset` ahead).

* `two_processes`: worker 0 (process 0) sends one data message and one progress batch to
  worker 1 (process 1, whose clock runs 5 us ahead), over the network with every buffer
  time known. Worker 1 runs an unproductive step, parks, is woken by the message, processes
  it, then runs nested user activities. Critical path (latest first): worker 1's user
  activities and the gaps before them, Sink, the rest of its park after the message arrived,
  the message, and worker 0's Source up to the send.
* `three_workers`: one process, three workers, local messages (arrival = send). A chain
  w0 -> w1 -> w2 -> w0 of messages ends a park, a park, and spinning (unproductive steps);
  then worker 0 waits for input. Slices of 500 ns from the first event (t = 50) cut the trace.
* `sleeping_sender`: one process, two workers. Worker 0 parks until worker 1's message
  arrives; worker 1 records nothing from 250 to 1150 (it sleeps), then sends it at 1200.
  Slices of 500 ns end at 550 and 1050 where worker 0 waits for a message not yet sent.
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

    def created(self, worker, t):
        for operator, name, address in OPERATORS:
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
    ("user", 1, 2500, 3100), ("user", 1, 2000, 2500), ("user", 1, 1900, 2000), ("unknown", 1, 1800, 1900),
    ("operator", 1, 1520, 1800), ("unknown", 1, 1500, 1520), ("parked", 1, 1400, 1500),
    ("data_message", 1, 1050, 1400), ("operator", 0, 1010, 1050), ("unknown", 0, 1000, 1010),
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
    ("waiting_for_input", 0, 400, 550), ("operator", 0, 300, 400), ("unknown", 0, 298, 300),
    ("parked", 0, 295, 298), ("data_message", 0, 295, 295), ("operator", 2, 185, 295), ("unknown", 2, 180, 185),
    ("data_message", 2, 180, 180), ("operator", 1, 170, 180), ("unknown", 1, 155, 170), ("parked", 1, 150, 155),
    ("data_message", 1, 150, 150), ("operator", 0, 100, 150), ("unknown", 0, 50, 100),
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
    [("data_message", 0, 550, 550), ("unknown", 1, 250, 550), ("operator", 1, 100, 250)],
    [("data_message", 0, 1050, 1050), ("unknown", 1, 550, 1050)],
    [
        ("operator", 0, 1310, 1400), ("unknown", 0, 1300, 1310), ("parked", 0, 1200, 1300),
        ("data_message", 0, 1200, 1200), ("operator", 1, 1150, 1200), ("unknown", 1, 1050, 1150),
    ],
]  # fmt: skip
