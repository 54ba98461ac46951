"""Where the analysis's time goes, step by step: each Spark action of the pipeline run on its
own (one after the other, each materialising what the next reads), so every step's time is
its own, not shared with the steps that overlap it in `analyze`.

    .venv/bin/python benches/analysis/stage_costs.py /tmp/np_hello25000 [--driver-memory 3g]
"""

import argparse
import os
import tempfile
import time


from timely_py.analysis import activities as acts
from timely_py.analysis import get_session, worker_stage
from timely_py.analysis.critical_path import critical_paths
from timely_py.analysis.events import count_events
from timely_py.analysis.pipeline import cached_events, with_operator_names
from timely_py.analysis.profiles import all_profiles
from timely_py.analysis.session import parse_conf
from timely_py.analysis.slicing import parse_duration, slice_activities


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--slice", default="1s")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="3g")
    parser.add_argument("--conf", action="append", default=[], help="spark.KEY=VALUE for the session")
    args = parser.parse_args()
    events_n = count_events(args.trace)
    times = {}
    started = time.monotonic()
    spark = get_session(master=args.master, events=events_n, conf=dict(parse_conf(args.conf), **{"spark.driver.memory": args.driver_memory}))
    times["session"] = time.monotonic() - started

    def step(name, action):
        begun = time.monotonic()
        result = action()
        times[name] = time.monotonic() - begun
        print(f"{name}: {times[name]:.2f} s (load {os.getloadavg()[0]:.1f})", flush=True)
        return result

    events, info = cached_events(spark, args.trace)
    step("read, correct, cache events", events.count)
    known = step("catalogue", lambda: acts.catalogue(events))
    communications = acts.communications(events, info.workers_per_process).cache()
    step("communications (joins)", communications.count)
    activities = worker_stage.worker_activities(events, communications, known)
    activities = with_operator_names(activities, known).cache()
    step("activities (worker kernels)", activities.count)
    sliced = slice_activities(activities, parse_duration(args.slice), known.origin).cache()
    step("slices", sliced.count)
    path = critical_paths(sliced, "rust").repartition(1).cache()
    step("critical paths", path.count)
    with tempfile.TemporaryDirectory() as out:
        for name, frame in (("communications", communications), ("activities", activities), ("critical_path", path)):
            step(f"write {name}", lambda frame=frame, name=name: frame.write.parquet(os.path.join(out, name)))
    for name, build in all_profiles(sliced, path, info.workers).items():
        step(f"profile {name}", lambda build=build: build().toArrow())
    total = sum(times.values())
    print(f"{events_n:,} events, {total:.1f} s in all")
    for name, seconds in times.items():
        print(f"  {name:32} {seconds:7.2f} s {100 * seconds / total:5.1f} %")


if __name__ == "__main__":
    main()
