"""The launcher makes processes leave the cluster it runs (`docs/launcher.md`, "Leaving"):
the remove request's format, `LeaveDesk`'s refusals and waits, SIGUSR1 to the leaving
process alone, the supervisor's report of a leave, `JoinDesk` around leaves, the routing of
requests to their desk, and `remove_process` and the ``remove`` subcommand.

No cluster runs here: the processes are small Python programs (`MEMBER`) that name a thread
as the runtime's join acceptor does once they are told to (so `children.admits_joins` sees
them admit joins when a test wants it) and handle SIGUSR1 as a test asks."""

import io
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from support.paths import ROOT
from timely_py import launch
from timely_py.launch.children import admits_joins, kill_now, spawn
from timely_py.launch.control import AddRequest, ControlEndpoint, Pending, RemoveRequest, parse_request
from timely_py.launch.desks import RequestRouter
from timely_py.launch.joins import JoinDesk
from timely_py.launch.leaves import LeaveDesk
from timely_py.launch.relay import Sink
from timely_py.launch.supervise import StopRequests, Supervisor

pytestmark = pytest.mark.timeout(60)

#: A stand-in for a cluster process: `MEMBER READY_FILE ON_USR1`. It prints "up" once its
#: SIGUSR1 handling is in place, and starts a thread named like the runtime's join acceptor
#: (so it admits joins) once READY_FILE exists. On SIGUSR1: "default" dies of it; "stay"
#: prints "asked to leave" and runs on; "exit0" and "exit3" start with a grandchild in
#: their process group, and say whether it survived the signal before exiting 0 or 3.
MEMBER = r"""
import ctypes, os, signal, subprocess, sys, threading, time
ready, on_usr1 = sys.argv[1], sys.argv[2]
grandchild = subprocess.Popen(["sleep", "30"]) if on_usr1.startswith("exit") else None

named = threading.Event()

def acceptor():
    ctypes.CDLL(None).prctl(15, b"timely:join-acc", 0, 0, 0)
    named.set()
    threading.Event().wait()

def leave(signum, frame):
    if grandchild is None:
        print("asked to leave", flush=True)
        return
    time.sleep(0.2)
    print("left; grandchild " + ("alive" if grandchild.poll() is None else "dead"), flush=True)
    grandchild.kill()
    grandchild.wait()
    sys.exit(int(on_usr1[4:]))

if on_usr1 != "default":
    signal.signal(signal.SIGUSR1, leave)
print("up", flush=True)
while not os.path.exists(ready):
    time.sleep(0.02)
threading.Thread(target=acceptor, daemon=True).start()
named.wait()
print("admits joins", flush=True)
while True:
    time.sleep(0.05)
"""


class Cluster:
    """Processes started with `children.spawn` as the launcher starts them, the options of a
    launch of `processes`, and the launcher's stderr."""

    def __init__(self, directory, processes=2):
        self.directory = directory
        self.options = launch.parse_args(["-n", str(processes), "--grace", "2", "job.py"])
        self.children = []
        self.stderr = io.StringIO()
        self.err = Sink(self.stderr, threading.Lock())
        self.env = dict(os.environ)

    def member(self, on_usr1="stay", ready=True):
        """Starts the next process; with `ready`, waits until it admits joins."""
        index = len(self.children)
        flag = os.path.join(self.directory, f"ready-{index}")
        if ready:
            open(flag, "w").close()
        child = spawn(index, [sys.executable, "-c", MEMBER, flag, on_usr1], self.env)
        self.children.append(child)
        expect(child, "up")
        if ready:
            expect(child, "admits joins")
            assert admits_joins(child)
        return child

    def admit(self, child):
        """Lets a member that was not ready admit joins."""
        open(os.path.join(self.directory, f"ready-{child.index}"), "w").close()
        expect(child, "admits joins")

    def program(self, code):
        """Starts the next process as ``python -c CODE``."""
        child = spawn(len(self.children), [sys.executable, "-c", code], self.env)
        self.children.append(child)
        return child

    def leaves(self):
        return LeaveDesk(self.options, self.children, self.err)

    def joins(self):
        return JoinDesk(self.options, None, self.options.room, self.env, self.children, self.err, self.err)


