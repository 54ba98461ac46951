"""The examples in the docstrings of `timely_py.autoscale` and of `timely_py.shares` (sources
that scale with the cluster) run as written."""

import doctest
import importlib
import pkgutil

import pytest
import timely_py.autoscale

MODULES = sorted(m.name for m in pkgutil.iter_modules(timely_py.autoscale.__path__, "timely_py.autoscale."))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", ["timely_py.autoscale", *MODULES, "timely_py.shares"])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    failed, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failed == 0
