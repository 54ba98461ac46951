"""Cluster mode: programs run as several processes, as users run them.

Each test starts `python SCRIPT ... -n N -p i -w W -h HOSTFILE` once per process (or the
launcher, `python -m timely_py.launch`), on free loopback ports below 32768 written to a
hostfile, so tests never clash with each other or with a cluster on the default ports
(2101 and up). The children are the examples and the small scripts in `cluster_scripts/`.
Every process is killed at the end of its test, whatever happened, and every wait has a
timeout, so a hang fails the test instead of blocking the suite.
"""

import contextlib
import errno
import importlib.util
import itertools
import os
import re
import secrets
import signal
import socket
import struct
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import EXAMPLES, ROOT, python_subprocess

SCRIPTS = Path(__file__).resolve().parent / "cluster_scripts"

#: How long any process of a test may take before the test fails as hung.
TIMEOUT = 20
#: How soon after losing a peer every other process must have ended.
PROMPT = 5
#: The wire protocol version (`PROTOCOL_VERSION` in crates/communication/src/networking/handshake.rs).
PROTOCOL_VERSION = 4

# --- ports and processes -----------------------------------------------------------------

# Candidate ports, distinct within this pytest process and, through the pid, most likely
# from those of another pytest running at the same time. All below 32768, where the usual
# ephemeral range starts, so no outgoing connection takes a port before its listener does,
# and below the fixed ports of test_launch.py (23101 and up).
_PORTS = itertools.count(10000 + os.getpid() % 600 * 20)


def is_free(port):
    """Whether 127.0.0.1:`port` can be bound, with SO_REUSEADDR as the runtime's listeners
    (connections in TIME_WAIT do not make a port busy)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise
            return False
        return True


def free_ports(count):
    ports = []
    for port in _PORTS:
        assert port < 23000, "ran out of test ports"
        if is_free(port):
            ports.append(port)
            if len(ports) == count:
                return ports


def write_hostfile(directory, processes):
    """A hostfile `directory/hostfile` with a free loopback port per process; returns its path
    and the ports."""
    ports = free_ports(processes)
    path = Path(directory) / "hostfile"
    path.write_text("".join(f"127.0.0.1:{port}\n" for port in ports))
    return path, ports


class Cluster:
    """The processes of one cluster: a hostfile with free ports, one environment (cluster id
    and secret) for all, output captured in files. Use as a context manager: leaving it
    kills every process that still runs."""

    def __init__(self, directory, processes, workers=1):
        self.directory, self.processes, self.workers = Path(directory), processes, workers
        self.hostfile, self.ports = write_hostfile(directory, processes)
        self.env = dict(
            os.environ,
            PYTHONUNBUFFERED="1",
            TIMELY_CLUSTER_ID=str(secrets.randbits(64)),
            TIMELY_CLUSTER_SECRET=secrets.token_hex(32),
        )
        self.children = {}  # process index -> Popen

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for index in list(self.children):
            self.stop(index)

    def stop(self, index):
        """Kills process `index` if it still runs."""
        child = self.children.pop(index)
        if child.poll() is None:
            child.kill()
        child.wait(TIMEOUT)

    def start(self, index, args, **env):
        """Starts process `index` as `python ARGS -n N -p INDEX -w W -h HOSTFILE`, with `env`
        added to the cluster's environment (a process started again replaces the earlier one
        and its output)."""
        if index in self.children:
            self.stop(index)
        flags = ["-n", self.processes, "-p", index, "-w", self.workers, "-h", self.hostfile]
        with open(self.directory / f"{index}.out", "w") as out, open(self.directory / f"{index}.err", "w") as err:
            self.children[index] = subprocess.Popen(
                [sys.executable, *map(str, args), *map(str, flags)],
                cwd=ROOT,
                env={**self.env, **env},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
        return self.children[index]

    def start_all(self, args):
        for index in range(self.processes):
            self.start(index, args)

    def stdout(self, index):
        return (self.directory / f"{index}.out").read_text()

    def stderr(self, index):
        return (self.directory / f"{index}.err").read_text()

    def wait(self, index, timeout=TIMEOUT):
        """The exit status of process `index`; fails if it runs longer than `timeout` s."""
        try:
            return self.children[index].wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"process {index} still runs after {timeout} s:\n{self.report(index)}")

    def wait_all(self, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        return [self.wait(i, max(0.1, deadline - time.monotonic())) for i in sorted(self.children)]

    def wait_for_output(self, index, pattern, timeout=TIMEOUT):
        """Waits until process `index` printed a line matching `pattern`."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.stdout(index), re.MULTILINE):
            if self.children[index].poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"process {index} never printed {pattern!r}:\n{self.report(index)}")
            time.sleep(0.02)

    def wait_listening(self, index, timeout=TIMEOUT):
        """Waits until process `index` accepts connections on its port."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.ports[index]), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"process {index} does not listen:\n{self.report(index)}")
                time.sleep(0.02)

    def report(self, index):
        return f"--- stdout {index}:\n{self.stdout(index)}--- stderr {index}:\n{self.stderr(index)}"

    def assert_succeeded(self):
        """Every process exited 0 without writing to stderr."""
        statuses = self.wait_all()
        for index, status in enumerate(statuses):
            assert status == 0 and not self.stderr(index), self.report(index)


def run_cluster(tmp_path, processes, workers, args):
    """Runs `python ARGS` as a cluster to the end; returns each process's stdout."""
    with Cluster(tmp_path, processes, workers) as cluster:
        cluster.start_all(args)
        cluster.assert_succeeded()
        return [cluster.stdout(i) for i in range(processes)]