def expect(child, line):
    """Reads `child`'s stdout up to the line `line`."""
    seen = []
    while True:
        got = child.process.stdout.readline()
        assert got, f"process {child.index} ended before {line!r}; it printed {seen}"
        seen.append(got.decode().rstrip("\n"))
        if seen[-1] == line:
            return


@pytest.fixture
def cluster():
    with tempfile.TemporaryDirectory(prefix="tl-leave-") as directory:
        made = Cluster(directory)
        try:
            yield made
        finally:
            kill_now([child for child in made.children if child.running()])


@pytest.fixture
def endpoint():
    """A control endpoint in a short directory (Unix socket paths are short)."""
    with tempfile.TemporaryDirectory(prefix="tl-", dir="/tmp") as directory:
        made = ControlEndpoint(directory)
        made.start()
        try:
            yield made
        finally:
            made.close()


def ask(desk, request, healthy=True):
    """A request waiting at `desk` after one tick."""
    pending = Pending(request)
    desk.take(pending)
    desk.tick(healthy)
    return pending


# The request format.


def test_parse_request_reads_both_kinds():
    assert parse_request(b'{"request": "add", "server": 3}') == AddRequest(3)
    assert parse_request(b'{"request": "add"}') == AddRequest(0)
    assert parse_request(b'{"request": "remove", "process": 2}') == RemoveRequest(2)
    assert parse_request(b'{"request": "remove", "process": 0}') == RemoveRequest(0)


@pytest.mark.parametrize("line, words", [
    (b"\xff not json", "a request is one line of JSON"),
    (b"[1, 2]", "a request is a JSON object"),
    (b'{"request": "stop", "process": 1}', 'unknown request "stop": the launcher knows only'),
    (b'{"process": 1}', "unknown request null"),
    (b'{"request": "remove"}', 'a remove request names its process: {"request": "remove", "process": P}'),
    (b'{"request": "remove", "process": -1}', "the process must be a process index (an int >= 0), not -1"),
    (b'{"request": "remove", "process": "1"}', 'the process must be a process index (an int >= 0), not "1"'),
    (b'{"request": "remove", "process": true}', "not true"),
    (b'{"request": "remove", "process": 1.0}', "not 1.0"),
    (b'{"request": "add", "server": false}', "the server must be a worker index (an int >= 0), not false"),
])
def test_parse_request_refuses_malformed_requests(line, words):
    with pytest.raises(ValueError) as error:
        parse_request(line)
    assert words in str(error.value)


# LeaveDesk: refusals.


def test_a_stopping_cluster_refuses_a_remove(cluster):
    cluster.member()
    cluster.member()
    pending = ask(cluster.leaves(), RemoveRequest(1), healthy=False)
    assert pending.reply == {"error": "the cluster is stopping"}
    assert not cluster.children[1].leaving


def test_a_process_alone_cannot_leave(tmp_path):
    alone = Cluster(str(tmp_path), processes=1)
    try:
        alone.member()
        pending = ask(alone.leaves(), RemoveRequest(0))
        assert pending.reply == {"error": "a process alone (-n 1) has no cluster to leave"}
    finally:
        kill_now(alone.children)


def test_no_such_process(cluster):
    cluster.member()
    cluster.member()
    pending = ask(cluster.leaves(), RemoveRequest(5))
    assert pending.reply == {"error": "no process 5 to leave: the cluster has processes 0 to 1"}


def test_a_process_that_ended_cannot_leave(cluster):
    cluster.member()
    cluster.program("raise SystemExit(4)").process.wait()
    cluster.member()
    pending = ask(cluster.leaves(), RemoveRequest(1))
    assert pending.reply == {"error": "process 1 has ended (exit code 4); only a running process can leave"}


