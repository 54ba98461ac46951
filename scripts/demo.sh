#!/usr/bin/env bash
# Sets everything up on a fresh machine and runs the main demo on local defaults:
# builds the engine and the Python package (into .venv), runs BFS on a generated random
# graph with two worker threads from Python, then on a cluster of two local processes of
# two workers each (started by the launcher) with a trace of the run, checks the trace and
# prints its summary, exports it for Perfetto, analyses its critical path with a local Spark
# (tables, plots, a trace viewer), then a join: a cluster of two processes started by the
# launcher grows to three while it runs (worker 0 of examples/word_count_scale_out.py asks the
# launcher for a process, which joins, receives the word count's routing state and feeds
# words; worker 0 then moves part of the per-word state to it and checks that the counts are
# exact), then the Rust hello latency measurement.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/dev_install.sh
.venv/bin/python examples/bfs.py -w 2
trace="${TMPDIR:-/tmp}/timely_py-demo-trace"
rm -rf "$trace"
.venv/bin/python -m timely_py.launch -n 2 -w 2 --trace "$trace" examples/bfs.py
.venv/bin/timely-py trace validate "$trace"
.venv/bin/timely-py trace summary "$trace"
.venv/bin/timely-py trace export "$trace" --format perfetto -o "$trace.json"
echo "trace of the cluster run: $trace (open $trace.json in ui.perfetto.dev)"
.venv/bin/timely-py analyze "$trace" --out "$trace-analysis" --slice 100ms
echo "critical-path analysis: $trace-analysis (open $trace-analysis/viewer.html in a browser)"
echo "a running cluster grows: worker 0 asks the launcher for a third process in epoch 4, then moves keyed state to it"
.venv/bin/python -m timely_py.launch -n 2 -w 2 examples/word_count_scale_out.py 24 0.05 4 batched
cargo run --release -q --example hello -- 100000 -w 1 --quiet
