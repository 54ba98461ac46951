#!/usr/bin/env bash
# The project's one build, shared by scripts/demo.sh and scripts/test.sh; run it again after
# changing Rust code. Every step says what it does and how long it took, and cargo shows
# its progress, so nothing is silent for minutes.
#
#   bash scripts/build.sh            .venv with timely_py installed from a release build
#                                    (editable: python/ is the package) and its analysis
#                                    extra (PySpark, pandas, numpy, rich, matplotlib); the
#                                    same build packed as a wheel into target/wheels
#   bash scripts/build.sh --tests    also the test tools and every Rust test binary, example
#                                    and benchmark binary that scripts/test.sh runs
#
# One release build serves all of these: the extension module, the Rust tests, the examples
# and the wheel share the compiled crates (see docs/testing.md). The analysis extra is
# downloaded in the background while Rust compiles; its time is reported on its own line.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=package
case "${1:-}" in
    "") ;;
    --tests) mode=tests ;;
    *) echo "usage: bash scripts/build.sh [--tests]" >&2; exit 2 ;;
esac

started=$SECONDS
step() { printf '[build] %s\n' "$*" >&2; }
took() { printf '[build] %s: %d s\n' "$1" $((SECONDS - $2)) >&2; }

if [ ! -x .venv/bin/python ]; then
    step "creating the virtual environment .venv"
    python3 -m venv .venv
fi
since=$SECONDS
tools=("maturin>=1.5,<2")
if [ "$mode" = tests ]; then
    tools+=("pytest>=7" "pytest-timeout>=2.3" "pytest-xdist>=3.5" "hypothesis>=6" "websocket-client>=1.6" "mypy>=1.10")
fi
.venv/bin/pip install -q --disable-pip-version-check "${tools[@]}"
took "build tools" "$since"

# The package's third-party dependencies, its own and the analysis extra's, as pyproject.toml
# lists them: installed in the background (mostly downloads: PySpark alone is about 450 MB)
# while Rust compiles.
mapfile -t requirements < <(.venv/bin/python scripts/requirements.py analysis)
log=target/build-requirements.log
mkdir -p target
since=$SECONDS
step "installing the Python dependencies in the background (log: $log)"
.venv/bin/pip install -q --disable-pip-version-check "${requirements[@]}" >"$log" 2>&1 &
pip_job=$!

if [ "$mode" = tests ]; then
    step "compiling every crate, Rust test binary, example and benchmark binary (release)"
    rust=$SECONDS
    cargo test --workspace --release --no-run
    took "Rust tests, examples and benchmark binaries" "$rust"
fi

step "compiling the extension module timely_py._core (release; a first build takes minutes)"
rust=$SECONDS
# The interpreter given, as maturin develop uses it: the same PYO3_PYTHON, so the two share
# their compiled pyo3 instead of each compiling it again.
.venv/bin/maturin build --release --interpreter "$PWD/.venv/bin/python" --out target/wheels
took "the extension module and the wheel" "$rust"

if ! wait "$pip_job"; then
    cat "$log" >&2
    step "installing the Python dependencies failed (above)"
    exit 1
fi
took "the Python dependencies (downloads, in the background)" "$since"

step "installing timely_py into .venv (editable)"
since=$SECONDS
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release -q
took "installing timely_py" "$since"
took "build, in all" "$started"
