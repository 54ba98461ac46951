"""How the analysis's HTML viewer copes with large traces: a synthetic analysis output
(OUT tables of N activities on W workers, every activity of worker 0 on the critical path
up to 20,000 edges) is written as viewer.html, then loaded in headless Chromium.

Reports medians over --reps runs: seconds to write the page, its size, when the page was
ready in the browser (navigation to the first drawing, incl. parsing the embedded data) and
how long one drawing takes with everything in view and zoomed in to 1% of the time span.

    .venv/bin/python benches/python/bench_viewer.py --activities 300000 --reps 5
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from timely_py.analysis.headless import attributes_of, dump_dom
from timely_py.analysis.viewer import write_viewer

TYPES = np.array(["operator", "waiting", "parked", "user", "waiting_for_input"])
CRITICAL_EDGES = 20_000


def write_tables(out, activities, workers, seed=1):
    """OUT's tables for `activities` random, non-overlapping activities per worker."""
    rng = np.random.default_rng(seed)
    per = activities // workers
    n = per * workers
    worker = np.repeat(np.arange(workers, dtype=np.int64), per)
    duration = rng.integers(100, 5000, size=n)
    step = (duration + rng.integers(0, 200, size=n)).reshape(workers, per)
    first = np.zeros((workers, 1), np.int64)
    start = (10**9 + np.concatenate([first, np.cumsum(step, axis=1)[:, :-1]], axis=1)).ravel()
    end = start + duration
    columns = {
        "worker": worker, "activity_id": (worker << 40) + np.arange(n), "type": TYPES[rng.integers(0, 5, n)],
        "start": start, "end": end, "operator": rng.integers(0, 20, n),
        "name": np.array([f"operator {i}" for i in range(20)])[rng.integers(0, 20, n)],
        "depth": np.zeros(n, np.int64), "useful": np.ones(n, bool), "ended_by_type": pa.nulls(n, pa.string()),
    }  # fmt: skip
    columns.update({c: pa.nulls(n, pa.int64()) for c in ("ended_by", "ended_by_worker", "ended_by_send")})
    acts = pa.table(columns)
    k = min(per, CRITICAL_EDGES)
    path = pa.table({
        "slice": np.zeros(k, np.int64), "step": np.arange(k)[::-1].copy(), "type": ["operator"] * k,
        "worker": np.zeros(k, np.int64), "source_worker": pa.nulls(k, pa.int64()), "comm_id": pa.nulls(k, pa.int64()),
        "start": start[:k], "end": end[:k],
    })  # fmt: skip
    slices = pa.table({"slice": [0], "start": [int(start.min())], "end": [int(end.max())]})
    empty = ("comm_id", "target_worker", "records", "send_buffer_ns", "transfer_ns", "recv_buffer_ns")
    comms = pa.table({c: pa.array([], pa.int64()) for c in empty})
    for name, table in (("activities", acts), ("critical_path", path), ("slices", slices), ("communications", comms)):
        (out / name).mkdir(parents=True)
        pq.write_table(table, out / name / "part-00000.parquet")
    return int(end.max() - start.min())


def browser_figures(page, span):
    full = attributes_of(dump_dom(page)[0])
    zoomed = attributes_of(dump_dom(page, f"from={span // 2}&to={span // 2 + span // 100}")[0])
    assert "data-errors" not in full and full["data-rendered"] == "true", full
    return float(full["data-ready-ms"]), float(full["data-draw-ms"]), float(zoomed["data-draw-ms"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--activities", type=int, default=300_000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the medians here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        span = write_tables(out, args.activities, args.workers)
        writes, runs = [], []
        for _ in range(args.reps):
            began = time.perf_counter()
            page = write_viewer(out)
            writes.append(time.perf_counter() - began)
            runs.append(browser_figures(page, span))
        size = page.stat().st_size
    medians = {
        "activities": args.activities, "workers": args.workers, "reps": args.reps, "page_bytes": size,
        "write_seconds": statistics.median(writes), "ready_ms": statistics.median(r[0] for r in runs),
        "draw_full_ms": statistics.median(r[1] for r in runs), "draw_zoomed_ms": statistics.median(r[2] for r in runs),
    }  # fmt: skip
    for key, value in medians.items():
        print(f"{key:>15}: {value:.3f}" if isinstance(value, float) else f"{key:>15}: {value}")
    if args.json:
        args.json.write_text(json.dumps(medians, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
