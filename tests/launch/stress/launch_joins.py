"""Stress run of back-to-back joins through the launcher (issue 11's rare hang).

Each run starts ``python -m timely_py.launch -n 2 -w W examples/hello.py ROUNDS PAUSE`` on free
loopback ports, waits until the cluster has seen its first records, then asks the launcher for
``--joins`` processes one right after another (``python -m timely_py.launch add``, the k-th
served by the k-th worker of ``--servers``), and waits at most ``--timeout`` seconds for the
launcher to end. A run passes when the launcher exits 0, every add was granted, and every
record was seen exactly once by some process.

A run that does not end in time is a hang: every process of the run (the launcher and its
children) gets SIGUSR2, which makes it write its Python stacks (``faulthandler``, registered by
a ``sitecustomize`` this script puts on the children's ``PYTHONPATH``), then ``gdb`` writes
every native thread's stack; all of it, with the launcher's output, goes to
``--dumps/stress-*/run-N/``. The processes are then killed. (While gdb holds a process, the
others may declare it lost after the peer timeout: a ``ClusterError`` in a hung run's output
after the dump started is the dump's doing.)

    .venv/bin/python tests/launch/stress/launch_joins.py --runs 100
    .venv/bin/python tests/launch/stress/launch_joins.py --runs 50 --joins 2 --servers 0,3 --timeout 60
    .venv/bin/python tests/launch/stress/launch_joins.py --runs 5 --joiner-delay 2   # the race, forced

It prints one line per run and a summary with the machine's load average before and after,
and exits 0 only if every run passed. This is not a pytest module (it takes minutes);
`tests/launch/test_launch_joins.py` runs the forced race once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))

from support.cluster import write_hostfile  # noqa: E402  (the tests' free-port hostfile)

#: Written into each run's directory and put first on the children's PYTHONPATH: every Python
#: process of the run dumps all its threads' stacks to its own file on SIGUSR2.
SITECUSTOMIZE = """\
import faulthandler, os, signal, sys
_dir = os.environ.get("TIMELY_STRESS_DUMPS")
if _dir:
    _file = open(os.path.join(_dir, f"python-{os.getpid()}.txt"), "w")
    _file.write(" ".join(sys.argv) + "\\n")
    _file.flush()
    faulthandler.register(signal.SIGUSR2, file=_file, all_threads=True)
