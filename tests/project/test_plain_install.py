"""The plain install (`pip install timely_py`, without the `analysis` extra) in a virtual
environment of its own: the engine runs, every `timely-py trace` subcommand works (they need
only pyarrow), and the analysis says what to install instead of crashing: `timely-py analyze`
exits 2 naming `pip install 'timely_py[analysis]'`, and taking a name from
`timely_py.analysis` raises `MissingDependencyError`. The wheel is the one
`scripts/test.sh` builds (tests build nothing); its dependencies come from PyPI or pip's cache."""

import subprocess
import venv

import pytest
from support.paths import built, wheel
from support.tracedirs import write_crafted

pytestmark = pytest.mark.slow

EXTRA = ("pyspark", "pandas", "numpy", "rich", "matplotlib")


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """The bin directory of a new venv with only the wheel and its required dependencies."""
    home = tmp_path_factory.mktemp("plain") / "venv"
    venv.EnvBuilder(with_pip=True).create(home)
    python = home / "bin" / "python"
    done = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(built(wheel()))],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return home / "bin"


def run(plain, *args, timeout=120):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, cwd=plain)


def test_the_plain_install_has_none_of_the_extra(plain):
    probe = "import importlib.util as u; print([n for n in %r if u.find_spec(n)])" % (EXTRA,)
    done = run(plain, plain / "python", "-c", probe)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_engine_runs(plain):
    program = (
        "import timely_py as timely\n"
        "def main(worker):\n"
        "    return worker.index\n"
        "print(timely.execute(main, workers=2))\n"
    )
    done = run(plain, plain / "python", "-c", program)
    assert done.returncode == 0 and done.stdout.strip() == "[0, 1]", done.stderr


@pytest.mark.parametrize(
    "command, expected",
    [
        (["validate"], "no violations"),
        (["summary"], "events"),
        (["export", "--format", "perfetto", "-o", "{out}/run.json"], "trace events"),
    ],
)
def test_every_trace_subcommand_works(plain, tmp_path, command, expected):
    trace = write_crafted(tmp_path / "trace")
    args = [part.format(out=tmp_path) for part in command]
    done = run(plain, plain / "timely-py", "trace", args[0], trace, *args[1:])
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout and "Traceback" not in done.stderr
    if command[0] == "export":
        assert (tmp_path / "run.json").stat().st_size > 0


def test_analyze_says_what_to_install(plain, tmp_path):
    trace = write_crafted(tmp_path / "trace")
    done = run(plain, plain / "timely-py", "analyze", trace, "--out", tmp_path / "out")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "pip install 'timely_py[analysis]'" in done.stderr
    assert all(name in done.stderr for name in EXTRA)
    assert not (tmp_path / "out").exists()


def test_the_analysis_package_imports_and_its_names_raise_a_clear_error(plain):
    program = (
        "import timely_py.analysis as analysis\n"
        "try:\n"
        "    analysis.analyze\n"
        "except analysis.MissingDependencyError as error:\n"
        "    print(isinstance(error, OSError), error)\n"
    )
    done = run(plain, plain / "python", "-c", program)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("True the analysis needs pyspark"), done.stdout


def test_the_help_lists_every_command(plain):
    done = run(plain, plain / "timely-py", "--help")
    assert done.returncode == 0 and "analyze" in done.stdout and "trace" in done.stdout, done.stderr


