#!/usr/bin/env bash
# Sets everything up on a fresh machine and runs the main demo on local defaults:
# builds the engine and the Python package (into .venv), runs BFS on a generated random
# graph with two worker threads from Python, then on a cluster of two local processes of
# two workers each (started by the launcher), then the Rust hello latency measurement.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/dev_install.sh
.venv/bin/python examples/bfs.py -w 2
.venv/bin/python -m timely_py.launch -n 2 -w 2 examples/bfs.py
cargo run --release -q --example hello -- 100000 -w 1 --quiet
