"""Type stubs for timely_py._core, the Rust engine's Python module."""

import os
from types import TracebackType
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Sequence, Tuple, TypedDict, TypeVar, Union, final

Time = Union[int, Tuple[int, ...]]
"""A timestamp: an int epoch at a dataflow's root, a flat tuple (epoch, i1, ...) in loops, one
coordinate per enclosing loop, as deep as loops nest."""

R = TypeVar("R")

#: What the name of a keyed operator's epoch scope starts with (the autoscaler looks through it).
EPOCH_SCOPE_PREFIX: str

class TimelyError(Exception):
    """Base class of timely_py's own errors."""

class DataflowError(TimelyError):
    """A dataflow was described incorrectly."""

class WorkerCancelled(TimelyError):
    """Raised in a worker that stops because another worker failed or the run was interrupted."""

class ClusterError(TimelyError):
    """The processes of a cluster could not connect, or one of them was lost while running."""

class LeavingError(TimelyError):
    """An input handle refused records, or a source used a capability that was released: its
    worker's process is leaving the cluster (``worker.leaving``). Nothing of the refused
    ``send``/``send_batch`` was accepted; what the handle accepted before, and what the source
    gave before, is delivered. Letting it end ``main`` on a leaving worker ends the worker's
    run as a return of None would, and letting it out of a source's logic there ends that run
    quietly: the process still leaves cleanly. Once the run is being stopped (Ctrl-C), a
    refused send raises ``WorkerCancelled`` instead."""

def execute(
    main: Callable[[Worker], R],
    workers: int = 1,
    *,
    trace_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    trace_events: Optional[str] = None,
    trace_flush: Optional[float] = None,
    trace_callback: Optional[Callable[[int, Any], Any]] = None,
) -> list[R]:
    """Runs `main(worker)` on `workers` worker threads; returns their results in worker order.

    `trace_dir` writes a trace of the run there (docs/trace-format.md); `trace_events` names
    the event classes to record, comma-separated (default: all); `trace_flush` is how often,
    in seconds, trace files are closed (default 1); `trace_callback(worker, batch)` receives
    every batch of events as a `pyarrow.RecordBatch`, on the thread that called `execute`."""

def execute_from_args(
    argv: Sequence[str],
    main: Callable[[Worker], R],
    peer_timeout: Optional[float] = None,
    *,
    trace_callback: Optional[Callable[[int, Any], Any]] = None,
) -> list[R]:
    """Like `execute`, configured from command-line arguments: `-w N` threads per process,
    `-n N` processes, `-p I` this process, `-h FILE` hostfile (default `localhost:2101+i`),
    `--join W --nn N [--gone P,Q]` to join a running cluster (`docs/rescaling.md`),
    `--peer-timeout SECONDS`, `--insecure`, `--receive-budget BYTES` and `--early-bytes BYTES`
    (what received messages may hold in memory, over `TIMELY_RECEIVE_BUDGET` and
    `TIMELY_EARLY_BYTES`; `docs/networking.md`), `--trace DIR` a trace of the run (with
    `--trace-events LIST`, `--trace-flush SECONDS`; or the environment variables
    `TIMELY_TRACE_DIR`, `TIMELY_TRACE_EVENTS`, `TIMELY_TRACE_FLUSH`).

    Returns the results of this process's workers. A cluster's processes authenticate each
    other with `TIMELY_CLUSTER_ID` and `TIMELY_CLUSTER_SECRET` from the environment; without a
    secret, a hostfile naming any address that is not loopback is refused (unless
    `--insecure`). A lost process (closed, or silent for longer than the peer timeout) raises
    `ClusterError` in the others. The peer timeout is `--peer-timeout`, else `peer_timeout`,
    else `TIMELY_PEER_TIMEOUT`, else 10 s; a value that is not a positive number of seconds
    raises `ValueError`. `trace_callback(worker, batch)` receives every batch of this
    process's trace events as with `execute`; without `--trace DIR` the run is traced for
    the callback alone (no files; `TIMELY_TRACE_EVENTS` and `TIMELY_TRACE_FLUSH` apply)."""

