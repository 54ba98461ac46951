"""Records per second through input -> map(identity) -> probe, from Python, one worker.

Measures the per-record cost of the engine and the bindings with the least user code:
1,000,000 records sent in batches of 1,000, one epoch per batch. Prints the median of 5 runs.

    benches/python/.venv/bin/python benches/python/bench_pipeline.py
"""

import statistics
import time

import timely_py as timely

RECORDS, BATCH, REPS = 1_000_000, 1_000, 5


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        scope.input_from(inp).map(lambda x: x).probe_with(probe)
    batches = [list(range(i, i + BATCH)) for i in range(0, RECORDS, BATCH)]
    start = time.perf_counter()
    for epoch, batch in enumerate(batches):
        inp.send_batch(batch)
        inp.advance_to(epoch + 1)
        worker.step()
    while probe.less_than(inp.time):
        worker.step()
    return RECORDS / (time.perf_counter() - start)


if __name__ == "__main__":
    rates = [timely.execute(main)[0] for _ in range(REPS)]
    print(f"input -> map -> probe: {statistics.median(rates) / 1e6:.2f}M records/s (median of {REPS})")
