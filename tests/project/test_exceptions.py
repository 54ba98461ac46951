"""One exception hierarchy: every exception class timely_py defines, in Rust or in Python,
is a `timely_py.TimelyError`, so that `except timely_py.TimelyError` catches whatever the
library raises of its own."""

import importlib
import inspect
import pkgutil

import pytest
import timely_py


def own_exception_classes():
    """Every exception class defined in a module of timely_py (the analysis modules need
    its extra, which the test environment has)."""
    found = {}
    for module_info in pkgutil.walk_packages(timely_py.__path__, "timely_py."):
        if module_info.name.endswith("__main__"):
            continue  # running it is what importing it does
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException):
                if (value.__module__ or "").startswith("timely_py"):
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


@pytest.mark.timeout(120)
def test_every_exception_of_the_library_is_a_timely_error():
    classes = own_exception_classes()
    assert {"TraceFormatError", "LaunchError", "MissingDependencyError", "CodecError", "DataflowError"} <= {
        cls.__name__ for cls in classes.values()
    }, sorted(classes)
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, timely_py.TimelyError))
    assert outside == []


def test_errors_keep_the_standard_type_they_were():
    from timely_py.analysis.session import MissingDependencyError
    from timely_py.trace.reader import TraceFormatError

    assert issubclass(TraceFormatError, ValueError) and issubclass(MissingDependencyError, OSError)
    with pytest.raises(timely_py.TimelyError, match="nowhere"):
        timely_py.trace.reader.read("/nowhere/at/all")