def launch(*args, timeout=TIMEOUT):
    """Runs the launcher (`python -m timely_py.launch ARGS`); returns the CompletedProcess."""
    return python_subprocess(["-m", "timely_py.launch", *args], timeout=timeout)


def hello_lines(out):
    """The `(worker, record)` pairs of hello.py's output; every line must be one."""
    seen = re.findall(r"^worker (\d+): seen (\d+)$", out, re.MULTILINE)
    assert len(seen) == len(out.splitlines()), f"unexpected output:\n{out}"
    return [(int(worker), int(x)) for worker, x in seen]


def assert_hello(outputs, workers):
    """hello.py's output per process: every record once, on worker `x % peers`, printed by
    the process that holds that worker."""
    peers = len(outputs) * workers
    records = Counter()
    for process, out in enumerate(outputs):
        for worker, x in hello_lines(out):
            records[x] += 1
            assert worker == x % peers
            assert worker // workers == process, f"worker {worker} printed by process {process}"
    assert records == Counter(range(10)), "every record 0..9 exactly once"


# --- hello ---------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("processes", [2, 3])
def test_hello_sees_every_record_once_on_its_worker(tmp_path, processes, workers):
    assert_hello(run_cluster(tmp_path, processes, workers, [EXAMPLES / "hello.py"]), workers)


def test_the_launcher_runs_hello(tmp_path):
    hostfile, _ = write_hostfile(tmp_path, 2)
    done = launch("-n", "2", "-w", "2", "--hostfile", hostfile, EXAMPLES / "hello.py")
    assert done.returncode == 0, done.stderr
    # The launcher's only message: where its control endpoint is (docs/launcher.md, "Joining").
    assert [line.split(" (")[0].rsplit(" ", 1)[0] for line in done.stderr.splitlines()] == ["[launch] control endpoint"]
    outputs = ["", ""]
    for line in done.stdout.splitlines():
        match = re.fullmatch(r"\[([01])\] (.*)", line)
        assert match, f"a line without a process prefix: {line!r}"
        outputs[int(match.group(1))] += match.group(2) + "\n"
    assert_hello(outputs, workers=2)


# --- the examples: one process prints, the same as a single-process run ------------------


def load_wordcount_text():
    spec = importlib.util.spec_from_file_location("wordcount_example", EXAMPLES / "wordcount.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TEXT


def single_process(args, workers):
    done = python_subprocess([*args, "-w", workers], timeout=TIMEOUT)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout


EXAMPLE_RUNS = [
    ("wordcount.py", [], 2, 2),
    ("wordcount.py", [], 3, 1),
    ("bfs.py", ["500", "1200", "3"], 2, 2),
    ("bfs.py", ["2000", "5000", "12"], 2, 2),
    ("bfs.py", ["10", "0", "1"], 2, 2),
    ("bfs.py", [], 3, 1),
    ("loops.py", ["300"], 2, 2),
    ("loops.py", [], 3, 1),
]


@pytest.mark.parametrize(
    "example,args,processes,workers",
    EXAMPLE_RUNS,
    ids=[f"{name[:-3]}-{'-'.join(args) or 'default'}-{n}x{w}" for name, args, n, w in EXAMPLE_RUNS],
)
def test_an_example_prints_on_one_process_what_a_single_process_prints(tmp_path, example, args, processes, workers):
    command = [EXAMPLES / example, *args]
    outputs = run_cluster(tmp_path, processes, workers, command)
    assert all(out == "" for out in outputs[1:]), "only the process of worker 0 prints"
    expected = single_process(command, processes * workers)
    assert outputs[0] == expected
    if example == "wordcount.py":
        reference = sorted(
            f"epoch {e}: {word} {count}"
            for e, line in enumerate(load_wordcount_text())
            for word, count in Counter(line.split()).items()
        )
        assert sorted(outputs[0].splitlines()) == reference
    else:
        assert outputs[0].splitlines()[-1] == "ok", "the example's check against a sequential reference"


# --- failures --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "victim,stop",
    [(0, signal.SIGKILL), (1, signal.SIGKILL), (2, signal.SIGKILL), (1, signal.SIGINT)],
    ids=["kill-0", "kill-1", "kill-2", "ctrl-c-1"],
)
def test_a_lost_process_ends_every_other_process_promptly(tmp_path, victim, stop):
    with Cluster(tmp_path, processes=3, workers=2) as cluster:
        cluster.start_all([SCRIPTS / "rounds.py", "1000", "0.02"])
        for index in range(3):
            cluster.wait_for_output(index, r"^worker \d+: round 3$")
        cluster.children[victim].send_signal(stop)
        stopped = time.monotonic()
        for index in range(3):
            if index == victim:
                continue
            status = cluster.wait(index)
            elapsed = time.monotonic() - stopped
            assert elapsed < PROMPT, f"process {index} ended {elapsed:.1f} s after process {victim} was stopped"
            assert status != 0
            err = cluster.stderr(index)
            assert "ClusterError" in err and f"process {victim}" in err, cluster.report(index)
            assert "panicked" not in err
        assert cluster.wait(victim) == -stop
        if stop == signal.SIGINT:
            assert "KeyboardInterrupt" in cluster.stderr(victim)