def test_a_process_is_asked_to_leave_once(cluster):
    cluster.member()
    cluster.member()
    desk = cluster.leaves()
    assert ask(desk, RemoveRequest(1)).reply == {"process": 1}
    expect(cluster.children[1], "asked to leave")
    assert ask(desk, RemoveRequest(1)).reply == {"error": "process 1 was already asked to leave the cluster"}


def test_a_process_that_left_cannot_leave_again(cluster):
    cluster.member()
    cluster.member(on_usr1="exit0")
    desk = cluster.leaves()
    assert ask(desk, RemoveRequest(1)).reply == {"process": 1}
    assert cluster.children[1].process.wait() == 0
    assert ask(desk, RemoveRequest(1)).reply == {"error": "process 1 already left the cluster"}


def test_the_last_process_that_is_not_leaving_stays(cluster):
    cluster.member()
    cluster.member()
    desk = cluster.leaves()
    assert ask(desk, RemoveRequest(0)).reply == {"process": 0}
    pending = ask(desk, RemoveRequest(1))
    assert pending.reply == {"error": "process 1 is the last process that is not leaving; at least one "
                                      "process must stay in the cluster"}
    assert not cluster.children[1].leaving


def test_a_process_whose_peers_ended_is_the_last(cluster):
    cluster.program("pass").process.wait()
    cluster.member()
    pending = ask(cluster.leaves(), RemoveRequest(1))
    assert "process 1 is the last process that is not leaving" in pending.reply["error"]


# LeaveDesk: waits.


def test_a_remove_waits_until_the_process_admits_joins(cluster):
    cluster.member()
    late = cluster.member(ready=False)
    desk = cluster.leaves()
    pending = ask(desk, RemoveRequest(1))
    time.sleep(0.2)
    desk.tick(True)
    assert not pending.answered.is_set() and not late.leaving
    cluster.admit(late)
    desk.tick(True)
    assert pending.reply == {"process": 1}
    expect(late, "asked to leave")


def test_a_remove_is_refused_when_the_process_never_admits_joins(cluster):
    cluster.member()
    cluster.member(ready=False)
    desk = cluster.leaves()
    desk.timeout = 0.3
    pending = ask(desk, RemoveRequest(1))
    assert not pending.answered.is_set()
    time.sleep(0.4)
    desk.tick(True)
    assert pending.reply == {"error": "process 1 did not finish its setup within 0.3 s (it does not "
                                      "admit joins yet), so it cannot leave"}
    assert not cluster.children[1].leaving


def test_a_remove_waits_while_a_join_is_in_progress(cluster):
    cluster.member()
    cluster.member()
    joiner = cluster.member(ready=False)
    desk = cluster.leaves()
    desk.timeout = 0.3
    pending = ask(desk, RemoveRequest(1))
    assert not pending.answered.is_set()
    time.sleep(0.4)
    desk.tick(True)
    assert pending.reply == {"error": "a join is in progress: process(es) 2 did not admit joins within "
                                      "0.3 s; a process can leave only once every joiner is admitted"}
    pending = ask(desk, RemoveRequest(1))
    cluster.admit(joiner)
    desk.tick(True)
    assert pending.reply == {"process": 1}


def test_processes_leave_one_at_a_time(cluster):
    cluster.member()
    cluster.member()
    first = cluster.member()  # "stay": it is asked to leave and runs on until killed
    desk = cluster.leaves()
    desk.timeout = 0.3
    assert ask(desk, RemoveRequest(2)).reply == {"process": 2}
    pending = ask(desk, RemoveRequest(1))
    assert not pending.answered.is_set()
    time.sleep(0.4)
    desk.tick(True)
    assert pending.reply == {"error": "process(es) 2 did not finish leaving within 0.3 s; processes leave one at a time"}
    pending = ask(desk, RemoveRequest(1))
    first.process.kill()
    first.process.wait()
    desk.tick(True)
    assert pending.reply == {"process": 1}


# LeaveDesk: the signal.


