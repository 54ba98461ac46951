"""The package ships typing information that matches the compiled module."""

import ast
import inspect
from pathlib import Path

import timely_py
from timely_py import _core

PACKAGE = Path(timely_py.__file__).parent


def stub_names():
    """Classes (with their public members) and functions declared in `_core.pyi`."""
    tree = ast.parse((PACKAGE / "_core.pyi").read_text())
    classes, functions = {}, set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            classes[node.name] = {
                item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
        elif isinstance(node, ast.FunctionDef):
            functions.add(node.name)
    return classes, functions


def test_the_package_is_marked_typed():
    assert (PACKAGE / "py.typed").exists()


def test_every_runtime_class_and_function_is_in_the_stub():
    classes, functions = stub_names()
    for name, value in vars(_core).items():
        if name.startswith("_"):
            continue
        if inspect.isclass(value):
            assert name in classes, f"{name} is missing from _core.pyi"
        elif callable(value):
            assert name in functions, f"function {name} is missing from _core.pyi"


def typing_only():
    """Names of the stub that exist only for type checkers (such as `TypedDict`s), from the
    allowlist mypy.stubtest reads."""
    allowlist = PACKAGE.parent / "stubtest-allowlist.txt"
    lines = allowlist.read_text().splitlines()
    return {line.rsplit(".", 1)[-1] for line in lines if line.startswith("timely_py._core.")}


def test_every_public_method_is_in_the_stub():
    classes, _ = stub_names()
    for name, members in classes.items():
        if name in typing_only():
            assert not hasattr(_core, name), f"{name} exists at runtime: remove it from the allowlist"
            continue
        runtime = getattr(_core, name)
        if issubclass(runtime, BaseException):
            continue
        public = {m for m in vars(runtime) if not m.startswith("_")}
        missing = public - members
        assert not missing, f"{name}: {sorted(missing)} missing from _core.pyi"
        extra = {m for m in members if not m.startswith("_")} - public
        assert not extra, f"{name}: {sorted(extra)} in _core.pyi but not in the module"


def test_exports_are_importable():
    for name in timely_py.__all__:
        assert hasattr(timely_py, name), name
