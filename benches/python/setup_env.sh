#!/usr/bin/env bash
# Creates the Python benchmark's own environment, benches/python/.venv, with
#   - timely_py built from this repository (pip builds the wheel with maturin, release
#     profile; this takes a couple of minutes), and
#   - Bytewax 0.21.1 from PyPI, the system the benchmark compares against.
# If Bytewax 0.21.1 cannot be installed (no wheel for this Python or platform, no access to
# PyPI), the script says so and carries on: bench_python.py then skips Bytewax.
#
# Usage:
#   bash benches/python/setup_env.sh             builds timely_py from the working tree
#   REF=HEAD bash benches/python/setup_env.sh    builds it from a commit (git archive), so that
#                                                the measured build is known exactly
#   PYTHON=python3.11 bash ...                   picks the interpreter of the venv
# The Rust build uses its own target directory, benches/python/.venv/target, so that it
# never races with other builds of the workspace (rebuilds there are incremental).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="$HERE/.venv"
PYTHON="${PYTHON:-python3}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$VENV/target}"

if [ ! -x "$VENV/bin/python" ]; then
    echo "creating $VENV with $("$PYTHON" --version 2>&1)"
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip

SOURCE="$REPO"
if [ -n "${REF:-}" ]; then
    SOURCE="$VENV/src"
    rm -rf "$SOURCE" && mkdir -p "$SOURCE"
    git -C "$REPO" archive "$REF" | tar -x -C "$SOURCE"
    echo "building timely_py from commit $(git -C "$REPO" rev-parse --short "$REF")"
fi
echo "installing timely_py from $SOURCE (maturin release build; a couple of minutes)"
"$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$SOURCE"

echo "installing bytewax==0.21.1 from PyPI"
if "$VENV/bin/python" -m pip install -q "bytewax==0.21.1"; then
    echo "bytewax $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("bytewax"))') installed"
else
    echo "WARNING: bytewax==0.21.1 could not be installed for $("$VENV/bin/python" --version 2>&1)" \
         "on $(uname -m) (no matching wheel, or PyPI unreachable)." >&2
    echo "WARNING: bench_python.py will skip Bytewax and report timely_py against plain Python only." >&2
fi

"$VENV/bin/python" -c 'import timely_py; print("timely_py imports from", timely_py.__file__)'
echo "done: run  $VENV/bin/python $HERE/bench_python.py"
