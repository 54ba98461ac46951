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
        pytest.fail(f"{path} is not built: run `bash scripts/build.sh --tests` (scripts/test.sh does)")
    return path


def wheel():
    """The wheel of timely_py that `scripts/build.sh` builds for this interpreter."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    found = sorted((RELEASE.parent / "wheels").glob(f"timely_py-*-{tag}-{tag}-*.whl"))
    return found[-1] if found else RELEASE.parent / "wheels" / f"timely_py-{tag}.whl"