"""

SEEN = re.compile(r"^\[(\d+)\] worker (\d+): seen (\d+)$", re.MULTILINE)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a run may take")
    parser.add_argument("--workers", type=int, default=2, help="worker threads per process")
    parser.add_argument("--joins", type=int, default=2, help="processes added back to back")
    parser.add_argument("--servers", default="0,3", help="bootstrap server of each join (cycled)")
    parser.add_argument("--rounds", type=int, default=80)
    parser.add_argument("--pause", type=float, default=0.05)
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between two adds")
    parser.add_argument("--joiner-delay", type=float, default=None,
                        help="joined processes sleep this long before building their dataflow "
                             "(tests/cluster/scripts/slow_joiner_hello.py): forces the race")
    parser.add_argument("--dumps", default=str(ROOT / "target" / "stress-launch-joins"),
                        help="where a hung run's stacks and output go")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--stop-on-hang", action="store_true", help="stop at the first hang")
    return parser.parse_args(argv)


def launch_command(args, hostfile):
    if args.joiner_delay is None:
        program = [str(ROOT / "examples" / "hello.py")]
    else:
        program = [str(TESTS / "cluster" / "scripts" / "slow_joiner_hello.py"), str(args.joiner_delay)]
    return [args.python, "-m", "timely_py.launch", "-n", "2", "-w", str(args.workers),
            "--hostfile", str(hostfile), "--max-processes", str(2 + args.joins),
            *program, str(args.rounds), str(args.pause)]


def wait_for(path, pattern, process, deadline):
    """Waits until `pattern` appears in the file `path`; False if `process` ended or time ran out."""
    while time.monotonic() < deadline:
        if re.search(pattern, path.read_text(), re.MULTILINE):
            return True
        if process.poll() is not None:
            return False
        time.sleep(0.02)
    return False


def add(args, control, server, deadline):
    command = [args.python, "-m", "timely_py.launch", "add", "--control", control, "--server", str(server)]
    timeout = max(1.0, deadline - time.monotonic())
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "add timed out"
    return None if done.returncode == 0 else f"add failed: {done.stderr.strip()}"


def descendants(pid):
    """`pid` and every process below it (from /proc)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents.setdefault(int(stat.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(parents.get(current, []))
    return found


def dump_stacks(pids, directory):
    """Python stacks (SIGUSR2 -> faulthandler) and native stacks (gdb) of every process."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGUSR2)
        except ProcessLookupError:
            continue
    time.sleep(1.0)
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        gdb = ["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"]
        try:
            native = subprocess.run(gdb, capture_output=True, text=True, timeout=120).stdout
        except (OSError, subprocess.TimeoutExpired) as error:
            native = f"gdb failed: {error}"
        (directory / f"native-{pid}.txt").write_text(cmdline + "\n" + native)


def check(out, status, joins, processes):
    """Why a run that ended is wrong, or None."""
    if status != 0:
        return f"launcher exit status {status}"
    seen = sorted((int(x), int(p)) for p, _, x in SEEN.findall(out))
    xs = [x for x, _ in seen]
    if xs != list(range(len(xs))):
        return "a record was lost or seen twice"
    missing = set(range(processes + joins)) - {p for _, p in seen}
    return f"process(es) {sorted(missing)} saw nothing" if missing else None


def ask_for_joins(args, launcher, err_path, out_path, deadline):
    """Waits for the control endpoint and the first records, then adds the processes back to
    back; returns what went wrong, or None."""
    pattern = r"^\[launch\] control endpoint (\S+) "
    if not wait_for(err_path, pattern, launcher, deadline):
        return "the launcher printed no control endpoint"
    control = re.search(pattern, err_path.read_text(), re.MULTILINE)[1]
    if not wait_for(out_path, r"^\[1\] worker \d+: seen", launcher, deadline):
        return "the cluster did not start"
    servers = [int(s) for s in args.servers.split(",")]
    for k in range(args.joins):
        problem = add(args, control, servers[k % len(servers)], deadline)
        if problem:
            return problem
        time.sleep(args.gap)
    return None


def one_run(args, number, scratch):
    """Runs the scenario once; returns ("ok" | "hang" | "fail", detail)."""
    run_dir = scratch / f"run-{number}"
    dumps = run_dir / "dumps"
    dumps.mkdir(parents=True)
    (run_dir / "sitecustomize.py").write_text(SITECUSTOMIZE)
    hostfile, _ = write_hostfile(run_dir, 2 + args.joins)
    env = dict(os.environ, TIMELY_STRESS_DUMPS=str(dumps),
               PYTHONPATH=os.pathsep.join(filter(None, [str(run_dir), os.environ.get("PYTHONPATH")])))
    out_path, err_path = run_dir / "out", run_dir / "err"
    deadline = time.monotonic() + args.timeout
    with open(out_path, "w") as out, open(err_path, "w") as err:
        launcher = subprocess.Popen(launch_command(args, hostfile), cwd=ROOT, env=env,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    try:
        problem = ask_for_joins(args, launcher, err_path, out_path, deadline)
        try:
            status = launcher.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            dump_stacks(descendants(launcher.pid), dumps)
            return "hang", str(run_dir)
        problem = problem or check(out_path.read_text(), status, args.joins, 2)
        return ("fail", f"{problem} ({run_dir})") if problem else ("ok", "")
    finally:
        for pid in reversed(descendants(launcher.pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        launcher.wait()


def main(argv=None):
    args = parse_args(argv)
    dumps = Path(args.dumps)
    dumps.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {os.getloadavg()}", flush=True)
    tally = {"ok": 0, "hang": 0, "fail": 0}
    started = time.monotonic()
    for number in range(args.runs):
        scratch = Path(tempfile.mkdtemp(prefix="stress-", dir=dumps))
        t0 = time.monotonic()
        verdict, detail = one_run(args, number, scratch)
        tally[verdict] += 1
        print(f"run {number}: {verdict} in {time.monotonic() - t0:.1f} s {detail}", flush=True)
        if verdict == "ok":
            shutil.rmtree(scratch, ignore_errors=True)
        elif verdict == "hang" and args.stop_on_hang:
            break
    runs = sum(tally.values())
    print(f"{runs} runs in {time.monotonic() - started:.0f} s: {tally['ok']} ok, {tally['hang']} hung, "
          f"{tally['fail']} failed; load average after: {os.getloadavg()}", flush=True)
    return 0 if tally["ok"] == runs else 1


if __name__ == "__main__":
    sys.exit(main())
