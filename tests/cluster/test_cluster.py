"""Cluster mode: programs run as several processes, as users run them.

Each test starts `python SCRIPT ... -n N -p i -w W -h HOSTFILE` once per process (or the
launcher, `python -m timely_py.launch`), on free loopback ports written to a hostfile
(`support.cluster`). The children are the examples and the small scripts in `scripts/`.
"""

import contextlib
import importlib.util
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
from collections import Counter

import pytest
from support.cluster import (
    PROMPT,
    TIMEOUT,
    Cluster,
    assert_hello,
    run_cluster,
    write_hostfile,
)
from support.paths import CLUSTER_SCRIPTS, EXAMPLES, ROOT
from support.processes import launch, python_subprocess

SCRIPTS = CLUSTER_SCRIPTS

#: The wire protocol version (`PROTOCOL_VERSION` in crates/communication/src/networking/handshake.rs).
PROTOCOL_VERSION = 4

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
