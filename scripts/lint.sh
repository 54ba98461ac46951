#!/usr/bin/env bash
# Style that tools enforce: rustfmt, clippy with warnings as errors, the layout of every crate
# (no circles between its files, no file over 600 lines), and the type
# stub of timely_py._core against the built module (mypy.stubtest). Needs .venv with timely_py and
# mypy installed (`bash scripts/build.sh --tests` makes it).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --release -q -- -D warnings
# benches/timely-compare is a workspace of its own (it depends on timely 0.29): checked alike.
cargo fmt --manifest-path benches/timely-compare/Cargo.toml -- --check
CARGO_TARGET_DIR="$PWD/target" cargo clippy --manifest-path benches/timely-compare/Cargo.toml --all-targets --release -q -- -D warnings
# So is examples/lean_engine (timely-engine with its default features).
cargo fmt --manifest-path examples/lean_engine/Cargo.toml -- --check
CARGO_TARGET_DIR="$PWD/target" cargo clippy --manifest-path examples/lean_engine/Cargo.toml --all-targets --release -q -- -D warnings
.venv/bin/python scripts/check_crate_layout.py crates/{python,analysis,megaphone,bytes,trace,communication,engine}/src benches/timely-compare/src examples/lean_engine/src
# stubtest imports the installed package, so run it away from the source tree.
(cd /tmp && "$OLDPWD/.venv/bin/python" -m mypy.stubtest timely_py._core \
    --allowlist "$OLDPWD/python/stubtest-allowlist.txt")
echo "lint: ok"
