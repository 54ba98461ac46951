"""A finished trace written again piece by piece, as a follower sees a run being written:
`GrowingTrace(source, target).grow(cut_ns)` adds, for every worker, a new part file with its
events up to `cut_ns` after the run's first event that are not written yet (the network
threads' rows `lag_ns` later), and rewrites each process's metadata as `running` with the
clock measurements made by then; `finish()` writes the rest and the original metadata.
"""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from support.tracedirs import FILE_SCHEMA


class GrowingTrace:
    def __init__(self, source, target, lag_ns=3_000_000):
        self.source, self.target, self.lag_ns = Path(source), Path(target), lag_ns
        self.metas = {p.parent.name: json.loads(p.read_text()) for p in self.source.glob("process=*/_process.json")}
        self.rows = {}  # (process dir, worker dir) -> the worker's rows, in file order
        for folder in sorted(self.source.glob("process=*/worker=*")):
            parts = sorted(folder.glob("part-*.parquet"))
            self.rows[(folder.parent.name, folder.name)] = pa.concat_tables([pq.read_table(p) for p in parts])
        self.first = min(pc.min(t["time_ns"]).as_py() for t in self.rows.values())
        self.written = {key: pa.array([False] * t.num_rows) for key, t in self.rows.items()}
        self.parts = {key: 0 for key in self.rows}
        self.events = sum(t.num_rows for t in self.rows.values())

    def _write_metadata(self, cut):
        for name, meta in self.metas.items():
            folder = self.target / name
            folder.mkdir(parents=True, exist_ok=True)
            if cut is not None:
                meta = dict(meta, status="running")
                meta["clock_history"] = [m for m in meta["clock_history"] if m["measured_at_ns"] <= cut]
            temporary = folder / "._process.json.tmp"
            temporary.write_text(json.dumps(meta))
            temporary.replace(folder / "_process.json")

    def _write_rows(self, chosen_of):
        written = 0
        for key, table in self.rows.items():
            chosen = pc.and_(chosen_of(table), pc.invert(self.written[key]))
            part = table.filter(chosen)
            self.written[key] = pc.or_(self.written[key], chosen)
            if part.num_rows == 0:
                continue
            folder = self.target / key[0] / key[1]
            folder.mkdir(parents=True, exist_ok=True)
            name = f"part-{self.parts[key]:06d}.parquet"
            pq.write_table(part.cast(FILE_SCHEMA), folder / f".{name}.tmp")
            (folder / f".{name}.tmp").replace(folder / name)
            self.parts[key] += 1
            written += part.num_rows
        return written

    def grow(self, cut_ns):
        """Writes every event up to `cut_ns` after the first (network rows `lag_ns` earlier)."""
        cut = self.first + cut_ns
        self._write_metadata(cut)

        def chosen(table):
            network = pc.starts_with(table["kind"].cast(pa.string()), "network_")
            return pc.less_equal(table["time_ns"], pc.if_else(network, cut - self.lag_ns, cut))

        return self._write_rows(chosen)

    def finish(self):
        """Writes every event left and the finished run's metadata."""
        written = self._write_rows(lambda table: pa.array([True] * table.num_rows))
        self._write_metadata(None)
        return written


def activities_spanning(out, times):
    """Activities of the analysis in `out` that begin before and end after one of `times`."""
    activities = ds.dataset(Path(out) / "activities").to_table().to_pylist()
    return [a for a in activities for t in times if a["start"] < t < a["end"]]
