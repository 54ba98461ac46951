"""Runs ROUNDS rounds (default 1000) of input -> exchange -> probe, sleeping SLEEP seconds
(default 0.02) per round, so that a test can stop a process while the cluster is running.
Each worker prints `worker I: round R` after round 3 and every 50 rounds, so the test knows
the cluster is up. PEER_TIMEOUT, if given, is passed as the `peer_timeout` keyword.
Usage: rounds.py [ROUNDS] [SLEEP] [PEER_TIMEOUT] RUNTIME_FLAGS"""

import sys
import time

import timely_py as timely

args = timely.program_args(sys.argv[1:])
rounds = int(args[0]) if args else 1000
pause = float(args[1]) if len(args) > 1 else 0.02
peer_timeout = float(args[2]) if len(args) > 2 else None


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        scope.input_from(inp).exchange(lambda x: x).probe_with(probe)
    for rnd in range(rounds):
        inp.send_batch(range(rnd, rnd + 10))
        inp.advance_to(rnd + 1)
        while probe.less_than(inp.time):
            worker.step_or_park(0.01)
        if rnd == 3 or rnd % 50 == 0:
            # One write per line: print() writes the newline separately, so the lines of two
            # worker threads could interleave.
            sys.stdout.write(f"worker {worker.index}: round {rnd}\n")
        time.sleep(pause)
    return rounds


print(f"done: {timely.execute_from_args(sys.argv[1:], main, peer_timeout=peer_timeout)}")