def program_args(argv: Sequence[str]) -> list[str]:
    """The arguments of `argv` that are the program's own (without `-w`, `-n`, `-p`, `-h`,
    `--peer-timeout`, `--insecure`, `--receive-budget`, `--early-bytes`, `--trace` and its
    options)."""

def runtime_options() -> list[Tuple[list[str], bool, str]]:
    """Every option the runtime reads from a command line: ``(spellings, takes_value, help)``,
    the spelling it renders first (``["-w", "--workers", "--threads"]``)."""

def runtime_args(values: Dict[str, str]) -> list[str]:
    """The command line giving the runtime ``values``, keyed by an option's first long
    spelling (``{"processes": "2", "insecure": ""}`` gives ``["-n", "2", "--insecure"]``);
    ``ValueError`` for a key that is not an option of the runtime."""

def route_key(key: Any, peers: int) -> int:
    """The worker (of `peers`) that `exchange`, `count_by_key`, `aggregate` and the generic
    operators' `exchange=` send a record with key `key` to.

    Keys are None, bool, int, float, complex, other `numbers.Number` (Fraction, Decimal),
    str, bytes, and tuples and frozensets of keys; anything else raises `TypeError` naming
    its type. Keys that compare equal go to the same worker, in every thread and process. A
    number equal to an int (bool, `2.0`, `2.0**70`, `Fraction(4, 2)`, `Decimal(2)`) is that
    int, and an int goes to `key % peers`. Other keys go to `h % peers`, `h` a stable XXH3
    hash of the key's canonical form (str as UTF-8, bytes, tuples and frozensets by their
    elements, other numbers by Python's numeric hash, every NaN alike, None fixed)."""

def key_canonical_bytes(key: Any) -> bytes:
    """The canonical bytes of `key`, under which Megaphone keeps its state and moves it:
    equal exactly for keys that compare equal. `TypeError` for what is not a key."""

def key_from_canonical_bytes(data: bytes) -> Any:
    """The key whose canonical bytes are `data` (its canonical value: `True` as `1`, a
    namedtuple as a tuple, `Fraction(1, 2)` as `0.5`); `ValueError` for any other bytes."""

def worker_activities(table: Any) -> Any:
    """The critical-path analysis's wait-state kernel in Rust: one worker's rows
    (`timely_py.analysis.schemas.WORKER_ROWS`) to its activities (`ACTIVITIES`), as
    `timely_py.analysis.waits.worker_activities`. `table` is a `pyarrow.Table` or any object
    with `__arrow_c_stream__` (read in place); returns a `pyarrow.Table`. A column of the
    wrong type raises `TypeError`, a missing column or needed value `ValueError`."""

def slice_critical_path(table: Any) -> Any:
    """The critical-path kernel in Rust: one slice's activities (`SLICED`) to its critical
    path (`CRITICAL_PATH`), as `timely_py.analysis.critical_path.slice_critical_path`.
    Arguments, result and errors as `worker_activities`; activities of one worker that
    overlap raise `ValueError`."""

def worker_pieces(
    table: Any, depths: Dict[int, int], input_channels: Dict[int, int], origin: Optional[int], end: Optional[int]
) -> Any:
    """One worker's pieces in Rust: its clock-corrected events (`worker`, `kind`, `t`, `ord`,
    `operator`, `useful`, `wake`, `name`, `channel`; any order) to its `WORKER_ROWS` but the
    deliveries, as `timely_py.analysis.waits.piece_rows` makes them from
    `timely_py.analysis.activities.pieces`. `depths` is `activities.scope_depths`;
    `input_channels`, `origin` and `end` the `activities.Catalogue`'s. Arguments, result and
    errors otherwise as `worker_activities` (a null `t` or `ord` raises `ValueError`)."""

