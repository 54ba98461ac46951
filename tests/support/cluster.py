"""Clusters of processes for the tests: `Cluster` starts `python SCRIPT ... -n N -p i -w W -h
HOSTFILE` once per process on free loopback ports (`support.ports`), with one cluster id and
secret for all and output captured in files; leaving it kills whatever still runs, and every
wait has a timeout, so a hang fails the test instead of blocking the suite. Also
hello.py's output checked (`assert_hello`)."""

import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from support.paths import ROOT
from support.ports import free_ports

#: How long any process of a test may take before the test fails as hung.
TIMEOUT = 20



#: How soon after losing a peer every other process must have ended.
PROMPT = 5



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

