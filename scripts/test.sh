#!/usr/bin/env bash
# Runs every test of the project: the Rust crates' tests (unit, integration, doc), then
# builds the Python package with `pip install .` into .venv, checks style (scripts/lint.sh:
# rustfmt, clippy, the Python crate's layout, the _core stub), and runs the pytest suites.
# The package is installed with its `analysis` extra (PySpark; the analysis needs Java 17+).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --release
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install -q --upgrade pip >/dev/null
.venv/bin/pip install -q "pytest>=7" "hypothesis>=6"
.venv/bin/pip install -q ".[analysis]"
bash scripts/lint.sh
.venv/bin/python -m pytest -q tests
