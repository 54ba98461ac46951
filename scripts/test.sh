#!/usr/bin/env bash
# Runs the project's tests, in two tiers (docs/testing.md says what each holds and costs):
#
#   bash scripts/test.sh           everything, as CI runs it: the build (scripts/build.sh
#                                  --tests), every Rust test (unit, integration, doc), the
#                                  style checks (scripts/lint.sh: rustfmt, clippy, the crates'
#                                  layout, the _core stub) and every pytest suite, two tests at a time (pytest-xdist)
#   bash scripts/test.sh --quick   the quick tier, after every change: the same build and Rust
#                                  tests, rustfmt, and the pytest suites without the tests
#                                  marked spark, browser, bench or slow
#
# Extra arguments after the tier go to pytest (e.g. `--quick -k codec`, or `-x`). The viewer's
# tests run headless Chromium: installed here with apt-get when missing and running as root,
# otherwise a clear error before anything runs. Each step's time is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
if [ "${1:-}" = --quick ]; then
    quick=true
    shift
fi

timings=()
run_step() {
    local name=$1 since=$SECONDS
    shift
    printf '\n[test] %s\n' "$name" >&2
    local status=0
    "$@" || status=$?
    timings+=("$(printf '%6d s  %s%s' $((SECONDS - since)) "$name" "$([ $status = 0 ] || echo ' (failed)')")")
    return $status
}
report() {
    local status=$?
    printf '\n[test] time per step:\n' >&2
    printf '%s\n' "${timings[@]}" >&2
    printf '%6d s  in all (%s)\n' "$SECONDS" "$([ "$status" = 0 ] && echo passed || echo FAILED)" >&2
}
trap report EXIT

if ! $quick && ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        run_step "installing Chromium (the viewer's tests)" \
            bash -c 'apt-get update -q && apt-get install -y -q chromium'
    else
        echo "scripts/test.sh: the viewer's tests need headless Chromium: run 'apt-get install -y chromium' as root" >&2
        exit 1
    fi
fi

rust_tests() {
    # nextest runs every test binary's tests side by side (cargo test runs the binaries one
    # after another) and each test in its own process; it skips doctests, which cargo runs.
    if cargo nextest --version >/dev/null 2>&1; then
        # `&&`: the function's status is its last command's, and `run_step` runs it where
        # `set -e` does not apply, so a failed nextest run must fail it explicitly.
        cargo nextest run --workspace --release --no-fail-fast --status-level fail --final-status-level slow &&
            cargo test --workspace --release --doc -q &&
            lean_engine_tests
    else
        cargo test --workspace --release -q && lean_engine_tests
    fi
}

# The engine without trace files (examples/lean_engine, a workspace of its own): a trace asked
# for is refused.
lean_engine_tests() {
    CARGO_TARGET_DIR="$PWD/target" cargo test --release -q --manifest-path examples/lean_engine/Cargo.toml
}

pytest_args=(-n 2)
if $quick; then
    pytest_args+=(-m "not (spark or browser or bench or slow)")
fi

run_step "build" bash scripts/build.sh --tests
run_step "Rust tests" rust_tests
if $quick; then
    run_step "rustfmt" cargo fmt --all -- --check
else
    run_step "style checks (scripts/lint.sh)" bash scripts/lint.sh
fi
run_step "pytest" .venv/bin/python -m pytest -q "${pytest_args[@]}" "$@" tests
