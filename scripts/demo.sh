#!/usr/bin/env bash
# Builds the engine and runs the main demo on local defaults: the hello dataflow on two
# worker threads, then a 100,000-round latency measurement on one and two workers.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --examples
cargo run --release -q --example hello -- 10 -w 2
cargo run --release -q --example hello -- 100000 -w 1 --quiet
cargo run --release -q --example hello -- 100000 -w 2 --quiet