def test_a_granted_remove_sends_sigusr1_to_the_process_alone(cluster):
    cluster.member()
    leaver = cluster.member(on_usr1="exit0")
    pending = ask(cluster.leaves(), RemoveRequest(1))
    assert pending.reply == {"process": 1}
    assert leaver.leaving and leaver.signalled is None
    assert "[launch] process 1 leaves the cluster (asked by a remove request)\n" in cluster.stderr.getvalue()
    expect(leaver, "left; grandchild alive")
    assert leaver.process.wait() == 0
    assert cluster.children[0].running() and not cluster.children[0].leaving


def test_sigusr1_reaches_the_process(cluster):
    cluster.member()
    deaf = cluster.member(on_usr1="default")
    assert ask(cluster.leaves(), RemoveRequest(1)).reply == {"process": 1}
    assert deaf.process.wait() == -signal.SIGUSR1


# The supervisor.


def test_the_supervisor_reports_a_leave_and_it_is_no_failure(cluster):
    leaver = cluster.member(on_usr1="exit0")
    cluster.program("import time; time.sleep(1)")
    leaver.ask_to_leave()
    supervisor = Supervisor(cluster.children, cluster.options, StopRequests(), cluster.err)
    supervisor.run()
    assert supervisor.outcome() == 0
    err = cluster.stderr.getvalue()
    assert "[launch] process 0 left the cluster\n" in err
    assert "process 1 left" not in err and "failed" not in err, err


def test_a_process_that_fails_while_leaving_is_a_failure(cluster):
    leaver = cluster.member(on_usr1="exit3")
    cluster.program("import time; time.sleep(1)")
    leaver.ask_to_leave()
    supervisor = Supervisor(cluster.children, cluster.options, StopRequests(), cluster.err)
    supervisor.run()
    assert supervisor.outcome() == 3
    err = cluster.stderr.getvalue()
    assert "left the cluster" not in err
    assert "[launch] process 0 failed: exit code 3\n" in err


# JoinDesk around leaves.


def test_a_join_after_a_leave_is_told_which_process_left(cluster):
    cluster.member()
    cluster.member(on_usr1="exit0")
    assert ask(cluster.leaves(), RemoveRequest(1)).reply == {"process": 1}
    assert cluster.children[1].process.wait() == 0
    pending = ask(cluster.joins(), AddRequest(1))
    assert pending.reply == {"error": "worker 1 cannot serve the join: its process 1 left the cluster"}
    pending = ask(cluster.joins(), AddRequest(0))
    assert pending.reply == {"process": 2}
    command = cluster.children[2].process.args
    assert command[command.index("--join"):command.index("--join") + 6] == ["--join", "0", "--nn", "3", "--gone", "1"]


def test_a_join_waits_while_a_process_is_leaving(cluster):
    cluster.member()
    cluster.member()
    assert ask(cluster.leaves(), RemoveRequest(1)).reply == {"process": 1}
    desk = cluster.joins()
    desk.timeout = 0.3
    pending = ask(desk, AddRequest(0))
    assert not pending.answered.is_set()
    time.sleep(0.4)
    desk.tick(True)
    assert pending.reply == {"error": "process(es) 1 did not finish leaving the cluster within 0.3 s; "
                                      "a process can join only while no process is leaving"}
    assert len(cluster.children) == 2, "a joiner was started during a leave"


# Routing.


class Recorder:
    """A desk that records what it was given."""

    def __init__(self):
        self.taken, self.ticks = [], []

    def take(self, pending):
        self.taken.append(pending.request)

    def tick(self, healthy):
        self.ticks.append(healthy)


def test_the_router_hands_each_request_to_the_desk_of_its_kind(endpoint):
    joins, leaves = Recorder(), Recorder()
    for request in (AddRequest(1), RemoveRequest(2), AddRequest(0), RemoveRequest(0)):
        endpoint.requests.put(Pending(request))
    router = RequestRouter(endpoint, joins, leaves)
    router.tick(True)
    router.tick(False)
    assert joins.taken == [AddRequest(1), AddRequest(0)]
    assert leaves.taken == [RemoveRequest(2), RemoveRequest(0)]
    assert joins.ticks == leaves.ticks == [True, False]


