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
#                                    and benchmark binary that scripts/test.sh runs (with
#                                    benches/timely-compare, a workspace of its own)
#   bash scripts/build.sh --analysis-later
#                                    as the first, but returns as soon as timely_py is
#                                    installed, with the analysis extra still installing in
#                                    the background (the demo's first sections need only
#                                    timely_py and pyarrow); then
#   bash scripts/build.sh --wait-analysis
#                                    waits for that install, saying every 15 s what it is
#                                    doing, and fails if it failed
#
# One release build serves all of these: the extension module, the Rust tests, the examples
# and the wheel share the compiled crates (see docs/testing.md). The Python dependencies are
# downloaded in the background while Rust compiles; their time is reported on its own line.
# The analysis extra (about 580 MB, PySpark's wheel built from its source archive) installs
# at low CPU priority, so that it takes no core from the compiler.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=package
case "${1:-}" in
    "") ;;
    --tests) mode=tests ;;
    --analysis-later) mode=later ;;
    --wait-analysis) mode=wait ;;
    *) echo "usage: bash scripts/build.sh [--tests | --analysis-later | --wait-analysis]" >&2; exit 2 ;;
esac

started=$SECONDS
step() { printf '[build] %s\n' "$*" >&2; }
took() { printf '[build] %s: %d s\n' "$1" $((SECONDS - $2)) >&2; }

# The analysis extra's install runs in the background, possibly after this script has
# returned (--analysis-later): its log, its process id and, once it has ended, its exit
# status are files in target/.
extra_log=target/build-analysis.log
extra_pid=target/build-analysis.pid
extra_status=target/build-analysis.status

# Waits for the analysis extra's install, printing every 15 s how long it has run and the
# last thing pip said (what it is collecting, downloading, building or installing).
wait_analysis() {
    if [ ! -e "$extra_pid" ] && [ ! -e "$extra_status" ]; then
        step "the analysis extra was not being installed: run bash scripts/build.sh"
        return 1
    fi
    local since=$SECONDS next=$((SECONDS + 15)) begun
    begun=$(stat -c %Y "$extra_pid" 2>/dev/null || date +%s)
    while [ ! -e "$extra_status" ]; do
        if ! kill -0 "$(cat "$extra_pid" 2>/dev/null)" 2>/dev/null && [ ! -e "$extra_status" ]; then
            sleep 1   # it may have written its status just now
            [ -e "$extra_status" ] && break
            cat "$extra_log" >&2
            step "installing the analysis extra stopped without a status (log above)"
            return 1
        fi
        if [ $SECONDS -ge $next ]; then
            next=$((next + 15))
            local last
            last=$(grep -E '^ *(Collecting|Downloading|Building|Created|Installing|Successfully)' "$extra_log" | tail -n 1 | sed 's/^ *//' | cut -c1-100)
            step "still installing the analysis extra ($(($(date +%s) - begun)) s so far): ${last:-starting}"
        fi
        sleep 1
    done
    local status
    status=$(cat "$extra_status")
    if [ "$status" != 0 ]; then
        cat "$extra_log" >&2
        step "installing the analysis extra failed (above)"
        return 1
    fi
    step "$(tail -n 1 "$extra_log") (in the background); waited for it here: $((SECONDS - since)) s"
}

if [ "$mode" = wait ]; then
    wait_analysis
    exit
fi

# The crates download while the virtual environment and maturin are set up.
step "downloading the crates in the background (cargo fetch)"
(
    since=$SECONDS
    cargo fetch --quiet && took "downloading the crates (in the background)" "$since"
) &
fetch_job=$!

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

# The package's third-party dependencies as pyproject.toml lists them, in two installs in the
# background while Rust compiles: its own (pyarrow), which the editable install below needs,
# and the analysis extra's (mostly downloads: PySpark alone is about 450 MB), which only the
# analysis needs and which has no package in common with the first.
mapfile -t requirements < <(.venv/bin/python scripts/requirements.py)
mapfile -t extra < <(.venv/bin/python scripts/requirements.py --only analysis)
log=target/build-requirements.log
mkdir -p target
if [ -e "$extra_pid" ] && [ ! -e "$extra_status" ] && kill -0 "$(cat "$extra_pid")" 2>/dev/null; then
    step "an earlier build's install of the analysis extra is still running: waiting for it"
    wait_analysis || true
fi
step "installing the Python dependencies in the background (logs: $log, $extra_log)"
(
    since=$SECONDS
    .venv/bin/pip install -q --disable-pip-version-check "${requirements[@]}" >"$log" 2>&1 || exit
    took "timely_py's own Python dependencies (downloads, in the background)" "$since"
) &
pip_job=$!
rm -f "$extra_status"
# Not -q: its last lines say what it is doing (wait_analysis shows them). Low CPU priority:
# building PySpark's wheel from its source archive would otherwise take a core from rustc.
(
    status=0
    since=$SECONDS
    nice -n 19 .venv/bin/pip install --progress-bar off --disable-pip-version-check "${extra[@]}" >"$extra_log" 2>&1 || status=$?
    echo "the analysis extra's install took $((SECONDS - since)) s" >>"$extra_log"
    echo "$status" >"$extra_status"
) &
echo $! >"$extra_pid"

# A failed download shows again, with its cause, in the compile below.
wait "$fetch_job" || true

if [ "$mode" = tests ]; then
    step "compiling every crate, Rust test binary, example and benchmark binary (release)"
    rust=$SECONDS
    cargo test --workspace --release --no-run
    took "Rust tests, examples and benchmark binaries" "$rust"
    # Timely's own programs on our engine and on timely 0.29 (tests/benches/test_timely_compare.py):
    # a workspace of its own, so that nothing in ours depends on timely; built into the same
    # target directory, where it reuses the engine and the dependencies compiled above.
    step "compiling benches/timely-compare (timely 0.29 from crates.io, and ours)"
    rust=$SECONDS
    CARGO_TARGET_DIR="$PWD/target" cargo build --release --manifest-path benches/timely-compare/Cargo.toml
    took "benches/timely-compare" "$rust"
    # A program on timely-engine with its default features (no trace files: no Arrow, no
    # Parquet), a workspace of its own so that the extension's features do not reach it;
    # tests/trace/test_lean_engine.py runs it.
    step "compiling examples/lean_engine (timely-engine without trace files)"
    rust=$SECONDS
    CARGO_TARGET_DIR="$PWD/target" cargo build --release --manifest-path examples/lean_engine/Cargo.toml
    took "examples/lean_engine" "$rust"
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

step "installing timely_py into .venv (editable)"
since_install=$SECONDS
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release -q
took "installing timely_py" "$since_install"

if [ "$mode" = later ]; then
    step "timely_py is ready; the analysis extra is still installing in the background (log: $extra_log)"
else
    wait_analysis
fi
took "build, in all" "$started"
