"""Where one analysis's time goes: its stages, Spark's jobs (from Spark's own event log) and,
optionally, the driver's Python (cProfile).

Runs `analyze` on a trace in a fresh session made as the console script makes it (the
small-trace settings apply below `SMALL_TRACE_EVENTS`), with `spark.eventLog.enabled`, then
reads the event log: per job its wall time, stages, tasks, the tasks' summed run and CPU
time, and the call site that started it. Prints a table, largest jobs first, and the totals.

    .venv/bin/python benches/analysis/profile_analysis.py /tmp/np_hello250 [--views] [--cprofile 30] [--jobs]

With `--no-log` it only times the analysis (the session's start included), as
`docs/benchmarks.md` compares two checkouts: `PYTHONPATH=checkout/python` run by run.
"""

import argparse
import cProfile
import glob
import inspect
import json
import os
import pstats
import tempfile
import time
from collections import defaultdict

from timely_py.analysis import analyze, get_session
from timely_py.analysis.events import count_events
from timely_py.analysis.session import parse_conf


def read_log(directory):
    """Jobs of the event log in ``directory``: id -> dict of figures."""
    jobs, stages = {}, defaultdict(lambda: {"tasks": 0, "run_ms": 0, "cpu_ms": 0.0})
    (path,) = glob.glob(os.path.join(directory, "*"))
    files = sorted(glob.glob(os.path.join(path, "events_*"))) if os.path.isdir(path) else [path]
    for name in files:
        with open(name) as log:
            lines = log.readlines()
        for line in lines:
            event = json.loads(line)
            kind = event["Event"]
            if kind == "SparkListenerJobStart":
                props = event.get("Properties") or {}
                infos = event.get("Stage Infos") or [{}]
                site = props.get("spark.job.description") or props.get("callSite.short")
                site = site or "[" + " / ".join(sorted({i.get("Stage Name", "?") for i in infos})) + "]"
                rdds = {r.get("Name", "") for i in infos for r in i.get("RDD Info", [])}
                site += "  " + ",".join(sorted(n for n in rdds if "Scan" in n or "Arrow" in n or "Exchange" in n))[:90]
                jobs[event["Job ID"]] = {"start": event["Submission Time"], "site": site, "stages": event["Stage IDs"]}
            elif kind == "SparkListenerJobEnd":
                jobs[event["Job ID"]]["end"] = event["Completion Time"]
            elif kind == "SparkListenerTaskEnd":
                metrics = event.get("Task Metrics") or {}
                figures = stages[event["Stage ID"]]
                figures["tasks"] += 1
                figures["run_ms"] += metrics.get("Executor Run Time", 0)
                figures["cpu_ms"] += metrics.get("Executor CPU Time", 0) / 1e6
    for job_id, job in jobs.items():
        ran = [stages[s] for s in job["stages"] if s in stages]
        job.update(tasks=sum(s["tasks"] for s in ran), run_ms=sum(s["run_ms"] for s in ran),
                   cpu_ms=sum(s["cpu_ms"] for s in ran), ran_stages=len(ran))  # fmt: skip
        job["wall_ms"] = job.get("end", job["start"]) - job["start"]
    return jobs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--slice", default="1s")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--views", action="store_true", help="also the plots, viewer and Perfetto trace")
    parser.add_argument("--cprofile", type=int, default=0, help="print this many of the driver's costliest functions")
    parser.add_argument("--kernels", default="rust")
    parser.add_argument("--through-spark", action="store_true", help="per_worker=False: the path through Spark's SQL")
    parser.add_argument("--conf", action="append", default=[], help="spark.KEY=VALUE for the session")
    parser.add_argument("--jobs", action="store_true", help="list every job")
    parser.add_argument("--no-log", action="store_true", help="time only: no event log, no job figures")
    args = parser.parse_args()
    logs, out = tempfile.mkdtemp(), tempfile.mkdtemp()
    profiler = cProfile.Profile() if args.cprofile else None
    stages = {}
    started = time.monotonic()
    if profiler:
        profiler.enable()
    events = count_events(args.trace)
    log = {} if args.no_log else {"spark.eventLog.enabled": "true", "spark.eventLog.dir": logs,
                                  "spark.eventLog.compress": "false"}  # fmt: skip
    options = dict(master=args.master, events=events, conf=dict(parse_conf(args.conf), **log))
    if "sql" in inspect.signature(get_session).parameters:  # as the console script asks (older checkouts: no sql)
        options["sql"] = args.through_spark or args.kernels != "rust"  # else the per-worker path
    spark = get_session(**options)
    session_s = time.monotonic() - started
    analyze(args.trace, out=out, slice=args.slice, spark=spark, views=args.views, kernels=args.kernels,
            per_worker=False if args.through_spark else None,
            progress=lambda stage, s: stages.__setitem__(stage, s))  # fmt: skip
    stages.pop("spark session", None)
    total = time.monotonic() - started
    if profiler:
        profiler.disable()
    spark.stop()
    print(f"{events:,} events: {total:.1f} s in all, load {os.getloadavg()}")
    print(f"session start {session_s:.1f} s; stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in stages.items()))
    if args.no_log:
        return
    jobs = read_log(logs)
    print(f"{len(jobs)} jobs, {sum(j['ran_stages'] for j in jobs.values())} stages run, "
          f"{sum(j['tasks'] for j in jobs.values())} tasks; jobs' wall {sum(j['wall_ms'] for j in jobs.values()) / 1e3:.1f} s "
          f"(overlapping), tasks' run {sum(j['run_ms'] for j in jobs.values()) / 1e3:.1f} s, "
          f"CPU {sum(j['cpu_ms'] for j in jobs.values()) / 1e3:.1f} s")  # fmt: skip
    print(f"{'job':>4} {'wall s':>7} {'stages':>6} {'tasks':>5} {'run s':>6} {'cpu s':>6}  call site")
    for job_id, job in sorted(jobs.items()) if args.jobs else ():
        print(f"{job_id:4} {job['wall_ms'] / 1e3:7.2f} {job['ran_stages']:6} {job['tasks']:5} "
              f"{job['run_ms'] / 1e3:6.2f} {job['cpu_ms'] / 1e3:6.2f}  {job['site']}")  # fmt: skip
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.cprofile)


if __name__ == "__main__":
    main()
