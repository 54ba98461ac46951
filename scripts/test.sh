#!/usr/bin/env bash
# Runs every test of the project: the Rust crates' tests (unit, integration, doc), then
# builds the Python package with `pip install .` into .venv, checks style (scripts/lint.sh:
# rustfmt, clippy, the Python crate's layout, the _core stub), and runs the pytest suites.
# The package is installed with its `analysis` extra (PySpark; the analysis needs Java 17+).
# The analysis viewer's tests run headless Chromium: installed here with apt-get when missing
# and running as root, otherwise a clear error before anything runs.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -q && apt-get install -y -q chromium
    else
        echo "scripts/test.sh: the viewer's tests need headless Chromium: run 'apt-get install -y chromium' as root" >&2
        exit 1
    fi
fi
cargo test --workspace --release
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install -q --upgrade pip >/dev/null
.venv/bin/pip install -q "pytest>=7" "pytest-timeout>=2.3" "pytest-xdist>=3.5" "hypothesis>=6" "websocket-client>=1.6"
.venv/bin/pip install -q ".[analysis]"
bash scripts/lint.sh
.venv/bin/python -m pytest -q tests