class TraceFormat(TypedDict):
    """What ``trace_format()`` returns (``docs/trace-format.md``)."""

    version: int
    """The format version written in every process's metadata."""
    schema: Any
    """The ``pyarrow.Schema`` of a trace file (``process`` and ``worker`` come from the path)."""
    columns: list[Tuple[str, str]]
    """``(name, description)`` of every column, in the schema's order."""
    kinds: list[Tuple[str, Optional[str], str, str]]
    """``(name, class, when, columns)`` of every event kind, in the order of their dictionary
    codes; the class is ``None`` for kinds always recorded."""
    classes: list[Tuple[str, list[str]]]
    """``(name, kinds)`` of every event class."""

def trace_format() -> TraceFormat:
    """The trace format, declared once in the Rust crate ``timely-trace``: what the readers of
    ``timely_py.trace`` check files against and what ``docs/trace-format.md`` shows."""

class NetworkStats(TypedDict):
    """What ``Worker.network_stats()`` returns: the process's receive budget and spilling
    (``docs/networking.md``, "Receive budget and spilling"), then this worker's messages for
    channels it has not built yet."""

    receive_budget: int
    """The process's ``TIMELY_RECEIVE_BUDGET`` in bytes."""
    held_bytes: int
    """Bytes the process's receive buffers hold now."""
    peak_held_bytes: int
    """The most bytes they held at once."""
    spilled_messages: int
    """Messages received past the budget and written to spill files."""
    spilled_bytes: int
    """Their bytes."""
    spill_failures: int
    """Messages kept in memory past the budget because a spill file could not be written."""
    early_messages: int
    """Messages waiting on this worker for channels it has not built yet."""
    early_bytes: int
    """Their bytes."""
    early_bytes_limit: int
    """The most bytes they may take up (`TIMELY_EARLY_BYTES`, 128 MiB by default)."""
    dropped_after_close: int
    """Messages dropped on arrival because their channel was already closed on this worker."""

@final
class Worker:
    @property
    def index(self) -> int: ...
    @property
    def peers(self) -> int:
        """Worker indices in use: workers are ``0..peers`` (grows on joins, stays on leaves)."""
    @property
    def members(self) -> list[int]:
        """The workers present, ascending: joined ones in, leaving and departed ones out."""
    def workers_of(self, process: int) -> list[int]:
        """The workers of process `process` (numbered in process order; indices stay when
        others leave): what ``Controller.evacuate`` takes bins off before it leaves."""
    def network_stats(self) -> Optional[NetworkStats]:
        """What the process holds of the messages it received and what spilled to disk past
        its receive budget, with this worker's messages for channels not built yet; None in a
        single process. Callable from inside an operator."""
    @property
    def leaving(self) -> bool:
        """True once this worker's process leaves the cluster (``leave()`` or the launcher's
        ``remove_process``; updated at every step). From then on its input handles are
        released: what they accepted is delivered, and ``send`` raises ``LeavingError``; so
        are the capabilities of its generic sources (``Scope.source``). Stop feeding and return; a program that goes on still leaves: once the leave is complete,
        ``step()`` returns False and its probes are done."""
    def leave(self) -> None:
        """Makes this worker's process leave the running cluster; the others go on and the
        keys it held move to the workers present. Its input handles and the capabilities of
        its generic sources are released at once
        (those of the process's other workers at their next step); the process's run ends once
        nothing can reach it (see ``docs/rescaling.md``). While a process is joining the
        cluster (not yet bootstrapped everywhere) it steps this worker until the join is over,
        for at most 60 s, and then leaves. ``ValueError`` outside a cluster of several
        processes; ``TimelyError`` when no other process is present to take its work, or the
        join did not end in time."""
    @property
    def has_dataflows(self) -> bool: ...
    def step(self) -> bool: ...
    def step_while(self, condition: Callable[[], bool]) -> None: ...
    def step_or_park(self, timeout: Optional[float] = None) -> bool: ...
    def dataflow(self, name: str = "Dataflow") -> Scope: ...
    def bootstrap(self) -> bool:
        """On a worker of a process that joined a running cluster (``--join W --nn N``):
        completes the bootstrap of its progress state from worker ``W`` and returns True.
        False on every worker the cluster started with. Call it after building every
        dataflow; a joined worker then returns, and the runtime steps it until the dataflows
        complete (see ``docs/rescaling.md``)."""
    def activity(self, name: str) -> Activity:
        """A user activity recorded in the trace: `with worker.activity("load graph"): ...`."""