def test_processes_of_different_clusters_refuse_each_other(tmp_path):
    with Cluster(tmp_path, processes=2) as cluster:
        ids = {0: cluster.env["TIMELY_CLUSTER_ID"], 1: str((int(cluster.env["TIMELY_CLUSTER_ID"]) + 1) % 2**64)}
        start = time.monotonic()
        cluster.start(0, [EXAMPLES / "hello.py"])
        cluster.start(1, [EXAMPLES / "hello.py"], TIMELY_CLUSTER_ID=ids[1])
        statuses = cluster.wait_all(timeout=10)
        assert time.monotonic() - start < 10
        for index, status in enumerate(statuses):
            err = cluster.stderr(index)
            assert status != 0 and cluster.stdout(index) == "", cluster.report(index)
            assert "ClusterError" in err and "cluster id mismatch" in err, cluster.report(index)
            assert f"cluster {ids[index]}, the peer to cluster {ids[1 - index]}" in err


def test_a_process_with_a_wrong_secret_fails_and_the_cluster_still_forms(tmp_path):
    with Cluster(tmp_path, processes=2) as cluster:
        cluster.start(0, [EXAMPLES / "hello.py"])
        cluster.wait_listening(0)
        # The dialing process cannot authenticate process 0 (nor it) and fails at once.
        start = time.monotonic()
        cluster.start(1, [EXAMPLES / "hello.py"], TIMELY_CLUSTER_SECRET="not the secret")
        status = cluster.wait(1, timeout=PROMPT)
        assert time.monotonic() - start < PROMPT
        err = cluster.stderr(1)
        assert status != 0 and "ClusterError" in err and "authentication failed" in err, cluster.report(1)
        # Process 0 rejected the impostor and waits on (until its 60 s connect deadline),
        # so the real process 1 can still join.
        assert cluster.children[0].poll() is None, cluster.report(0)
        cluster.start(1, [EXAMPLES / "hello.py"])
        statuses = cluster.wait_all()
        assert statuses == [0, 0], cluster.report(0) + cluster.report(1)
        assert "authentication failed" in cluster.stderr(0)
        assert_hello([cluster.stdout(0), cluster.stdout(1)], workers=1)


def test_garbage_on_the_port_does_not_stop_a_waiting_process(tmp_path):
    with Cluster(tmp_path, processes=2) as cluster, contextlib.ExitStack() as sockets:
        cluster.start(0, [EXAMPLES / "hello.py"])
        cluster.wait_listening(0)

        def connect():
            return sockets.enter_context(socket.create_connection(("127.0.0.1", cluster.ports[0]), timeout=5))

        connect().sendall(os.urandom(4096))
        # The magic and version of a hello, then a length of 4 GiB, then more garbage.
        connect().sendall(b"TIMELYPY" + struct.pack("<II", PROTOCOL_VERSION, 0xFFFFFFFF) + os.urandom(1024))
        connect().sendall(b"TIMELYPY" + struct.pack("<II", PROTOCOL_VERSION, 0xFFFFFFFF) + b"\xff" * 56)
        silent = connect()  # sends nothing; dropped after the handshake deadline
        connect().sendall(b"TIMELYPY")  # a hello cut short
        time.sleep(0.3)
        assert cluster.children[0].poll() is None, cluster.report(0)
        cluster.start(1, [EXAMPLES / "hello.py"])
        statuses = cluster.wait_all()
        silent.close()
        assert statuses == [0, 0], cluster.report(0) + cluster.report(1)
        assert_hello([cluster.stdout(0), cluster.stdout(1)], workers=1)
        err = cluster.stderr(0)
        assert "not a timely_py peer" in err and "panicked" not in err, err
        assert cluster.stderr(1) == ""


