"""Collatz step counts with two nested loops.

For every start number 1..N, count the steps the Collatz map (n -> n/2 if n is even, else
3n + 1) takes to reach 1. The outer loop applies 3n + 1 to odd numbers; a loop nested inside
it halves even numbers until they are odd. Inside the inner loop times are
`(epoch, outer_iteration, inner_iteration)`. Records are exchanged by their current value,
so every worker takes part. Once the dataflow is complete, a second dataflow sends every
worker's results to worker 0, which prints the summary after checking it against a
sequential computation.

Run with `python examples/loops.py [N] [-w WORKERS]` (default N = 1000), or on two processes
of two workers each with `python -m timely_py.launch -n 2 -w 2 examples/loops.py [N]`: only
the process that holds worker 0 prints the summary, the same as with one process.
"""

import sys
from collections import Counter

import timely_py as timely


def sequential_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def collatz_steps(numbers):
    """Returns `main(worker)`, which builds the dataflow and returns, on worker 0, a list with
    every worker's `(index, {start: steps}, deepest)`, where `deepest` holds the largest outer
    and inner iteration numbers the worker saw; on the other workers an empty list."""

    def main(worker):
        steps, deepest = {}, {"outer": 0, "inner": 0}

        def saw(time, _record):
            _epoch, outer_iteration, inner_iteration = time
            deepest["outer"] = max(deepest["outer"], outer_iteration)
            deepest["inner"] = max(deepest["inner"], inner_iteration)

        with worker.dataflow("Collatz") as scope:
            mine = [n for n in numbers if n % worker.peers == worker.index]
            starts = scope.to_stream((n, n, 0) for n in mine)  # (start, value, steps so far)
            with scope.iterative("Odd") as outer:
                odd_handle, odd_back = outer.feedback((0, 1))
                values = starts.enter(outer).concat(odd_back).exchange(lambda r: r[1])
                with outer.iterative("Even") as inner:
                    even_handle, even_back = inner.feedback((0, 0, 1))
                    halving = values.enter(inner).concat(even_back)
                    halving = halving.inspect_time(saw)
                    even = halving.filter(lambda r: r[1] % 2 == 0)
                    even.map(lambda r: (r[0], r[1] // 2, r[2] + 1)).connect_loop(even_handle)
                    odd = halving.filter(lambda r: r[1] % 2 == 1).leave(outer)
                odd.filter(lambda r: r[1] != 1).map(lambda r: (r[0], 3 * r[1] + 1, r[2] + 1)).connect_loop(odd_handle)
                done = odd.filter(lambda r: r[1] == 1).leave(scope)
            done.exchange(lambda r: r[0]).inspect(lambda r: steps.__setitem__(r[0], r[2]))
        while worker.step_or_park():
            pass  # until the dataflow is complete, and with it `steps` and `deepest`

        # Gather every worker's results on worker 0, whichever process it runs in.
        gathered = []
        with worker.dataflow("Gather") as scope:
            scope.to_stream([(worker.index, steps, deepest)]).exchange(lambda _: 0).inspect(gathered.append)
        # `execute` steps the worker until this dataflow completes after main returns; the
        # list is filled by then.
        return gathered

    return main


def main_program(argv):
    args = [a for a in timely.program_args(argv) if not a.startswith("-")]
    limit = int(args[0]) if args else 1000
    numbers = list(range(1, limit + 1))
    gathered = timely.execute_from_args(argv, collatz_steps(numbers))[0]
    if not gathered:  # worker 0 runs in another process, which prints the summary
        return 0

    steps = {}
    for index, part, _ in gathered:
        assert all(n % len(gathered) == index for n in part), "each start reported by its worker"
        steps.update(part)
    outer = max(deepest["outer"] for _, _, deepest in gathered)
    inner = max(deepest["inner"] for _, _, deepest in gathered)
    longest = max(numbers, key=lambda n: (steps[n], -n))
    print(f"collatz: numbers 1..{limit} on {len(gathered)} workers")
    print(f"longest: {longest} takes {steps[longest]} steps")
    print(f"total steps: {sum(steps.values())}")
    print(f"most 3n+1 steps (outer iterations): {outer}")
    print(f"most halvings in a row (inner iterations): {inner}")
    histogram = Counter(s // 25 * 25 for s in steps.values())
    for low in sorted(histogram):
        print(f"  {low:3d}-{low + 24:3d} steps: {histogram[low]}")
    expected = {n: sequential_steps(n) for n in numbers}
    if steps != expected:
        wrong = sorted(n for n in numbers if steps.get(n) != expected[n])
        print(f"MISMATCH for {len(wrong)} numbers, first {wrong[:5]}")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main_program(sys.argv[1:]))