# remove_process and the remove subcommand.


def serve_one(endpoint, answer):
    """Answers the endpoint's next request with `answer(pending)` on a thread; the thread
    keeps the request in `served`."""
    served = []

    def serve():
        pending = endpoint.requests.get(timeout=10)
        served.append(pending.request)
        answer(pending)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread, served


def test_remove_process_asks_the_endpoint(endpoint):
    thread, served = serve_one(endpoint, lambda pending: pending.grant(pending.request.process))
    assert launch.remove_process(2, control=endpoint.address, timeout=10) == 2
    thread.join()
    assert served == [RemoveRequest(2)]


def test_remove_process_raises_the_refusal(endpoint):
    thread, _ = serve_one(endpoint, lambda pending: pending.refuse("no process 7 to leave"))
    with pytest.raises(launch.LaunchError, match="the launcher refused to remove process 7: no process 7 to leave"):
        launch.remove_process(7, control=endpoint.address, timeout=10)
    thread.join()


def test_remove_process_outside_a_launched_cluster(tmp_path, monkeypatch):
    monkeypatch.delenv(launch.ENV_LAUNCH_CONTROL, raising=False)
    with pytest.raises(launch.LaunchError, match="not in a cluster started by python -m timely_py.launch"):
        launch.remove_process(1)
    with pytest.raises(launch.LaunchError, match="no launcher listens at"):
        launch.remove_process(1, control=str(tmp_path / "control"))
    for wrong in ("1", True, 1.0):
        with pytest.raises(TypeError, match="process must be a process index"):
            launch.remove_process(wrong)


def test_the_remove_subcommand_prints_the_process(endpoint, capsys):
    thread, served = serve_one(endpoint, lambda pending: pending.grant(pending.request.process))
    assert launch.main(["remove", "--control", endpoint.address, "--process", "3", "--timeout", "10"]) == 0
    thread.join()
    assert served == [RemoveRequest(3)] and capsys.readouterr().out == "3\n"


def test_the_remove_subcommand_exits_1_when_refused(endpoint, capsys):
    thread, _ = serve_one(endpoint, lambda pending: pending.refuse("the cluster is stopping"))
    assert launch.main(["remove", "--control", endpoint.address, "--process", "1"]) == 1
    thread.join()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "error: the launcher refused to remove process 1: the cluster is stopping" in captured.err


@pytest.mark.parametrize("argv, words", [
    (["--process", "1"], "--control ADDRESS is required outside a launched cluster"),
    (["--control", "/nowhere/control"], "the following arguments are required: --process"),
    (["--control", "/nowhere/control", "--process", "-1"], "must be from 0 to"),
    (["--control", "/nowhere/control", "--process", "x"], "expected a whole number"),
])
def test_a_malformed_remove_command_exits_2(argv, words, monkeypatch, capsys):
    monkeypatch.delenv(launch.ENV_LAUNCH_CONTROL, raising=False)
    assert launch.main(["remove", *argv]) == 2
    assert words in capsys.readouterr().err


def test_the_remove_subcommand_exits_1_without_a_launcher(tmp_path):
    done = subprocess.run([sys.executable, "-m", "timely_py.launch", "remove", "--control",
                           str(tmp_path / "control"), "--process", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert "error: no launcher listens at" in done.stderr


def test_help_of_the_remove_subcommand():
    done = subprocess.run([sys.executable, "-m", "timely_py.launch", "remove", "--help"],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    for words in ("--control", "--process", "--timeout", "TIMELY_LAUNCH_CONTROL"):
        assert words in done.stdout
    launcher = subprocess.run([sys.executable, "-m", "timely_py.launch", "--help"],
                              cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert "python -m timely_py.launch remove [--control ADDRESS] --process P" in launcher.stdout