@final
class Activity:
    """A named stretch of a worker's work in the trace; activities nest."""
    @property
    def name(self) -> str: ...
    def __enter__(self) -> Activity: ...
    def __exit__(self, *exception: object) -> bool: ...

@final
class Scope:
    @property
    def depth(self) -> int: ...
    @property
    def address(self) -> list[int]: ...
    def input_from(self, handle: InputHandle) -> Stream: ...
    def to_stream(self, iterable: Iterable[Any]) -> Stream: ...
    def iterative(self, name: str = "Iterative") -> Scope: ...
    def region(self, name: str = "Region") -> Scope: ...
    def feedback(self, summary: Time) -> Tuple[LoopHandle, Stream]: ...
    def concatenate(self, streams: Sequence[Stream]) -> Stream: ...
    def source(
        self,
        constructor: Callable[[Capability, OperatorInfo], Callable[[OutputPort], Any]],
        name: str = "Source",
    ) -> Stream:
        """An operator without inputs that produces records.

        ``constructor(capability, info)`` runs now and returns ``logic(output)``. The logic
        runs once at start and then whenever activated: ``info.activate()`` schedules it at
        the worker's next step. Send with ``output.give(capability, x)``; ``downgrade`` the
        capability as times complete and release it when done: a source holding no
        capability is finished, and one that holds a capability must be activated again.

        When the worker's process leaves the cluster (``worker.leaving``), every capability
        of the source is released: what it gave before is delivered, and using a capability
        afterwards (``give`` with it, ``delayed``, ``downgrade``, ``time``) raises
        ``LeavingError``; the source should stop. Letting that error out of the logic ends
        the run quietly, so a source that never stops still lets its process leave; any other
        exception fails the run. Operators with inputs are not released: they finish when
        their inputs do."""
    def finish(self) -> None: ...
    def __enter__(self) -> Scope: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]] = None,
        _exc_value: Optional[BaseException] = None,
        _traceback: Optional[TracebackType] = None,
    ) -> bool: ...

@final
class LoopHandle: ...

