"""What the autoscaler costs a running dataflow: the same in-process workload (2 workers,
every epoch's records exchanged and counted by key) run plainly, traced for a callback that
does nothing (the event classes the autoscaler needs: operators, schedule, messages), and
with a metrics-only `Autoscaler` taking every batch and ticked by worker 0 once per epoch;
configurations in turns, RUNS times each. Prints the median wall times side by side, the
overheads against the plain run, the events per second the callback received and what the
autoscaler's `observe` cost per event (on the calling thread, which holds the interpreter
while it works).

    python benches/autoscale/overhead.py [--runs 5] [--epochs 20000] [--records 200] [--json FILE]

Needs timely_py with pyarrow in the interpreter that runs it (`bash scripts/build.sh`, then
`.venv/bin/python benches/autoscale/overhead.py`). Every run checks its counts against a
sequential count.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from typing import Any, Callable, Dict, List, Optional

import timely_py as timely
from timely_py import autoscale

EVENTS = "operators,schedule,messages"


def workload(epochs: int, records: int, scaler: Optional[autoscale.Autoscaler]) -> Callable[[Any], Dict[Any, int]]:
    """`main(worker)`: worker 0 feeds `records` words an epoch; they are exchanged by word
    and counted; returns this worker's counts."""

    def main(worker: Any) -> Dict[Any, int]:
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        counts: Counter = Counter()
        with worker.dataflow() as scope:
            (scope.input_from(inp).map(lambda n: n % 97).exchange(lambda w: w)
                  .inspect(lambda w: counts.update((w,))).probe_with(probe))
        for epoch in range(epochs):
            if worker.index == 0:
                inp.send_batch(list(range(epoch * records, (epoch + 1) * records)))
            inp.advance_to(epoch + 1)
            while probe.less_than(inp.time):
                worker.step()
            if scaler is not None and worker.index == 0:
                scaler.tick(worker)
        return dict(counts)

    return main


def reference(epochs: int, records: int) -> Dict[int, int]:
    return dict(Counter(n % 97 for n in range(epochs * records)))


def run_once(config: str, epochs: int, records: int) -> Dict[str, float]:
    """One run of `config`; its wall time, events delivered and observe's time."""
    events = [0]
    observing = [0.0]
    scaler = None
    keywords: Dict[str, Any] = {}
    if config == "traced, callback does nothing":
        def nothing(worker: int, batch: Any) -> None:
            events[0] += batch.num_rows
        keywords = dict(trace_callback=nothing, trace_events=EVENTS, trace_flush=0.2)
    elif config == "autoscaler, metrics only":
        scaler = autoscale.Autoscaler(autoscale.Settings(window=1.0, metrics_only=True))

        def observe(worker: int, batch: Any) -> None:
            started = time.perf_counter()
            scaler.observe(worker, batch)
            observing[0] += time.perf_counter() - started
            events[0] += batch.num_rows
        keywords = dict(trace_callback=observe, trace_events=EVENTS, trace_flush=0.2)
    started = time.perf_counter()
    results = timely.execute(workload(epochs, records, scaler), workers=2, **keywords)
    seconds = time.perf_counter() - started
    merged: Counter = Counter()
    for part in results:
        merged.update(part)
    assert dict(merged) == reference(epochs, records), f"{config}: wrong counts"
    decided = 0 if scaler is None else sum(d.action not in ("wait", "no_data") for d in scaler.decisions)
    return {"seconds": seconds, "events": events[0], "observe_seconds": observing[0], "decisions": decided}


CONFIGS = ["plain", "traced, callback does nothing", "autoscaler, metrics only"]


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=20000)
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--json", metavar="FILE")
    options = parser.parse_args(argv)
    runs: Dict[str, List[Dict[str, float]]] = {c: [] for c in CONFIGS}
    for _ in range(options.runs):
        for config in CONFIGS:
            runs[config].append(run_once(config, options.epochs, options.records))
    plain = statistics.median(r["seconds"] for r in runs["plain"])
    rows = []
    print(f"{options.epochs} epochs of {options.records} records, 2 workers, medians of {options.runs} runs")
    print(f"{'configuration':34} {'seconds':>8} {'overhead':>9} {'events/s':>10} {'observe ns/event':>17} "
          f"{'decisions':>9}")
    for config in CONFIGS:
        seconds = statistics.median(r["seconds"] for r in runs[config])
        events = statistics.median(r["events"] for r in runs[config])
        observe = statistics.median(r["observe_seconds"] for r in runs[config])
        row = {"configuration": config, "median_seconds": seconds, "overhead": seconds / plain - 1,
               "events_per_second": events / seconds if events else None,
               "observe_ns_per_event": observe / events * 1e9 if events and observe else None,
               "decisions": statistics.median(r["decisions"] for r in runs[config])}
        rows.append(row)
        print(f"{config:34} {seconds:8.2f} {row['overhead']:+9.1%} "
              f"{(row['events_per_second'] or 0):10.0f} {(row['observe_ns_per_event'] or 0):17.0f} "
              f"{row['decisions']:9.0f}")
    result = {"epochs": options.epochs, "records": options.records, "runs": options.runs, "rows": rows}
    if options.json:
        with open(options.json, "w") as file:
            json.dump(result, file, indent=1)
    return result


if __name__ == "__main__":
    main()
