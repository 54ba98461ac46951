"""The trace tools' documentation runs: every doctest of timely_py.trace and the `timely-py`
script, and every example of docs/tracing.md (Python blocks executed, `timely-py` command
lines run), on the crafted trace of tests/support/tracedirs.py; and docs/trace-format.md's
tables, which must be the ones the Rust crate declares."""

import doctest
import importlib
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
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


# --- docs/trace-format.md's tables, from the format the Rust crate declares ------------------

TABLES_SPEC = importlib.util.spec_from_file_location("trace_format_tables", ROOT / "scripts" / "trace_format_tables.py")
trace_format_tables = importlib.util.module_from_spec(TABLES_SPEC)
TABLES_SPEC.loader.exec_module(trace_format_tables)


def test_the_format_documents_tables_are_the_ones_the_crate_declares():
    assert trace_format_tables.main(["--check"]) == 0


def test_a_table_that_drifted_from_the_crate_is_found_and_rewritten():
    declared = timely_py_format()
    text = trace_format_tables.DOC.read_text()
    drifted = text.replace("| `park` | the worker goes to sleep", "| `park` | the worker naps")
    assert drifted != text
    assert trace_format_tables.render(drifted, declared) == text


def test_the_readers_take_the_crates_columns_and_kinds():
    from timely_py.trace import reader

    declared = timely_py_format()
    assert reader.FILE_SCHEMA.names == [name for name, _ in declared["columns"]]
    assert reader.KINDS[:3] == ("operator_created", "channel_created", "schedule_start")
    assert len(reader.KINDS) == len(declared["kinds"]) == 17
    assert dict(declared["classes"])["park"] == ["park", "unpark"]
    assert reader.FILE_SCHEMA.field("kind").type == pa.dictionary(pa.int8(), pa.string())


def timely_py_format():
    import timely_py

    return timely_py._core.trace_format()
