"""The worker that receives record 25 holds the interpreter for HOLD seconds inside an
operator callback, in the middle of a run across processes with a peer timeout of TIMEOUT
seconds (the `peer_timeout` keyword of `execute_from_args`). The run must complete: network threads, not workers, keep the
process visibly alive. Prints how long the hold lasted and how often another Python thread
ran meanwhile (0 proves the interpreter was held), then each worker's record count and sum.
Usage: hold_interpreter.py HOLD TIMEOUT RUNTIME_FLAGS"""

import sys
import threading
import time

import timely_py as timely

hold, timeout = map(float, timely.program_args(sys.argv[1:])[:2])
ROUNDS, PER_ROUND, HELD_AT = 6, 10, 25

ticks = [0]


def tick():
    """Counts 10 ms ticks; it cannot tick while another thread holds the interpreter."""
    while True:
        time.sleep(0.01)
        ticks[0] += 1


def hold_interpreter(x):
    """Busy for `hold` seconds without letting another Python thread run."""
    before, start = ticks[0], time.monotonic()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(hold * 4)  # no other Python thread gets the interpreter meanwhile
    try:
        while time.monotonic() - start < hold:
            pass
    finally:
        sys.setswitchinterval(interval)
    sys.stdout.write(f"held {time.monotonic() - start:.1f} s, other thread ran {ticks[0] - before} times\n")
    return x


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    seen = []
    with worker.dataflow() as scope:
        (
            scope.input_from(inp)
            .exchange(lambda x: x)
            .map(lambda x: hold_interpreter(x) if x == HELD_AT else x)
            .inspect(seen.append)
            .probe_with(probe)
        )
    for rnd in range(ROUNDS):
        if worker.index == 0:
            inp.send_batch(range(rnd * PER_ROUND, (rnd + 1) * PER_ROUND))
        inp.advance_to(rnd + 1)
        while probe.less_than(inp.time):
            worker.step_or_park(0.01)
    return (len(seen), sum(seen))


threading.Thread(target=tick, daemon=True).start()
print(f"done: {timely.execute_from_args(sys.argv[1:], main, peer_timeout=timeout)}")
