#!/usr/bin/env bash
# Runs every test of the project: the Rust crates' tests (unit, integration, doc, examples).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --release
