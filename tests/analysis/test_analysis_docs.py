"""The analysis's documentation runs: the doctests of its modules that need no Spark, and
docs/critical-path.md names every table `analyze` writes and every column of the kernels'
schemas."""

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
]
GUIDE = (ROOT / "docs" / "critical-path.md").read_text()


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    failures, tried = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_the_contract_names_every_table_and_column():
    tables = re.findall(r"^\| `(\w+)` \|", GUIDE, flags=re.M)
    for name in ("slices", "profile_type", "profile_operator", "profile_worker", "profile", "imbalance", "slack"):
        assert name in tables
    for name in ("communications", "activities", "critical_path"):
        assert f"Table `{name}`" in GUIDE or f"table `{name}`" in GUIDE
    for schema in (schemas.ACTIVITIES, schemas.CRITICAL_PATH):
        for column in schema.names:
            assert f"`{column}`" in GUIDE, column