@pytest.mark.parametrize("processes,workers", [(3, 1), (2, 2)])
def test_a_user_exception_in_one_process_ends_the_others(tmp_path, processes, workers):
    """Worker 1 raises ValueError in round 3: its process (1 with one worker per process, 0
    with two) reports it with the operator's name, the others end with ClusterError."""
    failer = 1 // workers
    hostfile, _ = write_hostfile(tmp_path, processes)
    start = time.monotonic()
    done = launch("-n", processes, "-w", workers, "--hostfile", hostfile, SCRIPTS / "fail_in_round.py", "1")
    elapsed = time.monotonic() - start
    assert done.returncode != 0
    assert elapsed < PROMPT, f"the cluster took {elapsed:.1f} s to stop"
    err = done.stderr
    assert f"[{failer}] ValueError: worker 1 rejects round 3" in err, err
    assert f"[{failer}] raised in operator 'Map' on worker 1" in err, err
    for index in range(processes):
        if index != failer:
            assert re.search(rf"^\[{index}\] .*ClusterError: .*process {failer}", err, re.MULTILINE), err
    assert "still running" not in err, "the launcher had to stop a process"
    assert "panicked" not in err


def test_ctrl_c_on_the_launcher_stops_the_whole_cluster(tmp_path):
    hostfile, _ = write_hostfile(tmp_path, 3)
    out_path, err_path = tmp_path / "out", tmp_path / "err"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "timely_py.launch", "-n", "3", "-w", "2", "--hostfile", str(hostfile),
             str(SCRIPTS / "rounds.py"), "1000", "0.02"],
            cwd=ROOT, env=dict(os.environ, PYTHONUNBUFFERED="1"), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
        )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not all(f"[{p}] worker {2 * p}: round 3\n" in out_path.read_text() for p in range(3)):
            assert launcher.poll() is None and time.monotonic() < deadline, err_path.read_text()
            time.sleep(0.02)
        launcher.send_signal(signal.SIGINT)
        stopped = time.monotonic()
        status = launcher.wait(TIMEOUT)
        elapsed = time.monotonic() - stopped
    finally:
        if launcher.poll() is None:
            launcher.kill()  # its children get SIGTERM from the kernel (PR_SET_PDEATHSIG)
            launcher.wait(TIMEOUT)
    err = err_path.read_text()
    assert status == 130, err
    assert elapsed < PROMPT, f"the cluster took {elapsed:.1f} s to stop"
    for index in range(3):
        # A process that raised ClusterError (another one was interrupted first) may get its
        # SIGINT while printing it; Python then prints the exception's repr instead.
        assert re.search(rf"^\[{index}\] (KeyboardInterrupt|.*ClusterError(: |\())", err, re.MULTILINE), err
    assert "still running" not in err, "a process did not stop at the first SIGINT"
    assert "panicked" not in err


def test_a_record_that_cannot_be_pickled_fails_its_sender_with_the_pickling_error(tmp_path):
    hostfile, _ = write_hostfile(tmp_path, 2)
    done = launch("-n", 2, "-w", 1, "--hostfile", hostfile, SCRIPTS / "unpicklable.py")
    assert done.returncode != 0
    err = done.stderr
    assert re.search(r"^\[0\] \w*Error: Can't pickle", err, re.MULTILINE), err
    assert "cannot be pickled" in err, err
    assert re.search(r"^\[1\] .*ClusterError: .*process 0", err, re.MULTILINE), err
    assert "panicked" not in err


def test_runtime_warnings_go_through_python_logging(tmp_path):
    with Cluster(tmp_path, processes=2) as cluster:
        cluster.start(0, [SCRIPTS / "logged_warnings.py"])
        cluster.wait_listening(0)
        cluster.start(1, [EXAMPLES / "hello.py"], TIMELY_CLUSTER_SECRET="not the secret")
        assert cluster.wait(1, timeout=PROMPT) != 0, cluster.report(1)
        cluster.start(1, [SCRIPTS / "logged_warnings.py"])
        assert cluster.wait_all() == [0, 0], cluster.report(0) + cluster.report(1)
        logged = r"^LOGGED timely_communication\.networking\.connect WARNING process 0: rejected connection: .*authentication failed"
        assert re.search(logged, cluster.stdout(0), re.MULTILINE), cluster.report(0)
        assert "authentication failed" not in cluster.stderr(0), cluster.report(0)