@final
class Stream:
    # Arguments that must be callable are checked when the operator is added: anything else
    # raises TypeError naming the argument (`map: f must be callable, got 42`).
    @property
    def depth(self) -> int: ...
    def map(self, f: Callable[[Any], Any]) -> Stream: ...
    def flat_map(self, f: Callable[[Any], Iterable[Any]]) -> Stream: ...
    def filter(self, predicate: Callable[[Any], Any]) -> Stream: ...
    def inspect(self, f: Callable[[Any], Any]) -> Stream: ...
    def inspect_time(self, f: Callable[[Time, Any], Any]) -> Stream: ...
    def inspect_batch(self, f: Callable[[Time, list[Any]], Any]) -> Stream: ...
    def exchange(self, key: Optional[Callable[[Any], Any]] = None) -> Stream:
        """Sends each record to worker `route_key(key(x), peers)` (`key` None: the record
        itself): `key(x) % peers` for ints, and keys that compare equal meet on one worker.
        While processes join, workers route by the peers they know, so a key's records of
        one time may reach two workers: every record arrives once, but per-key state belongs
        in `count_by_key`, `aggregate`, `exchange=` or `timely_py.megaphone`."""
    def broadcast(self) -> Stream: ...
    def concat(self, other: Stream) -> Stream: ...
    def partition(self, parts: int, route: Callable[[Any], int]) -> list[Stream]: ...
    def branch(self, predicate: Callable[[Time, Any], Any]) -> Tuple[Stream, Stream]: ...
    def delay(self, f: Callable[[Any, Time], Time]) -> Stream: ...
    def probe_with(self, handle: ProbeHandle) -> Stream: ...
    def probe(self) -> ProbeHandle: ...
    def count_by_key(self, key: Optional[Callable[[Any], Any]] = None) -> Stream:
        """Per time, `(k, n)`: how many records had key `k = key(x)`, emitted once the time is
        complete; one result per time and key, exact while processes join."""
    def aggregate(
        self,
        key: Callable[[Any], Any],
        fold: Callable[[Any, Any], Any],
        init: Callable[[], Any],
        emit: Optional[Callable[[Any, Any], Any]] = None,
    ) -> Stream:
        """Per time and key `k = key(x)`: `acc = fold(acc, x)` from `init()`, emitting
        `emit(k, acc)` (default `(k, acc)`) once the time is complete; exact while processes
        join."""
    # Keyed operators whose per-key state `control` moves between workers (timely_py.megaphone).
    def state_machine(self, control: Control, fold: Callable[[Any, Any, Any], Tuple[Any, Iterable[Any]]]) -> Stream: ...
    def keyed_unary(
        self,
        control: Control,
        *,
        key: Callable[[Any], Any],
        on_record: Callable[[Any, Any, Any, KeyContext], Any],
        on_notify: Optional[Callable[[Any, Any, KeyContext], Any]] = None,
    ) -> Stream: ...
    def keyed_binary(
        self,
        other: Stream,
        control: Control,
        *,
        key1: Callable[[Any], Any],
        key2: Callable[[Any], Any],
        on_first: Callable[[Any, Any, Any, KeyContext], Any],
        on_second: Callable[[Any, Any, Any, KeyContext], Any],
        on_notify: Optional[Callable[[Any, Any, KeyContext], Any]] = None,
    ) -> Stream:
        """Records of this stream and `other` whose keys (`key1(x)`, `key2(y)`) are equal share
        one state: `on_first`/`on_second(key, record, state, context)` and
        `on_notify(key, state, context)` return the key's new state (None drops it)."""
    def enter(self, scope: Scope) -> Stream: ...
    def leave(self, scope: Scope) -> Stream: ...
    def connect_loop(self, handle: LoopHandle) -> None: ...
    # Generic operators: `constructor(capability, info)` returns the logic.
    def unary(
        self,
        constructor: Callable[[Capability, OperatorInfo], Callable[[InputPort, OutputPort], Any]],
        name: str = "Unary",
        exchange: Optional[Callable[[Any], Any]] = None,
    ) -> Stream: ...
    def unary_frontier(
        self,
        constructor: Callable[[Capability, OperatorInfo], Callable[[InputPort, OutputPort], Any]],
        name: str = "UnaryFrontier",
        exchange: Optional[Callable[[Any], Any]] = None,
    ) -> Stream: ...
    def unary_notify(
        self,
        logic: Callable[[InputPort, OutputPort, Notificator], Any],
        name: str = "UnaryNotify",
        exchange: Optional[Callable[[Any], Any]] = None,
    ) -> Stream: ...
    def binary(
        self,
        other: Stream,
        constructor: Callable[[Capability, OperatorInfo], Callable[[InputPort, InputPort, OutputPort], Any]],
        name: str = "Binary",
        exchange1: Optional[Callable[[Any], Any]] = None,
        exchange2: Optional[Callable[[Any], Any]] = None,
    ) -> Stream: ...
    def binary_frontier(
        self,
        other: Stream,
        constructor: Callable[[Capability, OperatorInfo], Callable[[InputPort, InputPort, OutputPort], Any]],
        name: str = "BinaryFrontier",
        exchange1: Optional[Callable[[Any], Any]] = None,
        exchange2: Optional[Callable[[Any], Any]] = None,
    ) -> Stream: ...
    def binary_notify(
        self,
        other: Stream,
        logic: Callable[[InputPort, InputPort, OutputPort, Notificator], Any],
        name: str = "BinaryNotify",
        exchange1: Optional[Callable[[Any], Any]] = None,
        exchange2: Optional[Callable[[Any], Any]] = None,
    ) -> Stream: ...
    def sink(
        self,
        logic: Callable[[InputPort], Any],
        name: str = "Sink",
        exchange: Optional[Callable[[Any], Any]] = None,
    ) -> None: ...

