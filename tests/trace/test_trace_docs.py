"""The trace tools' documentation runs: every doctest of timely_py.trace and the `timely-py`
script, and every example of docs/tracing.md (Python blocks executed, `timely-py` command
lines run), on the crafted trace of tests/support/tracedirs.py."""

import doctest
import importlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import ROOT
from support.tracedirs import write_crafted

MODULES = [
    "timely_py.cli",
    "timely_py.trace.reader",
    "timely_py.trace.clocks",
    "timely_py.trace.validate",
    "timely_py.trace.summary",
    "timely_py.trace.perfetto",
]
GUIDE = ROOT / "docs" / "tracing.md"
SCRIPT = Path(sys.executable).parent / "timely-py"


def blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(tmp_path, name):
    module = importlib.import_module(name)
    example = str(write_crafted(tmp_path / "example"))
    result = doctest.testmod(module, extraglobs={"example_trace": example}, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


def test_the_guide_has_examples():
    assert len(blocks("python")) >= 3 and len(blocks("sh")) >= 1


def test_the_guides_python_examples_run(tmp_path, monkeypatch, capsys):
    write_crafted(tmp_path / "my-trace")
    monkeypatch.chdir(tmp_path)
    for block in blocks("python"):
        exec(compile(block, str(GUIDE), "exec"), {})
    assert (tmp_path / "run.json").exists()
    assert "{0: 'complete', 1: 'complete'}" in capsys.readouterr().out


def test_the_guides_commands_run(tmp_path):
    write_crafted(tmp_path / "my-trace")
    commands = [line.split("#")[0] for block in blocks("sh") for line in block.splitlines()]
    commands = [shlex.split(c) for c in commands if c.strip().startswith("timely-py")]
    assert len(commands) == 3
    for command in commands:
        result = subprocess.run([str(SCRIPT), *command[1:]], cwd=tmp_path, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "run.json").exists()
