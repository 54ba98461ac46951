"""The local launcher: runs every process of a timely_py cluster on this machine.

``python -m timely_py.launch -n 3 -w 2 SCRIPT [ARGS...]`` starts process ``i`` of 3 as
``PYTHON SCRIPT ARGS -n 3 -p i -w 2 [-h HOSTFILE]`` (the runtime's flags go after the
script's own arguments, before a ``--`` among them if there is one), prefixes each line the
processes print with ``[i] ``, and ends them all when one fails or on Ctrl-C.

This module owns: the launcher's command line, the choice of ports (a temporary hostfile when
the default ones are busy or ``--base-port`` is given), the cluster id and the per-launch
secret (handed over in the environment variables ``TIMELY_CLUSTER_ID`` and
``TIMELY_CLUSTER_SECRET``, never on a command line), the child processes' lifetime (each in
its own process group; SIGINT, then SIGTERM, then SIGKILL), the relay of their output, and the
launcher's exit status.

It must not know about dataflows, workers, the wire protocol or the engine: it never uses
``timely_py._core``, and it passes nothing to a child that the child could not be given by
hand, on its command line and in its environment. Whether the processes find each other, and
what they compute, is the runtime's business.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import errno
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import IO, Callable, Iterator, List, Optional, Sequence, TextIO, Tuple

__all__ = [
    "DEFAULT_BASE_PORT",
    "ENV_CLUSTER_ID",
    "ENV_CLUSTER_SECRET",
    "LaunchError",
    "Options",
    "child_command",
    "child_environment",
    "main",
    "parse_args",
    "pick_ports",
    "plan_hostfile",
    "port_is_free",
]

#: Process ``i`` listens on ``localhost:DEFAULT_BASE_PORT + i`` unless given a hostfile.
DEFAULT_BASE_PORT = 2101
#: The environment variable that carries the cluster id (a u64) to every process.
ENV_CLUSTER_ID = "TIMELY_CLUSTER_ID"
#: The environment variable that carries the cluster secret to every process.
ENV_CLUSTER_SECRET = "TIMELY_CLUSTER_SECRET"
#: Seconds the others get to end by themselves after a process failed (``--grace``).
DEFAULT_GRACE = 10.0
#: Seconds the processes get to end after the SIGINT a stop request sends (``--stop-grace``).
DEFAULT_STOP_GRACE = 5.0
#: Seconds between SIGTERM and SIGKILL, and the wait after SIGKILL before giving up.
KILL_AFTER = 2.0
#: Seconds between two looks at the children.
POLL_INTERVAL = 0.05
#: Seconds to wait for the end of the children's output once they have all exited.
RELAY_DRAIN = 2.0
#: A line longer than this many characters is relayed in pieces, each as a line of its own.
MAX_LINE = 1 << 20
#: Exit status when the cluster could not be started (bad options, busy ports, no interpreter).
SETUP_FAILED = 2
#: The highest port the search for free ports tries.
LAST_PORT = 32767
#: The signals that ask the launcher to stop the cluster (each one more escalates one step).
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
_PR_SET_PDEATHSIG = 1
_TAG = "[launch] "

_DESCRIPTION = """\
Runs an N-process timely_py cluster on this machine: process i (0 <= i < N) is started as

    PYTHON SCRIPT ARGS -n N -p i -w W [-h HOSTFILE]

(the runtime's flags go after the script's own ARGS, before a "--" among them if there is
one; the runtime reads them and timely_py.program_args strips them for the script)."""

_EPILOG = """\
ports:
  By default process i listens on localhost:2101+i. The launcher checks that those ports are
  free; if one is not, it picks free ports, writes them to a temporary hostfile
  (127.0.0.1:PORT lines) passed as -h to every process, and says so on stderr. --base-port
  also makes a temporary hostfile. --hostfile FILE is passed on as -h FILE. Temporary files
  are removed when the launcher exits. With -n 1 no ports are used.

security:
  The cluster id (--cluster-id, default random) and a random secret made for this launch
  reach the processes in the environment variables TIMELY_CLUSTER_ID and
  TIMELY_CLUSTER_SECRET, never on a command line, so ps does not show them.

