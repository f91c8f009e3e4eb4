"""What each lab in `examples/` should measure, computed from calc.

A lab never imports calc (a reader copies one file), so the book needs its own account
of what the lab will find: one module per lab, `widgets/labs/<lab>.py`, defines

* `NAME`: the lab's name, its file `examples/<NAME>.py` (and this module's name);
* `CONFIG`: the lab's settings (lowercase names of its module constants, e.g.
  `LAYERS = 2` becomes `"layers": 2`); `tests/examples/` checks that the file's
  constants and the config its `--json` report writes are these;
* `OUTPUTS`: figure name -> kind (`bytes`, `count`, `integer`, ... as widgets' outputs);
* `compute(config) -> dict[str, float]`: every figure, from calc.

The same figures are (1) the expected values the lab's test asserts against the lab's
JSON report and (2) the numbers of the lab pages, as macros
`{{ lab-<NAME>.<figure> key=value }}`, where `key=value` overrides a `CONFIG` entry (an
exercise: "halve the bucket size"). `LABS` lists the modules, found like the widgets.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from widgets import _Registry, widget_names

FOLDER = os.path.dirname(__file__)
PREFIX = "lab-"  # the macro namespace: {{ lab-zero.weight_bytes }} is not the zero widget

LABS: Mapping[str, ModuleType] = _Registry(widget_names(FOLDER), __name__)


def _as_number(key: str, text: Any, like: Any) -> Any:
    """An override typed in a page (`bucket_kb=32`) as the type of the default."""
    if not isinstance(text, str):
        return text
    try:
        if isinstance(like, bool):
            raise ValueError
        return int(text) if isinstance(like, int) else float(text)
    except ValueError:
        raise ValueError(f"{key}={text!r} is not a {type(like).__name__}") from None


def config_with(lab: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The lab's CONFIG with `overrides` applied; an unknown key is a ValueError."""
    if lab not in LABS:
        raise ValueError(f"unknown lab {lab!r}; known: {', '.join(LABS)}")
    config = dict(LABS[lab].CONFIG)
    for key, text in overrides.items():
        if key not in config:
            raise ValueError(f"lab {lab} has no setting {key!r}; it has {', '.join(config)}")
        config[key] = _as_number(key, text, config[key])
    return config


def figures(lab: str, overrides: Mapping[str, Any] | None = None) -> dict[str, float]:
    """Every figure of the lab at its CONFIG (with `overrides`), from calc."""
    config = config_with(lab, overrides or {})
    module = LABS[lab]
    values = module.compute(config)
    assert set(values) == set(module.OUTPUTS), f"{lab}: compute() and OUTPUTS differ"
    return values


def kind_of(lab: str, key: str) -> str:
    outputs = LABS[lab].OUTPUTS
    if key not in outputs:
        raise ValueError(f"lab {lab} has no figure {key!r}; it has {', '.join(outputs)}")
    return outputs[key]


__all__ = ["LABS", "PREFIX", "config_with", "figures", "kind_of"]
