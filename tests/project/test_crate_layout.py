"""The crates' source layout, enforced by `scripts/check_crate_layout.py`: no circle of
dependencies between the files of a crate and no file over 600 lines. The checker itself is
tested on small synthetic crates, so that a check that always passed would fail here."""

import importlib.util
import textwrap

import pytest
from support.paths import ROOT

SCRIPT = ROOT / "scripts" / "check_crate_layout.py"
SPEC = importlib.util.spec_from_file_location("check_crate_layout", SCRIPT)
layout = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(layout)


def crate(tmp_path, files):
    """Writes `files` (relative path -> Rust source) under `tmp_path`; returns its path."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


#: The crates whose files depend on each other one way only (`scripts/lint.sh` checks the same
#: list): every crate.
ONE_WAY_CRATES = ["analysis", "bytes", "communication", "engine", "megaphone", "python", "trace"]


@pytest.mark.parametrize("crate_dir", ONE_WAY_CRATES)
def test_crates_have_no_circles_and_no_long_files(crate_dir):
    assert layout.problems(ROOT / "crates" / crate_dir / "src") == []


@pytest.mark.parametrize("crate_dir", sorted(p.name for p in (ROOT / "crates").iterdir() if (p / "src").is_dir()))
def test_no_source_file_of_any_crate_is_over_600_lines(crate_dir):
    assert layout.long_files(ROOT / "crates" / crate_dir / "src", layout.DEFAULT_MAX_LINES) == []


def test_the_python_crate_is_split_into_folders_of_one_concern():
    src = ROOT / "crates" / "python" / "src"
    for folder in ("codec", "generic", "operators", "time"):
        assert (src / folder / "mod.rs").exists(), folder
    assert not (src / "generic.rs").exists() and not (src / "codec.rs").exists()


def test_a_one_way_chain_passes(tmp_path):
    src = crate(
        tmp_path,
        {
            "lib.rs": "mod a;\nmod b;\nmod c;\n",
            "a.rs": "use crate::b::B;\n",
            "b.rs": "use crate::c::{C, D};\n",
            "c.rs": "pub struct C;\npub struct D;\n",
        },
    )
    assert layout.problems(src) == []


@pytest.mark.parametrize(
    "files",
    [
        # Two files naming each other through `use crate::`.
        {"lib.rs": "mod a;\nmod b;\n", "a.rs": "use crate::b::B;\n", "b.rs": "use crate::a::A;\n"},
        # A circle of three, one edge through a path in code rather than a `use`.
        {
            "lib.rs": "mod a;\nmod b;\nmod c;\n",
            "a.rs": "use crate::b::B;\n",
            "b.rs": "fn f() { crate::c::g() }\n",
            "c.rs": "use crate::{a::A, b as _};\n",
        },
        # A folder whose mod.rs uses a child that uses the parent through `super::`.
        {
            "lib.rs": "mod m;\n",
            "m/mod.rs": "mod child;\nuse child::X;\npub struct Y;\n",
            "m/child.rs": "use super::Y;\npub struct X;\n",
        },
    ],
    ids=["use", "path-in-code", "child-and-parent"],
)
def test_a_circle_between_files_is_reported(tmp_path, files):
    problems = layout.problems(crate(tmp_path, files))
    assert len(problems) == 1 and "circle" in problems[0], problems


@pytest.mark.parametrize(
    "files",
    [
        # A re-export in lib.rs: `a` names `crate::B`, which lives in b.rs, not in lib.rs.
        {"lib.rs": "mod a;\nmod b;\npub use a::A;\npub use b::B;\n", "a.rs": "use crate::B;\npub struct A;\n",
         "b.rs": "pub struct B;\n"},
        # A test module inside a file: its `super::` is that file.
        {"lib.rs": "mod a;\npub use a::A;\n", "a.rs": "pub struct A;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"},
        # A use tree's head names no item of the module it passes through.
        {"lib.rs": "mod m;\nmod a;\npub use a::A;\n", "m/mod.rs": "mod x;\npub use x::X;\nuse crate::A;\n",
         "m/x.rs": "pub struct X;\n", "a.rs": "use crate::m::{X};\npub struct A;\n"},
    ],
    ids=["re-export", "test-module", "use-tree-head"],
)
def test_paths_through_imports_are_followed_to_the_file_that_defines_the_item(tmp_path, files):
    assert layout.problems(crate(tmp_path, files)) == []


def test_a_circle_through_an_imported_module_name_is_reported_with_why(tmp_path):
    files = {
        "lib.rs": "mod a;\nmod m;\n",
        "a.rs": "use crate::m::child::Y;\npub fn x() {}\n",
        "m/mod.rs": "pub mod child;\n",
        "m/child.rs": "use crate::a;\npub struct Y;\nfn f() { a::x() }\n",
    }
    problems = layout.problems(crate(tmp_path, files), why=True)
    assert problems == [
        "files that depend on each other in a circle: a.rs, m/child.rs",
        "  a.rs -> m/child.rs: crate::m::child::Y",
        "  m/child.rs -> a.rs: crate::a::x",
    ]


def test_a_comment_naming_a_module_is_not_a_dependency(tmp_path):
    files = {"lib.rs": "mod a;\nmod b;\n", "a.rs": "use crate::b::B;\n", "b.rs": "// see crate::a::A\n"}
    assert layout.problems(crate(tmp_path, files)) == []


def test_a_long_file_is_reported(tmp_path):
    src = crate(tmp_path, {"lib.rs": "mod a;\n", "a.rs": "\n" * 601})
    assert layout.problems(src) == ["a.rs has 601 lines (at most 600)"]
    assert layout.problems(src, max_lines=601) == []


def test_the_script_exits_nonzero_on_a_problem(tmp_path):
    files = {"lib.rs": "mod a;\nmod b;\n", "a.rs": "use crate::b::B;\n", "b.rs": "use crate::a::A;\n"}
    src = crate(tmp_path, files)
    assert layout.main([str(src)]) == 1
    assert layout.main([str(ROOT / "crates" / "python" / "src")]) == 0


@pytest.mark.parametrize("table", ["README.md", "docs/design.md"])
def test_the_layout_tables_name_every_crate(table):
    text = (ROOT / table).read_text()
    crates = sorted(p.name for p in (ROOT / "crates").iterdir() if (p / "Cargo.toml").exists())
    assert crates and [c for c in crates if f"| `crates/{c}` |" not in text] == []