output:
  Every line a process writes is written to the launcher's stdout or stderr (the same one
  the process used), prefixed "[i] ", whole lines only. Bytes that are not UTF-8 are shown
  as U+FFFD; a last line without a newline gets one. Processes run with PYTHONUNBUFFERED=1
  and read stdin from /dev/null. The launcher's own messages start with "[launch]".

stopping:
  Each process runs in its own process group, so Ctrl-C in a terminal reaches only the
  launcher, which sends SIGINT to every process (they raise KeyboardInterrupt and stop),
  SIGTERM after --stop-grace seconds, and SIGKILL 2 s later. Another Ctrl-C (or SIGTERM,
  SIGHUP) skips to the next step. On Linux a process also gets SIGTERM if the launcher dies.
  When a process fails, the others get --grace seconds to end by themselves (the runtime
  ends them when it loses a peer), then SIGTERM and SIGKILL.

exit status:
  0 when every process exits 0; after a stop signal 128+signal (130 for Ctrl-C); otherwise
  the exit status of the first process that failed by itself (128+signal if a signal killed
  it), after a report on stderr of every process that failed. 2 when the cluster could not
  be started.

examples:
  python -m timely_py.launch -n 3 -w 2 examples/hello.py
  python -m timely_py.launch -n 2 -m mypackage.job --input data.txt
  python -m timely_py.launch -n 2 --grace 3 -- job.py -- --option-for-the-script"""


@dataclass(frozen=True)
class Options:
    """What to launch and how, as read from the launcher's command line."""

    processes: int
    workers: int
    target: Tuple[str, ...]
    """``(SCRIPT,)`` or ``("-m", MODULE)``."""
    args: Tuple[str, ...]
    python: str
    hostfile: Optional[str]
    base_port: Optional[int]
    cluster_id: int
    grace: float
    stop_grace: float
    trace: Optional[str] = None
    """A trace directory every process writes its part of the trace to (``--trace``)."""


class LaunchError(Exception):
    """The cluster cannot be started as asked; the message says why."""


# ---------------------------------------------------------------------------------------------
# Command line


