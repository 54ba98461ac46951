"""Two processes exchange a few records; each prints `worker.network_stats()` as a JSON line.
Usage: network_stats.py RUNTIME_FLAGS"""

import json
import sys

import timely_py as timely


def main(worker):
    with worker.dataflow() as scope:
        probe = scope.to_stream(range(100)).exchange(lambda x: x).probe()
    while not probe.done():
        worker.step()
    print(json.dumps(worker.network_stats()), flush=True)


timely.execute_from_args(sys.argv[1:], main)
