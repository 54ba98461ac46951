"""The analysis's documentation runs: the doctests of its modules that need no Spark, and
docs/critical-path.md names every table `analyze` writes, every column of the kernels'
schemas and every activity type (each with a colour of its own in the palette)."""

import doctest
import importlib
import re

import pytest
from support.paths import ROOT
from timely_py.analysis import schemas

MODULES = [
    "timely_py.analysis.session",
    "timely_py.analysis.clocks",
    "timely_py.analysis.activities",
    "timely_py.analysis.precedence",
    "timely_py.analysis.slicing",
    "timely_py.analysis.worker_stage",
]
GUIDE = (ROOT / "docs" / "critical-path.md").read_text()


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    failures, tried = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_the_contract_names_every_table_and_column():
    tables = re.findall(r"^\| `(\w+)` \|", GUIDE, flags=re.M)
    for name in ("slices", "profile_type", "profile_operator", "profile_worker", "profile", "profile_contributor_worker",
                 "imbalance", "slack"):
        assert name in tables
    for name in ("communications", "activities", "critical_path"):
        assert f"Table `{name}`" in GUIDE or f"table `{name}`" in GUIDE
    for schema in (schemas.ACTIVITIES, schemas.CRITICAL_PATH):
        for column in schema.names:
            assert f"`{column}`" in GUIDE, column


def test_every_activity_type_is_documented_and_has_a_colour():
    from timely_py.analysis.palette import TYPE_COLOURS
    from timely_py.analysis.precedence import PRIORITY

    listed = re.search(r"Table `activities`: .*?`type` \((.*?)\)", GUIDE, flags=re.S).group(1)
    for kind in PRIORITY:
        assert f"`{kind}`" in listed, kind
        assert kind in TYPE_COLOURS, kind
    background = re.findall(r"^\| `(\w+)` \| ", GUIDE[GUIDE.index("**background**") :], flags=re.M)
    assert background[:4] == ["scope", "program", "not_started", "finished"]
    assert len(set(TYPE_COLOURS.values())) == len(TYPE_COLOURS), "one colour per type"
