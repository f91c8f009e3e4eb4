"""The package's shape: pure standard library (it runs in Pyodide), honest __all__,
every public function documented with its source (STYLE.md, hepunits), one name per
quantity (the symbol table of calc/__init__.py), keyword-only numbers beyond two."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path
from typing import Any

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


# -- one name per quantity, keyword-only numbers, one order for the model's shape ---------

# Names that once meant a quantity the symbol table in calc/__init__.py names otherwise:
# the pipeline size is pp, the ZeRO stage zero_stage, the global batch global_batch.
DENIED = {"stages": "pp", "stage": "zero_stage", "zero": "zero_stage", "batch": "global_batch"}
# gpus is the total GPU count of a run (n = t·p·d) and nothing else; where the
# data-parallel size is meant the name is dp.
TOTAL_GPUS = {"compute.training_seconds", "compute.megatron_training_seconds", "planner.degrees", "planner.plan",
              "planner.run_spec", "planner.layout_census", "utilization.mfu"}
SHAPE_ORDER = ("layers", "hidden", "heads", "vocab", "seq_len")
BATCH_NAMES = ("micro_batch", "global_batch", "microbatches")


def _public_functions() -> list[tuple[str, Any]]:
    """(module.name, function) for every function in every calc module's __all__."""
    found = []
    for name in MODULES:
        module = importlib.import_module(f"calc.{name}")
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isfunction(obj):
                found.append((f"{name}.{attr}", obj))
    return found


FUNCTIONS = _public_functions()


def _is_number(annotation: object) -> bool:
    return annotation in (int, float)


def test_the_checks_below_see_every_module() -> None:
    """The functions are read with inspect from each module's __all__, so a new module is
    covered without editing this file."""
    assert {qualified.split(".")[0] for qualified, _ in FUNCTIONS} == set(MODULES)


@pytest.mark.parametrize(("qualified", "fn"), FUNCTIONS, ids=[q for q, _ in FUNCTIONS])
def test_no_parameter_has_an_old_name(qualified: str, fn: Any) -> None:
    params = inspect.signature(fn).parameters
    for old, new in DENIED.items():
        assert old not in params, f"{qualified}: {old} is called {new} in calc"
    if "gpus" in params:
        assert qualified in TOTAL_GPUS, f"{qualified}: the data-parallel size is dp; gpus is the run's total"


@pytest.mark.parametrize(("qualified", "fn"), FUNCTIONS, ids=[q for q, _ in FUNCTIONS])
def test_more_than_two_numbers_are_keyword_only(qualified: str, fn: Any) -> None:
    """f(params=…, dp=…, zero_stage=…): a call with three numbers says which is which."""
    params = inspect.signature(fn, eval_str=True).parameters.values()
    numbers = [p for p in params if _is_number(p.annotation)]
    if len(numbers) > 2:
        positional = [p.name for p in numbers if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        assert not positional, f"{qualified}: {positional} must be keyword-only"


@pytest.mark.parametrize(("qualified", "fn"), FUNCTIONS, ids=[q for q, _ in FUNCTIONS])
def test_model_shape_comes_in_one_order_then_the_batch(qualified: str, fn: Any) -> None:
    """layers, hidden, heads, vocab, seq_len, then the batch; micro_batch right after
    seq_len wherever both appear."""
    names = list(inspect.signature(fn).parameters)
    shape = [n for n in names if n in SHAPE_ORDER]
    assert shape == sorted(shape, key=SHAPE_ORDER.index), f"{qualified}: {shape}"
    if "seq_len" in names:
        at = names.index("seq_len")
        assert all(names.index(b) > at for b in BATCH_NAMES if b in names), f"{qualified}: {names}"
        if "micro_batch" in names:
            assert names.index("micro_batch") == at + 1, f"{qualified}: {names}"


@pytest.mark.parametrize(("qualified", "fn"), FUNCTIONS, ids=[q for q, _ in FUNCTIONS])
def test_recompute_is_always_a_mode(qualified: str, fn: Any) -> None:
    """One type for recomputation: a string of RECOMPUTE_MODES, never a bool."""
    from calc.activations import RECOMPUTE_MODES

    param = inspect.signature(fn, eval_str=True).parameters.get("recompute")
    if param is None:
        return
    assert param.annotation is str, qualified
    if param.default is not inspect.Parameter.empty:
        assert param.default in RECOMPUTE_MODES, qualified


def test_training_state_functions_take_optimizer_bytes() -> None:
    """K, the optimizer's bytes per parameter, is a keyword argument defaulting to 12
    wherever training-state memory is computed (ZeRO Sec. 3.1)."""
    from calc import data_parallel, memory, parallel3d, pipeline, planner, tensor, zero

    for fn in (memory.training_state, memory.training_state_bytes, zero.state_per_gpu,
               zero.state_per_gpu_bytes, zero.reduction, zero.fits, data_parallel.state_per_gpu_bytes,
               tensor.state_per_gpu_bytes, pipeline.state_per_gpu_bytes, parallel3d.state_per_gpu_bytes,
               planner.plan):
        param = inspect.signature(fn).parameters["optimizer_bytes"]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default == memory.OPTIMIZER_BYTES == 12


def test_the_symbol_table_names_only_names_calc_uses() -> None:
    """Every name in the table of calc/__init__.py is a parameter of some public function,
    and the bubble and activation-bytes names are defined once."""
    lines = (calc.__doc__ or "").splitlines()
    borders = [i for i, line in enumerate(lines) if line.startswith("======")]
    rows = [re.match(r"^\S+\s+``(\w+)``\s", line) for line in lines[borders[0] + 1 : borders[-1]]]
    listed = {row.group(1) for row in rows if row}
    assert {"params", "dp", "pp", "zero_stage", "recompute", "optimizer_bytes", "ranks"} <= listed
    used = {p for _, fn in FUNCTIONS for p in inspect.signature(fn).parameters}
    assert listed and listed <= used, sorted(listed - used)
    defines = [path.name for path in SOURCES if "\nACTIVATION_BYTES = " in path.read_text(encoding="utf-8")]
    assert defines == ["memory.py"]
    from calc import parallel3d, pipeline

    assert {"bubble_fraction_of_time", "bubble_over_ideal_time"} <= set(pipeline.__all__)
    assert "bubble_fraction_of_time" in parallel3d.__all__
