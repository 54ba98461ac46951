"""The local launcher, `python -m timely_py.launch`: flags, environment, output, exit status,
stopping, and ports.

The children are the small scripts in `scripts/`, which read the runtime flags
themselves instead of starting a cluster, so these tests exercise the launcher alone.
"""

import contextlib
import errno
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from support.paths import LAUNCH_SCRIPTS, ROOT
from support.ports import free_ports, launcher_base_port
import timely_py
from timely_py import launch

SCRIPTS = LAUNCH_SCRIPTS


def script(name):
    return str(SCRIPTS / f"{name}.py")


def reports(text):
    """The JSON reports of `report.py`, by process index, from the launcher's stdout."""
    found = {}
    for line in text.splitlines():
        match = re.fullmatch(r"\[(\d+)\] (\{.*\})", line)
        if match:
            found[int(match.group(1))] = json.loads(match.group(2))
    return found


def pids(text):
    return [int(pid) for pid in re.findall(r"^\[\d+\] pid=(\d+)$", text, re.MULTILINE)]


def assert_gone(pid_list):
    for pid in pid_list:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def hold_port(port):
    """A socket listening on 127.0.0.1:`port`, or None if something else already does.
    SO_REUSEADDR, as the runtime's listeners have: connections in TIME_WAIT do not count."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as error:
        sock.close()
        if error.errno != errno.EADDRINUSE:
            raise
        return None
    sock.listen()
    return sock


def test_runtime_flags_and_environment_reach_every_process(capsys):
    first = launcher_base_port(3)
    status = launch.main(["-n", "3", "-w", "2", "--cluster-id", "42", "--base-port", str(first),
                          script("report"), "a", "--", "-w", "9"])
    out = capsys.readouterr().out
    assert status == 0
    found = reports(out)
    assert sorted(found) == [0, 1, 2]
    secrets = {report["secret"] for report in found.values()}
    assert len(secrets) == 1 and re.fullmatch(r"[0-9a-f]{64}", secrets.pop())
    for index, report in found.items():
        hostfile = report["flags"]["hostfile"]
        assert report["argv"] == ["a", "-w", "2", "-n", "3", "-p", str(index), "-h", hostfile, "--", "-w", "9"]
        assert report["rest"] == ["a", "--", "-w", "9"]
        # Room for 4 joiners (--max-processes defaults to N + 4), all free at the start.
        assert report["hosts"] == [f"127.0.0.1:{port}" for port in range(first, first + 7)]
        assert report["cluster_id"] == "42" and report["unbuffered"] == "1" and report["stdin"] == ""
        assert report["control"] == found[0]["control"] and report["control"].endswith("/control")
        assert report["secret"] not in " ".join(report["argv"])
    assert not os.path.exists(hostfile), "the temporary hostfile outlives the launcher"
    assert not os.path.exists(found[0]["control"]), "the control socket outlives the launcher"


def test_each_launch_makes_a_new_secret_and_a_random_id(capsys):
    assert launch.main(["-n", "1", script("report")]) == 0
    first = reports(capsys.readouterr().out)[0]
    assert launch.main(["-n", "1", script("report")]) == 0
    second = reports(capsys.readouterr().out)[0]
    assert first["secret"] != second["secret"]
    assert 0 <= int(first["cluster_id"]) < 2**64
    assert first["flags"] == {"processes": "1", "process": "0", "workers": "1"}, "-n 1 needs no hostfile"
    assert first["control"] is None, "nothing can join a process alone: no control endpoint"


def test_whole_prefixed_lines_from_three_processes(capsys):
    """The children write each line in four pieces, all at once: every relayed line must be
    whole, on the stream it was written to, with its own process's prefix."""
    lines = 400
    assert launch.main(["-n", "3", "--base-port", str(launcher_base_port(3)), script("chatter"), str(lines)]) == 0
    captured = capsys.readouterr()
    seen = {0: set(), 1: set(), 2: set()}
    for text, parity in ((captured.out, 0), (captured.err, 1)):
        for line in text.splitlines():
            if line.startswith("[launch] control endpoint "):
                continue
            if re.fullmatch(r"\[(\d)\] (bad \ufffd\ufffd bytes|last line of \1 without newline)", line):
                continue
            match = re.fullmatch(r"\[(\d)\] p=(\d) i=(\d+) x{200}", line)
            assert match and match.group(1) == match.group(2), f"broken line: {line[:80]!r}"
            assert int(match.group(3)) % 2 == parity
            seen[int(match.group(1))].add(int(match.group(3)))
    assert all(indices == set(range(lines)) for indices in seen.values())
    assert len(captured.out.splitlines()) == 3 * (lines // 2 + 2)
    for index in range(3):
        assert f"[{index}] bad \ufffd\ufffd bytes\n" in captured.out
        assert captured.out.count(f"[{index}] last line of {index} without newline\n") == 1


def test_exit_codes(capsys):
    assert launch.main(["-n", "2", "--base-port", str(launcher_base_port(2)), script("exit_code"), "0", "0"]) == 0
    assert launch.main(["-n", "2", "--base-port", str(launcher_base_port(2)), script("exit_code"), "0", "3"]) == 3
    err = capsys.readouterr().err
    assert "[launch] process 1 failed: exit code 3" in err
    assert "process 0 failed" not in err


def test_a_failure_ends_the_others_after_the_grace_period(capsys):
    started = time.monotonic()
    status = launch.main(["-n", "3", "--grace", "0.5", "--base-port", str(launcher_base_port(3)), script("fail_one"), "1", "7"])
    elapsed = time.monotonic() - started
    captured = capsys.readouterr()
    assert status == 7
    assert elapsed < 5, "the launcher waited for the sleepers"
    assert "[1] process 1 fails" in captured.err
    assert "[launch] process 1 failed (exit code 7); waiting up to 0.5 s" in captured.err
    assert "[launch] process 0 stopped by the launcher (SIGTERM): signal SIGTERM" in captured.err
    assert "[launch] process 2 stopped by the launcher (SIGTERM): signal SIGTERM" in captured.err
    assert len(pids(captured.out)) == 3
    assert_gone(pids(captured.out))


def test_processes_that_ignore_sigterm_are_killed(capsys, monkeypatch):
    monkeypatch.setattr(launch.supervise, "KILL_AFTER", 0.3)
    status = launch.main(["-n", "2", "--grace", "0.2", "--base-port", str(launcher_base_port(2)), script("fail_one"), "0", "5", "stubborn"])
    captured = capsys.readouterr()
    assert status == 5
    assert "[launch] process(es) 1 still running: sending SIGKILL" in captured.err
    assert "process 1 stopped by the launcher (SIGKILL): signal SIGKILL" in captured.err
    assert_gone(pids(captured.out))


@contextlib.contextmanager
def launched(*args, processes):
    """Runs the launcher as a subprocess with `forever.py` children; yields it and their pids
    once all have started. The launcher is killed at the end (or after 20 s) if it still runs."""
    launcher = subprocess.Popen(
        [sys.executable, "-m", "timely_py.launch", "-n", str(processes), *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    watchdog = threading.Timer(20, launcher.kill)
    watchdog.start()
    try:
        started = []
        while len(started) < processes:
            line = launcher.stdout.readline()
            assert line, "the launcher ended early: " + launcher.stderr.read()
            started += pids(line)
        yield launcher, started
    finally:
        watchdog.cancel()
        if launcher.poll() is None:
            launcher.kill()
        launcher.wait()
        launcher.stdout.close()
        launcher.stderr.close()


def test_ctrl_c_stops_every_process_and_exits_130():
    """SIGINT to the launcher alone (as a terminal's Ctrl-C would be, the children being in
    their own process groups): process 2 ignores SIGINT, so it takes the SIGTERM."""
    args = ["--stop-grace", "1", "--base-port", str(launcher_base_port(3)), script("forever"), "deaf", "2"]
    with launched(*args, processes=3) as (launcher, started):
        launcher.send_signal(signal.SIGINT)
        out, err = launcher.communicate(timeout=1 + launch.KILL_AFTER + 3)
    assert launcher.returncode == 130, err
    assert out.count("] interrupted") == 2
    assert "[launch] SIGINT: stopping process(es) 0, 1, 2" in err
    assert "[launch] process(es) 2 still running: sending SIGTERM" in err
    assert "[launch] process 2 stopped by the launcher (SIGTERM): signal SIGTERM" in err
    assert "process 0" not in err.replace("process(es) 0", ""), "a process that obeyed SIGINT is reported"
    assert_gone(started)


def dead(pid):
    """Whether `pid` ended (gone, or a zombie nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_processes_end_when_the_launcher_is_killed():
    with launched("--base-port", str(launcher_base_port(2)), script("forever"), processes=2) as (launcher, started):
        launcher.kill()
    deadline = time.monotonic() + 5
    while not all(dead(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(dead(pid) for pid in started)


def test_busy_default_port_moves_the_cluster_to_free_ports(capsys, default_ports):
    held = hold_port(launch.DEFAULT_BASE_PORT)
    try:
        assert launch.main(["-n", "2", script("report")]) == 0
    finally:
        if held is not None:
            held.close()
    captured = capsys.readouterr()
    found = reports(captured.out)
    hosts = found[0]["hosts"]
    assert hosts == found[1]["hosts"] and len(set(hosts)) == 2 + 4, "room for 4 joiners"
    assert all(re.fullmatch(r"127\.0\.0\.1:\d+", host) for host in hosts)
    assert "127.0.0.1:2101" not in hosts
    assert "in use; the processes listen on" in captured.err


def test_free_default_ports_need_no_hostfile(capsys, default_ports):
    if not all(launch.port_is_free(port) for port in (2101, 2102)):
        pytest.skip("the default ports are busy on this machine")
    assert launch.main(["-n", "2", script("report")]) == 0
    assert all("hostfile" not in report["flags"] for report in reports(capsys.readouterr().out).values())


def test_a_busy_base_port_is_an_error(capsys):
    first = launcher_base_port(3)
    held = hold_port(first + 1)
    try:
        status = launch.main(["-n", "3", "--base-port", str(first), script("report")])
    finally:
        if held is not None:
            held.close()
    assert status == launch.SETUP_FAILED
    assert f"port(s) {first + 1} in use" in capsys.readouterr().err


def test_a_hostfile_is_passed_on(tmp_path, capsys):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"127.0.0.1:{port}\n" for port in free_ports(2)))
    assert launch.main(["-n", "2", "--hostfile", str(hostfile), script("report")]) == 0
    found = reports(capsys.readouterr().out)
    assert all(report["flags"]["hostfile"] == str(hostfile) for report in found.values())


def test_module_form(capsys, monkeypatch):
    monkeypatch.chdir(SCRIPTS)
    assert launch.main(["-n", "2", "--base-port", str(launcher_base_port(2)), "-m", "report", "--flag", "-x"]) == 0
    found = reports(capsys.readouterr().out)
    assert found[1]["rest"] == ["--flag", "-x"] and found[1]["flags"]["process"] == "1"


def test_the_command_starts_after_the_launcher_options():
    options = launch.parse_args(["-n", "2", "--grace=3", "--", "job.py", "-n", "5"])
    assert options.target == ("job.py",) and options.args == ("-n", "5") and options.grace == 3
    options = launch.parse_args(["-n2", "-mpkg.job", "-w", "4"])
    assert options.target == ("-m", "pkg.job") and options.args == ("-w", "4") and options.workers == 1
    assert launch.child_command(options, 1, None)[1:] == ["-m", "pkg.job", "-w", "4", "-w", "1", "-n", "2", "-p", "1"]


@pytest.mark.parametrize("argv", [[], ["job.py"], ["-n", "0", "job.py"], ["-n", "2"], ["-n", "2", "-m"],
                                  ["-n", "2", "--hostfile", "h", "--base-port", "3000", "job.py"]])
def test_bad_command_lines_exit_2(argv, capsys):
    assert launch.main(argv) == 2
    assert "usage:" in capsys.readouterr().err


def test_an_interpreter_that_does_not_exist(capsys):
    status = launch.main(["-n", "2", "--base-port", str(launcher_base_port(2)), "--python", "/nonexistent/python", script("report")])
    assert status == launch.SETUP_FAILED
    assert "cannot start process 0" in capsys.readouterr().err


def test_help():
    result = subprocess.run([sys.executable, "-m", "timely_py.launch", "--help"],
                            cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    for words in ("--processes", "--workers", "--base-port", "--hostfile", "--cluster-id", "--python",
                  "--grace", "--stop-grace", "-m MODULE", "TIMELY_CLUSTER_SECRET", "130",
                  "--max-processes", "TIMELY_LAUNCH_CONTROL", "--join S --nn p+1"):
        assert words in result.stdout


def test_a_joiner_gets_join_flags_after_the_script_arguments():
    options = launch.parse_args(["-n", "2", "-w", "3", "--trace", "t", "job.py", "a", "--", "b"])
    assert options.room == 2 + 4
    assert launch.child_command(options, 4, "H", join=5)[1:] == [
        "job.py", "a", "-w", "3", "-n", "2", "-p", "4", "-h", "H", "--join", "5", "--nn", "5",
        "--trace", os.path.abspath("t"), "--", "b"]
    # Everything the launcher adds is the runtime's own: the program sees its arguments only.
    command = launch.child_command(options, 4, None, join=5, gone=[1, 3])
    assert "--gone" in command and timely_py.program_args(command[1:]) == ["job.py", "a", "--", "b"]
    assert launch.parse_args(["-n", "1", "job.py"]).room == 1, "nothing can join a process alone"
    assert launch.parse_args(["-n", "2", "--max-processes", "9", "job.py"]).room == 9


@pytest.mark.parametrize("argv", [["-n", "3", "--max-processes", "2", "job.py"],
                                  ["-n", "2", "--base-port", "65531", "job.py"]])
def test_too_little_room_exits_2(argv, capsys):
    assert launch.main(argv) == 2
    err = capsys.readouterr().err
    assert "--max-processes 2 is below -n 3" in err or "--base-port 65531 leaves no port for process 5" in err


def test_a_hostfile_bounds_the_room_for_joins(tmp_path, capsys):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# two processes\n127.0.0.1:23811\n\n127.0.0.1:23812  # the second\n")
    status = launch.main(["-n", "2", "--max-processes", "3", "--hostfile", str(hostfile), script("report")])
    assert status == launch.SETUP_FAILED
    assert "--max-processes 3 needs as many addresses, but hostfile" in capsys.readouterr().err


def test_help_of_the_add_subcommand():
    result = subprocess.run([sys.executable, "-m", "timely_py.launch", "add", "--help"],
                            cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    for words in ("--control", "--server", "TIMELY_LAUNCH_CONTROL"):
        assert words in result.stdout


def test_the_runtime_options_are_listed_once_and_rendered_as_the_runtime_reads_them():
    options = timely_py._core.runtime_options()
    spellings = [s for names, _, _ in options for s in names]
    assert len(spellings) == len(set(spellings)) and {"-w", "--threads", "--nn", "--trace-flush"} <= set(spellings)
    assert [takes for names, takes, _ in options if names[0] == "--insecure"] == [False]
    assert timely_py._core.runtime_args({"insecure": "", "processes": "3"}) == ["-n", "3", "--insecure"]
    with pytest.raises(ValueError, match="not an option of the runtime"):
        timely_py._core.runtime_args({"verbose": "1"})