def _bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer from `low` to `high`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, found {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, found {value}")
        return value

    return parse


def _seconds(text: str) -> float:
    """An argparse type: a non-negative number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, found {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, found {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    """The parser of the launcher's own options (the command after them is split off first)."""
    parser = argparse.ArgumentParser(
        prog="python -m timely_py.launch",
        usage="%(prog)s -n N [-w W] [options] [--] (SCRIPT | -m MODULE) [ARGS...]",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    add = parser.add_argument
    add("-n", "--processes", type=_bounded_int(1, 65535), required=True, metavar="N",
        help="number of processes (>= 1)")
    add("-w", "--workers", type=_bounded_int(1, 1 << 16), default=1, metavar="W",
        help="worker threads per process (default 1)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--base-port", type=_bounded_int(1, 65535), metavar="PORT",
                       help="process i listens on 127.0.0.1:PORT+i (through a temporary hostfile)")
    where.add_argument("--hostfile", metavar="FILE",
                       help="one host:port a line, passed on as -h FILE")
    add("--cluster-id", type=_bounded_int(0, (1 << 64) - 1), metavar="ID",
        help="the cluster id, a u64 (default: random)")
    add("--python", default=sys.executable, metavar="EXE",
        help="the interpreter that runs the processes (default: this one)")
    add("--grace", type=_seconds, default=DEFAULT_GRACE, metavar="SECONDS",
        help=f"after a process failed, how long the others may run on (default {DEFAULT_GRACE:g})")
    add("--stop-grace", type=_seconds, default=DEFAULT_STOP_GRACE, metavar="SECONDS",
        help=f"after Ctrl-C, how long before SIGTERM (default {DEFAULT_STOP_GRACE:g})")
    add("--trace", metavar="DIR",
        help="trace the run: every process writes its part to DIR (docs/trace-format.md)")
    return parser


def _split_command(argv: Sequence[str], value_flags: frozenset[str]) -> Tuple[List[str], List[str]]:
    """Splits `argv` into the launcher's options and the command: the command starts after
    ``--``, at ``-m``, or at the first argument that is not an option."""
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            return list(argv[:index]), list(argv[index + 1 :])
        if arg.startswith("-m") or not arg.startswith("-") or arg == "-":
            return list(argv[:index]), list(argv[index:])
        index += 2 if arg in value_flags else 1
    return list(argv), []


def _target(command: Sequence[str]) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The script (or ``-m MODULE``) and its arguments; raises ValueError if there is none."""
    if not command:
        raise ValueError("a SCRIPT or -m MODULE to run is required")
    head = command[0]
    if head == "-m":
        if len(command) < 2:
            raise ValueError("-m needs a module name")
        return ("-m", command[1]), tuple(command[2:])
    if head.startswith("-m"):
        return ("-m", head[2:]), tuple(command[1:])
    if head.startswith("-") and head != "-":
        raise ValueError(f"expected SCRIPT or -m MODULE, found option {head!r}")
    return (head,), tuple(command[1:])


def parse_args(argv: Sequence[str]) -> Options:
    """Reads the launcher's command line (without the program name). Exits through
    argparse (status 2, or 0 for ``--help``) when it is malformed."""
    parser = _parser()
    value_flags = frozenset(
        flag for action in parser._actions if action.nargs != 0 for flag in action.option_strings
    )
    ours, command = _split_command(argv, value_flags)
    space = parser.parse_args(ours)
    try:
        target, args = _target(command)
    except ValueError as error:
        parser.error(str(error))
    if space.base_port is not None and space.base_port + space.processes - 1 > 65535:
        last = space.processes - 1
        parser.error(f"--base-port {space.base_port} leaves no port for process {last}")
    cluster_id = secrets.randbits(64) if space.cluster_id is None else space.cluster_id
    return Options(
        processes=space.processes, workers=space.workers, target=target, args=args,
        python=space.python, hostfile=space.hostfile, base_port=space.base_port,
        cluster_id=cluster_id, grace=space.grace, stop_grace=space.stop_grace,
        trace=None if space.trace is None else os.path.abspath(space.trace),
    )


def child_command(options: Options, index: int, hostfile: Optional[str]) -> List[str]:
    """The command line of process `index`: the script and its arguments, with the runtime's
    flags after them (before the script's ``--``, if it has one, which the runtime stops at)."""
    runtime = ["-n", str(options.processes), "-p", str(index), "-w", str(options.workers)]
    if hostfile is not None:
        runtime += ["-h", hostfile]
    if options.trace is not None:
        runtime += ["--trace", options.trace]
    args = list(options.args)
    cut = args.index("--") if "--" in args else len(args)
    return [options.python, *options.target, *args[:cut], *runtime, *args[cut:]]


def child_environment(cluster_id: int, secret: str) -> dict[str, str]:
    """The environment of every process: the launcher's, unbuffered, with the cluster's
    identity (replacing any id or secret the launcher inherited)."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env[ENV_CLUSTER_ID] = str(cluster_id)
    env[ENV_CLUSTER_SECRET] = secret
    return env


# ---------------------------------------------------------------------------------------------
# Ports


def port_is_free(port: int) -> bool:
    """Whether a listener could take `port` on the loopback addresses (IPv4, and IPv6 where
    this machine has it): the test the runtime's own bind would pass."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue
        with sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError as error:
                if family == socket.AF_INET or error.errno == errno.EADDRINUSE:
                    return False
    return True


def pick_ports(count: int, start: int = DEFAULT_BASE_PORT) -> List[int]:
    """`count` free ports, the lowest from `start` on. They stay below the usual ephemeral
    range, so the processes' own outgoing connections cannot take them first."""
    ports: List[int] = []
    for port in range(start, LAST_PORT + 1):
        if port_is_free(port):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise LaunchError(
        f"found only {len(ports)} free ports from {start} to {LAST_PORT}, need {count}"
    )


def _write_hostfile(directory: str, ports: Sequence[int]) -> str:
    """Writes a hostfile of ``127.0.0.1:PORT`` lines in `directory`; returns its path."""
    path = os.path.join(directory, "hostfile")
    with open(path, "w", encoding="ascii") as file:
        file.write("".join(f"127.0.0.1:{port}\n" for port in ports))
    return path


def plan_hostfile(options: Options, scratch: str, say: Callable[[str], None]) -> Optional[str]:
    """The hostfile to pass as ``-h``, or None for the runtime's default ports. Temporary
    hostfiles go in `scratch`; `say` reports a change of ports."""
    if options.hostfile is not None:
        if not os.path.isfile(options.hostfile):
            raise LaunchError(f"hostfile {options.hostfile!r} does not exist")
        return os.path.abspath(options.hostfile)
    if options.processes == 1:
        return None
    if options.base_port is not None:
        return _base_port_hostfile(options.base_port, options.processes, scratch)
    return _default_hostfile(options.processes, scratch, say)


def _base_port_hostfile(base: int, count: int, scratch: str) -> str:
    """A hostfile for ports `base`.. (all of which must be free)."""
    ports = list(range(base, base + count))
    busy = [port for port in ports if not port_is_free(port)]
    if busy:
        raise LaunchError(
            f"port(s) {_list(busy)} in use; choose another --base-port, or leave it out"
        )
    return _write_hostfile(scratch, ports)


def _default_hostfile(count: int, scratch: str, say: Callable[[str], None]) -> Optional[str]:
    """None when the default ports are free, else a hostfile of free ones."""
    default = list(range(DEFAULT_BASE_PORT, DEFAULT_BASE_PORT + count))
    ports = pick_ports(count)
    if ports == default:
        return None
    path = _write_hostfile(scratch, ports)
    busy = sorted(set(default) - set(ports))
    say(f"port(s) {_list(busy)} in use; the processes listen on {_list(ports)} instead "
        f"(hostfile {path})")
    return path


def _list(items: Sequence[object]) -> str:
    """`items` as ``a, b, c``."""
    return ", ".join(str(item) for item in items)


# ---------------------------------------------------------------------------------------------
# Output relay


class _Sink:
    """One of the launcher's text streams, shared by threads: each write is whole, under a
    lock shared by both streams; a stream that broke (a closed pipe) silently drops output,
    so the children never block on a full pipe."""

    def __init__(self, stream: TextIO, lock: threading.Lock) -> None:
        self._stream = stream
        self._lock = lock
        self._broken = False

    def write(self, text: str) -> None:
        """Writes `text` and flushes."""
        with self._lock:
            if self._broken:
                return
            try:
                self._write(text)
            except (OSError, ValueError):
                self._broken = True

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
        except UnicodeEncodeError:
            encoding = getattr(self._stream, "encoding", None) or "ascii"
            self._stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
        self._stream.flush()

    def say(self, message: str) -> None:
        """Writes one of the launcher's own messages."""
        self.write(f"{_TAG}{message}\n")


def _relay(pipe: IO[bytes], prefix: str, sink: _Sink) -> None:
    """Copies `pipe` to `sink` until its end, whole lines at a time, each prefixed."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    with pipe:
        while True:
            try:
                chunk = pipe.read(1 << 16)
            except OSError:
                chunk = b""
            lines = (pending + decoder.decode(chunk or b"", final=not chunk)).split("\n")
            pending = lines.pop()
            if len(pending) >= MAX_LINE:
                lines.append(pending)
                pending = ""
            if lines:
                sink.write("".join(f"{prefix}{line}\n" for line in lines))
            if not chunk:
                break
    if pending:
        sink.write(f"{prefix}{pending}\n")


# ---------------------------------------------------------------------------------------------
# Processes


@dataclass(eq=False)
class _Child:
    """One started process and what the launcher did to it."""

    index: int
    process: subprocess.Popen[bytes]
    signalled: Optional[int] = None
    """The last signal the launcher sent it while it ran."""
    relays: List[threading.Thread] = field(default_factory=list)

    def running(self) -> bool:
        return self.process.poll() is None

    def send(self, sig: int) -> None:
        """Sends `sig` to the process's group (itself and what it started), if it still runs."""
        if not self.running():
            return
        self.signalled = sig
        try:
            if hasattr(os, "killpg"):
                os.killpg(self.process.pid, sig)
            else:
                self.process.send_signal(sig)
        except ProcessLookupError:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(sig)


def _prctl() -> Optional[Callable[..., int]]:
    """Linux's prctl, through the C library, or None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl: Callable[..., int] = ctypes.CDLL(None).prctl
        return prctl
    except (OSError, AttributeError):
        return None


def _child_setup() -> Optional[Callable[[], None]]:
    """What a child runs before the script: its own process group (so a terminal's Ctrl-C
    reaches only the launcher), and on Linux SIGTERM when the launcher dies."""
    if os.name != "posix":
        return None
    parent, prctl = os.getpid(), _prctl()

    def setup() -> None:
        os.setpgid(0, 0)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
            if os.getppid() != parent:
                os._exit(1)

    return setup


def _spawn(options: Options, hostfile: Optional[str], env: dict[str, str]) -> List[_Child]:
    """Starts every process; on a failure, kills those already started and raises LaunchError.
    The relays are started later: no thread may run while a child is being forked."""
    children: List[_Child] = []
    setup = _child_setup()
    for index in range(options.processes):
        try:
            process = subprocess.Popen(
                child_command(options, index, hostfile), env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0, preexec_fn=setup,
            )
        except OSError as error:
            _kill_now(children)
            message = f"cannot start process {index} with {options.python!r}: {error}"
            raise LaunchError(message) from None
        children.append(_Child(index, process))
    return children


def _kill_now(children: Sequence[_Child]) -> None:
    """Kills `children` at once and reaps them (for a start that failed half-way)."""
    for child in children:
        child.send(signal.SIGKILL if hasattr(signal, "SIGKILL") else signal.SIGTERM)
    for child in children:
        child.process.wait()
        for pipe in (child.process.stdout, child.process.stderr):
            if pipe is not None:
                pipe.close()


def _start_relays(children: Sequence[_Child], out: _Sink, err: _Sink) -> None:
    """One thread per pipe copies the children's output to the launcher's streams."""
    for child in children:
        for pipe, sink in ((child.process.stdout, out), (child.process.stderr, err)):
            assert pipe is not None
            thread = threading.Thread(
                target=_relay, args=(pipe, f"[{child.index}] ", sink),
                name=f"launch-relay-{child.index}", daemon=True,
            )
            thread.start()
            child.relays.append(thread)


def _drain(children: Sequence[_Child]) -> None:
    """Waits (a bounded time: a grandchild may hold a pipe open) for the rest of the output."""
    deadline = time.monotonic() + RELAY_DRAIN
    for child in children:
        for thread in child.relays:
            thread.join(max(0.0, deadline - time.monotonic()))


# ---------------------------------------------------------------------------------------------
# Supervision


@dataclass
class _StopRequests:
    """The stop signals the launcher received, in order (filled by the signal handler)."""

    received: List[int] = field(default_factory=list)

    def handle(self, signum: int, frame: Optional[FrameType]) -> None:
        self.received.append(signum)


@contextlib.contextmanager
def _catching_stop_signals(requests: _StopRequests) -> Iterator[None]:
    """Routes the stop signals to `requests` while the cluster runs (main thread only:
    elsewhere Python cannot install handlers), then restores the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, requests.handle) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _describe(code: int) -> str:
    """An exit status as words: ``exit code 3`` or ``signal SIGKILL``."""
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"signal {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"


def _signal_name(sig: int) -> str:
    """A signal's name, such as ``SIGTERM``."""
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


class _Supervisor:
    """Waits for the children and, once a stop is requested or one failed, ends the rest
    step by step: wait (after SIGINT for a stop request), SIGTERM, SIGKILL, give up."""

    def __init__(
        self, children: Sequence[_Child], options: Options, requests: _StopRequests, err: _Sink
    ) -> None:
        self.children = children
        self.options = options
        self.requests = requests
        self.err = err
        self.exits: List[_Child] = []
        """The children in the order they were seen to exit."""
        self.step = 0
        self.deadline = float("inf")
        self.handled = 0

    def run(self) -> None:
        """Returns when every child exited (or would not die even of SIGKILL)."""
        while self._collect() and self.step <= 3:
            now = time.monotonic()
            if len(self.requests.received) > self.handled:
                self.handled += 1
                self._escalate(now, stop=True)
            elif (self.step == 0 and self._failed()) or now >= self.deadline:
                self._escalate(now, stop=False)
            time.sleep(POLL_INTERVAL)

    def _collect(self) -> bool:
        """Records newly exited children; whether any still runs."""
        for child in self.children:
            if child not in self.exits and not child.running():
                self.exits.append(child)
        return len(self.exits) < len(self.children)

    def _failed(self) -> List[_Child]:
        return [child for child in self.exits if child.process.returncode != 0]

    def _running(self) -> List[_Child]:
        return [child for child in self.children if child.running()]

    def _escalate(self, now: float, stop: bool) -> None:
        self.step += 1
        running = self._running()
        names = _list([child.index for child in running])
        if self.step == 1 and stop:
            sig = self.requests.received[0]
            self.err.say(f"{_signal_name(sig)}: stopping process(es) {names} "
                         f"(SIGINT, then SIGTERM after {self.options.stop_grace:g} s)")
            self._send(running, signal.SIGINT, now + self.options.stop_grace)
        elif self.step == 1:
            first = self._failed()[0]
            self.err.say(
                f"process {first.index} failed ({_describe(first.process.returncode)}); "
                f"waiting up to {self.options.grace:g} s for process(es) {names} to end"
            )
            self.deadline = now + self.options.grace
        elif self.step == 2:
            self.err.say(f"process(es) {names} still running: sending SIGTERM")
            self._send(running, signal.SIGTERM, now + KILL_AFTER)
        elif self.step == 3:
            self.err.say(f"process(es) {names} still running: sending SIGKILL")
            self._send(running, getattr(signal, "SIGKILL", signal.SIGTERM), now + KILL_AFTER)
        else:
            self.err.say(f"process(es) {names} did not end even after SIGKILL; giving up on them")

    def _send(self, running: Sequence[_Child], sig: int, deadline: float) -> None:
        for child in running:
            child.send(sig)
        self.deadline = deadline

    def outcome(self) -> int:
        """Reports the processes that failed, or needed more than SIGINT to stop; returns
        the launcher's exit status."""
        failed = [child for child in self.exits if child.process.returncode != 0]
        for child in failed:
            status = _describe(child.process.returncode)
            if child.signalled == signal.SIGINT:
                continue  # it stopped as asked
            if child.signalled is None:
                self.err.say(f"process {child.index} failed: {status}")
            else:
                by = _signal_name(child.signalled)
                self.err.say(f"process {child.index} stopped by the launcher ({by}): {status}")
        if self.requests.received:
            return 128 + self.requests.received[0]
        own = [child for child in failed if child.signalled is None] or failed
        if not own:
            return 0
        code = own[0].process.returncode
        return code if code > 0 else 128 - code


# ---------------------------------------------------------------------------------------------
# Entry point


def _run(options: Options, hostfile: Optional[str], out: _Sink, err: _Sink) -> int:
    """Starts the cluster, relays its output until every process ended, and returns the exit
    status."""
    env = child_environment(options.cluster_id, secrets.token_hex(32))
    requests = _StopRequests()
    with _catching_stop_signals(requests):
        children = _spawn(options, hostfile, env)
        _start_relays(children, out, err)
        supervisor = _Supervisor(children, options, requests, err)
        supervisor.run()
    _drain(children)
    return supervisor.outcome()


def _exit_status(code: object) -> int:
    """The status a SystemExit with `code` stands for."""
    if code is None:
        return 0
    return code if isinstance(code, int) else SETUP_FAILED


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the launcher with `argv` (default: ``sys.argv[1:]``) and returns its exit status:
    0 when every process exited 0, 128+signal after a stop signal, the first failing
    process's status otherwise, and 2 when the cluster could not be started."""
    try:
        options = parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exit_:
        return _exit_status(exit_.code)
    lock = threading.Lock()
    out, err = _Sink(sys.stdout, lock), _Sink(sys.stderr, lock)
    with tempfile.TemporaryDirectory(prefix="timely-launch-") as scratch:
        try:
            hostfile = plan_hostfile(options, scratch, err.say)
            return _run(options, hostfile, out, err)
        except LaunchError as error:
            err.say(f"error: {error}")
            return SETUP_FAILED


if __name__ == "__main__":
    sys.exit(main())