@final
class InputHandle:
    """Feeds records into a dataflow input at the handle's current epoch.

    Once its worker is leaving the cluster (``worker.leaving``) the handle is released: the
    records it accepted before are delivered, it holds the input back no more, ``send`` and
    ``send_batch`` raise ``LeavingError`` without accepting anything, and ``advance_to`` only
    moves ``time``."""
    def __init__(self) -> None: ...
    @property
    def time(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    @property
    def released(self) -> bool:
        """True once released because its worker is leaving the cluster."""
    def send(self, record: Any) -> None:
        """Sends one record at the current epoch; ``LeavingError`` once the worker is leaving."""
    def send_batch(self, records: Iterable[Any]) -> None:
        """Sends every record at the current epoch; ``LeavingError`` (none accepted) once the
        worker is leaving."""
    def advance_to(self, time: int) -> None:
        """Moves to a later epoch; once the worker is leaving it only moves ``time``."""
    def close(self) -> None: ...
    def __enter__(self) -> InputHandle: ...
    def __exit__(self, *args: Any) -> bool: ...

@final
class ProbeHandle:
    def __init__(self) -> None: ...
    def less_than(self, time: int) -> bool: ...
    def less_equal(self, time: int) -> bool: ...
    def done(self) -> bool: ...
    @property
    def frontier(self) -> list[int]: ...

@final
class Frontier:
    """The times that may still arrive at an operator input."""
    def less_than(self, time: Time) -> bool: ...
    def less_equal(self, time: Time) -> bool: ...
    @property
    def empty(self) -> bool: ...
    @property
    def elements(self) -> list[Time]: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Time]: ...

@final
class Capability:
    """The right to send records at `time` (and later) from an operator's outputs. Using one
    after ``release()`` raises ``ValueError``; a source's capabilities are also released when
    its worker's process leaves the cluster, and using one then raises ``LeavingError``."""
    @property
    def time(self) -> Time: ...
    @property
    def released(self) -> bool: ...
    def delayed(self, time: Time) -> Capability: ...
    def downgrade(self, time: Time) -> None: ...
    def release(self) -> None: ...
    def __enter__(self) -> Capability: ...
    def __exit__(self, *args: Any) -> bool: ...

@final
class InputCapability:
    """The time of received records; valid during the run that received them."""
    @property
    def time(self) -> Time: ...
    def retain(self) -> Capability: ...
    def delayed(self, time: Time) -> Capability: ...

@final
class InputPort:
    """An operator input: iterate for `(capability, records)` pairs."""
    def __iter__(self) -> Iterator[Tuple[InputCapability, list[Any]]]: ...
    def __next__(self) -> Tuple[InputCapability, list[Any]]: ...
    @property
    def frontier(self) -> Frontier: ...

@final
class OutputSession:
    def give(self, record: Any) -> None: ...
    def give_all(self, records: Iterable[Any]) -> None: ...
    def __enter__(self) -> OutputSession: ...
    def __exit__(self, *args: Any) -> bool: ...

