#!/usr/bin/env python3
"""Throughput of the record codec (`timely_py.codec`) next to pickle.

For each workload, a batch of `--batch` records (default 1000) is encoded and decoded by
our codec (`codec.encode(batch)`, `codec.decode(data)`) and by pickle
(`pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)`, `pickle.loads(data)`), which is
what a Python system would otherwise send. Workloads:

  small ints      0..999
  floats          i * 0.5 + 0.1
  short strs      f"user-{i}" (6 to 9 characters)
  str-int tuples  (f"key-{i % 100}", i): keyed records
  dicts           {"id": i, "name": f"n{i}", "score": i * 1.5}: three fields
  user class      Point(i, i + 1), an instance of a plain Python class (pickled by both)

A measurement times `--loops` encodes (or decodes) of the same batch in a loop, repeated
`--reps` times (default 5), our codec and pickle interleaved in each repetition; the median
is reported, as records per second and as MB per second of encoded bytes (wall-clock time,
or CPU time of the process with `--clock cpu`). The ratio is ours over pickle (above 1:
ours is faster). Encoded sizes are in bytes per batch.

    python benches/python/bench_codec.py               # the markdown table, ~30 s
    python benches/python/bench_codec.py --clock cpu   # CPU time: steadier on a loaded machine
    python benches/python/bench_codec.py --json out.json
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import platform
import statistics
import sys
import time

from timely_py import codec


class Point:
    """A plain user class, pickled by reference to this module."""

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __eq__(self, other):
        return type(other) is Point and self.x == other.x and self.y == other.y


WORKLOADS = {
    "small ints": lambda i: i % 1000,
    "floats": lambda i: i * 0.5 + 0.1,
    "short strs": lambda i: f"user-{i}",
    "str-int tuples": lambda i: (f"key-{i % 100}", i),
    "dicts": lambda i: {"id": i, "name": f"n{i}", "score": i * 1.5},
    "user class": lambda i: Point(i, i + 1),
}

PROTOCOL = pickle.HIGHEST_PROTOCOL


def systems():
    """(name, encode, decode) of each system."""
    return [
        ("ours", codec.encode, codec.decode),
        ("pickle", lambda batch: pickle.dumps(batch, protocol=PROTOCOL), pickle.loads),
    ]


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def time_loop(function, argument, loops, clock):
    start = clock()
    for _ in range(loops):
        function(argument)
    return clock() - start


def measure(batch, loops, reps, clock=time.perf_counter):
    """Median seconds per call of encode and decode, and the encoded size, per system."""
    results = {}
    encoded = {}
    for name, encode, decode in systems():
        encoded[name] = encode(batch)
        assert decode(encoded[name]) == batch, f"{name} does not round-trip"
        results[name] = {"size": len(encoded[name]), "encode": [], "decode": []}
    for _ in range(reps):
        for name, encode, decode in systems():
            results[name]["encode"].append(time_loop(encode, batch, loops, clock) / loops)
            results[name]["decode"].append(time_loop(decode, encoded[name], loops, clock) / loops)
    for result in results.values():
        for direction in ("encode", "decode"):
            result[direction + "_median"] = statistics.median(result[direction])
        result["round_trip_median"] = statistics.median(
            e + d for e, d in zip(result["encode"], result["decode"])
        )
    return results


def rate(records, seconds):
    return records / seconds


def mb_rate(size, seconds):
    return size / seconds / 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=1000, help="records per batch (1000)")
    parser.add_argument("--loops", type=int, default=2000, help="calls per timed measurement (2000)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions; medians are reported (5)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated workload names")
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="wall-clock time (default) or CPU time of the process"
    )
    parser.add_argument("--json", help="also write all times to this file")
    args = parser.parse_args(argv)

    print(
        f"Python {platform.python_version()} on {platform.machine()}, pickle protocol {PROTOCOL}, "
        f"batch {args.batch}, {args.loops} calls per measurement, median of {args.reps}, {args.clock} clock\n"
    )
    header = (
        "| workload | size ours (B) | size pickle (B) | encode ours rec/s | encode pickle rec/s | encode ours/pickle "
        "| decode ours rec/s | decode pickle rec/s | decode ours/pickle | round trip ours MB/s | round trip pickle MB/s "
        "| round trip ours/pickle |"
    )
    print(header)
    print("|---" + "|---:" * (header.count("|") - 2) + "|")
    everything = {}
    for name in args.workloads.split(","):
        batch = [WORKLOADS[name](i) for i in range(args.batch)]
        gc.collect()
        gc.freeze()
        results = measure(batch, args.loops, args.reps, CLOCKS[args.clock])
        gc.unfreeze()
        everything[name] = results
        ours, theirs = results["ours"], results["pickle"]
        n = args.batch
        cells = [
            name,
            f"{ours['size']:,}",
            f"{theirs['size']:,}",
            f"{rate(n, ours['encode_median']) / 1e6:.2f}M",
            f"{rate(n, theirs['encode_median']) / 1e6:.2f}M",
            f"{theirs['encode_median'] / ours['encode_median']:.2f}x",
            f"{rate(n, ours['decode_median']) / 1e6:.2f}M",
            f"{rate(n, theirs['decode_median']) / 1e6:.2f}M",
            f"{theirs['decode_median'] / ours['decode_median']:.2f}x",
            f"{mb_rate(ours['size'], ours['round_trip_median']):.0f}",
            f"{mb_rate(theirs['size'], theirs['round_trip_median']):.0f}",
            f"{theirs['round_trip_median'] / ours['round_trip_median']:.2f}x",
        ]
        print("| " + " | ".join(cells) + " |", flush=True)
    print(
        "\nrec/s: records per second of one direction; MB/s: encoded bytes per second of an encode "
        "plus a decode; ours/pickle: ratio of throughputs (above 1: ours is faster)."
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(
                {"python": sys.version, "batch": args.batch, "loops": args.loops, "clock": args.clock, "results": everything},
                out,
                indent=1,
            )


if __name__ == "__main__":
    main()
