#!/usr/bin/env bash
# Creates .venv (if needed) and installs timely_py into it in editable mode, built in
# release mode, with the `analysis` extra (PySpark; the analysis needs Java 17+). Run it
# again after changing Rust code.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install -q --upgrade pip >/dev/null
.venv/bin/pip install -q "maturin>=1.5,<2" "pytest>=7" "hypothesis>=6" "websocket-client>=1.6"
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release -q --extras analysis
