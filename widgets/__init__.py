"""Live widgets of the textbook. The folders say who writes what:

* `figures/`: one module per widget, the only file a new widget needs (with its strings
  in each `i18n/<lang>.yml`). A module defines `NAME` (its file name, the `data-widget`
  of the DOM contract, see WIDGETS.md), `CONTROLS`, `OUTPUTS` (output key -> kind),
  `compute(state) -> dict` and `render(state, values, locale) -> str`.
* `framework/`: what every widget uses: declared controls and state validation
  (`spec`), the locale and its number formats, HTML and SVG builders, evaluation and
  rendering (`core`), typed-answer exercises.
* `build/`: the MkDocs side: the plugin that pre-renders widgets and macros, the site's
  headers (CSP, caching), the per-language search index.
* `browser/`: the browser side: the entry point the Pyodide worker calls, and the
  JavaScript and CSS runtime (`browser/assets/`).

`REGISTRY` maps each widget name to its module: every `figures/*.py` whose name does
not start with `_`, found by listing the folder (so adding the file registers it) and
imported on first use.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Mapping
from types import ModuleType

FIGURES = os.path.join(os.path.dirname(__file__), "figures")


def widget_names(folder: str = FIGURES) -> tuple[str, ...]:
    """The widget modules in `folder`, by name: `zero` for `zero.py`; `_common.py` and
    other files starting with `_` are shared pieces, not widgets."""
    return tuple(sorted(entry.name[:-3] for entry in os.scandir(folder)
                        if entry.name.endswith(".py") and not entry.name.startswith("_")))


class _Registry(Mapping[str, ModuleType]):
    """Name -> widget module, imported on first use: in the browser a page imports only
    the widgets it shows, which keeps Pyodide's start short."""

    def __init__(self, names: tuple[str, ...], package: str) -> None:
        self._names = names
        self._package = package
        self._modules: dict[str, ModuleType] = {}

    def __getitem__(self, name: str) -> ModuleType:
        module = self._modules.get(name)
        if module is None:
            if name not in self._names:
                raise KeyError(name)
            module = self._modules[name] = importlib.import_module(f"{self._package}.{name}")
            assert module.NAME == name, f"{self._package}.{name} declares NAME = {module.NAME!r}"
        return module

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


NAMES = widget_names()
REGISTRY: Mapping[str, ModuleType] = _Registry(NAMES, f"{__name__}.figures")
