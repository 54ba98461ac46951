"""Whether two analyses wrote the same tables: for every table `analyze` writes, the same
columns (names, types, order) and the same rows compared sorted (the tables without an order
list their rows as Spark's partitioning has them). Prints one line per table; exit status 1
when any differs. How `docs/benchmarks.md` checks that a faster pipeline changed no result:

    PYTHONPATH=/tmp/base/python python -c 'from timely_py.analysis import analyze; analyze("T", out="/tmp/a", views=False)'
    PYTHONPATH=python python -c 'from timely_py.analysis import analyze; analyze("T", out="/tmp/b", views=False)'
    python benches/analysis/same_tables.py /tmp/a /tmp/b
"""

import argparse
import sys

import pyarrow.parquet as pq

TABLES = [
    "communications", "activities", "critical_path", "slices", "profile", "profile_type", "profile_operator",
    "profile_worker", "profile_contributor_worker", "imbalance", "slack",
]  # fmt: skip


def compare(before, after):
    """``(same, note)`` for one table read from two directories."""
    a, b = pq.read_table(before), pq.read_table(after)
    if a.schema.remove_metadata() != b.schema.remove_metadata():
        return False, f"columns differ: {a.schema.names} {a.schema.types} / {b.schema.names} {b.schema.types}"
    rows_a, rows_b = sorted(map(repr, a.to_pylist())), sorted(map(repr, b.to_pylist()))
    if rows_a != rows_b:
        return False, f"{len(rows_a)} / {len(rows_b)} rows, {len(set(rows_a) ^ set(rows_b))} differ"
    return True, f"{len(rows_a)} rows"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    args = parser.parse_args()
    different = 0
    for name in TABLES:
        same, note = compare(f"{args.before}/{name}", f"{args.after}/{name}")
        different += not same
        print(f"{'same' if same else 'DIFFERENT':9} {name}: {note}")
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main()
