"""Where things are: the repository, its example programs, the Rust examples that
`scripts/test.sh` builds before the suites run, and the scripts the tests start."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The Python example programs (`examples/`).
EXAMPLES = ROOT / "examples"
#: The Rust examples and benchmark binaries built in release mode.
RELEASE = ROOT / "target" / "release"
RUST_EXAMPLES = RELEASE / "examples"
#: Small cluster programs (`tests/cluster/scripts/`) and launcher children (`tests/launch/scripts/`).
CLUSTER_SCRIPTS = ROOT / "tests" / "cluster" / "scripts"
LAUNCH_SCRIPTS = ROOT / "tests" / "launch" / "scripts"
#: The `timely-py` console script of the running interpreter's environment.
TIMELY_PY = Path(sys.executable).parent / "timely-py"


def built(path):
    """`path`, a binary that `scripts/test.sh` builds before the tests run; fails the test
    with the command that builds it when it is missing (tests never build anything)."""
    path = Path(path)
    if not path.exists():
        pytest.fail(f"{path} is not built: run `bash scripts/test.sh` or `bash scripts/build.sh --rust`")
    return path