@final
class OutputPort:
    """An operator output: send records at a capability's time."""
    def give(self, capability: Union[Capability, InputCapability], record: Any) -> None: ...
    def give_all(self, capability: Union[Capability, InputCapability], records: Iterable[Any]) -> None: ...
    def session(self, capability: Union[Capability, InputCapability]) -> OutputSession: ...

@final
class NotificationItems:
    def __iter__(self) -> Iterator[Tuple[Capability, int]]: ...
    def __next__(self) -> Tuple[Capability, int]: ...

@final
class Notificator:
    """Requested notifications; iterate to receive the deliverable ones in time order."""
    def notify_at(self, capability: Union[Capability, InputCapability]) -> None: ...
    def __iter__(self) -> Iterator[Capability]: ...
    def __next__(self) -> Capability: ...
    def items(self) -> NotificationItems: ...
    @property
    def pending(self) -> list[Time]: ...
    def frontier(self, input: int = 0) -> Frontier: ...

@final
class OperatorInfo:
    @property
    def name(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def address(self) -> list[int]: ...
    @property
    def worker(self) -> int: ...
    @property
    def peers(self) -> int: ...
    def activate(self) -> None: ...

class CodecError(TimelyError):
    """Bytes that are not a valid encoding of a batch of records (see timely_py.codec)."""

def encode_records(records: list[Any]) -> bytes:
    """The encoding of a batch of records (native for exact built-in types, pickle otherwise)."""

def decode_records(data: bytes, allow_pickle: bool = True) -> list[Any]:
    """The records of a batch made by `encode_records`; raises `CodecError` on malformed input."""

@final
class Control:
    """The control of keyed operators: a stream of `Move(bin, worker)` commands (or
    `(bin, worker)` pairs) at a dataflow's root, and the number of bins (a power of two)."""
    def __new__(cls, commands: Stream, bins: int = 256, name: str = "Megaphone") -> Control: ...
    @property
    def bins(self) -> int: ...

@final
class KeyContext:
    """What the logic of `keyed_unary` or `keyed_binary` may do for the key it runs for,
    during the call."""
    @property
    def time(self) -> int: ...
    def give(self, output: Any) -> None: ...
    def notify_at(self, time: int) -> None: ...
    def discard_state(self) -> None: ...

def megaphone_round_robin(bins: int, peers: int) -> list[int]: ...
def megaphone_plan(
    current: Sequence[int], target: Sequence[int], name: str, per_worker: int, start: int
) -> list[Tuple[int, int, int]]: ...
def megaphone_rebalance(current: Sequence[int], workers: Sequence[int]) -> list[int]: ...
def megaphone_bin(key: Any, bins: int) -> int: ...

@final
class MegaphoneController:
    def __new__(cls, owners: Sequence[int]) -> MegaphoneController: ...
    def owners(self) -> list[int]: ...
    def is_idle(self) -> bool: ...
    def move_to(self, target: Sequence[int], name: str, per_worker: int, earliest: int) -> int: ...
    def rebalance(self, workers: Sequence[int], name: str, per_worker: int, earliest: int) -> int: ...
    def evacuate(
        self, leaving: Sequence[int], members: Sequence[int], name: str, per_worker: int, earliest: int
    ) -> int: ...
    def due(self, time: int) -> list[tuple[int, int]]: ...
    def next_step(self) -> list[tuple[int, int]]: ...

def write_perfetto_trace(
    file: str, head: str, activities: Any, path: Any, origin: int, per_process: int, critical_pid: int
) -> None:
    """Writes an analysis's Perfetto trace to `file` natively, as
    `timely_py.analysis.perfetto_export` writes it in Python: the metadata events `head`
    (JSON text of events separated by commas), then each activity (a table of that module's
    `ACTIVITY_COLUMNS`) and each edge of the critical path (`PATH_COLUMNS`, sorted by start
    and end) with the flows of the messages it crosses. A missing column is a `ValueError`,
    a column of another type than int64, bool or string a `TypeError`."""
