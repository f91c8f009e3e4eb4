"""The package's shape: pure standard library (it runs in Pyodide), honest __all__,
every public function documented with its source (STYLE.md, hepunits)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import pytest

import calc

CALC_DIR = Path(calc.__file__).parent
MODULES = sorted(m.name for m in pkgutil.iter_modules([str(CALC_DIR)]) if not m.name.startswith("_"))
SOURCES = sorted(CALC_DIR.glob("*.py"))


def test_the_six_core_steps_and_their_helpers_exist() -> None:
    assert set(MODULES) >= {
        "models", "hardware", "memory", "compute", "activations", "collectives",
        "data_parallel", "zero", "tensor", "pipeline", "parallel3d",
    }


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_standard_library_only(path: Path) -> None:
    """calc runs in the browser's Pyodide, which ships no numpy (DESIGN.md)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside calc
                continue
            names = [node.module or ""]
        else:
            continue
        for name in names:
            assert name.split(".")[0] in sys.stdlib_module_names | {"__future__"}, (path.name, name)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_future_annotations_first(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if not body:  # a docstring only
        return
    assert isinstance(body[0], ast.ImportFrom) and body[0].module == "__future__", path.name


@pytest.mark.parametrize("name", MODULES)
def test_all_is_honest(name: str) -> None:
    """Everything in __all__ exists, and every public name the module itself defines at
    top level (function, class, constant; not imports) is in __all__ (hepunits)."""
    module = importlib.import_module(f"calc.{name}")
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), "duplicate in __all__"
    assert set(exported) <= set(dir(module))
    tree = ast.parse((CALC_DIR / f"{name}.py").read_text(encoding="utf-8"))
    defined = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
    public = {n for n in defined if not n.startswith("_") and n != "__all__"}
    # type aliases used only in signatures are not API
    public -= {n for n in public if n in {"Vector", "State", "Op", "T"}}
    assert public <= set(exported), sorted(public - set(exported))


@pytest.mark.parametrize("name", MODULES)
def test_public_functions_document_formula_and_source(name: str) -> None:
    module = importlib.import_module(f"calc.{name}")
    assert module.__doc__ and len(module.__doc__) > 40
    for attr in module.__all__:
        obj = getattr(module, attr)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            assert obj.__doc__, f"{name}.{attr} has no docstring"
        if inspect.isfunction(obj):
            hints = obj.__annotations__
            assert "return" in hints, f"{name}.{attr} has no return type"
            params = inspect.signature(obj).parameters
            assert all(p in hints for p in params), f"{name}.{attr} lacks parameter types"


@pytest.mark.parametrize("name", MODULES)
def test_returned_dataclasses_are_frozen(name: str) -> None:
    module = importlib.import_module(f"calc.{name}")
    for attr in module.__all__:
        obj = getattr(module, attr)
        if dataclasses.is_dataclass(obj):
            assert obj.__dataclass_params__.frozen, f"{name}.{attr}"  # type: ignore[attr-defined]
