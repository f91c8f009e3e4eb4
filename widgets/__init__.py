"""Live widgets of the textbook: one module per widget, plus the shared machinery.

`REGISTRY` maps each widget name (the `data-widget` of the DOM contract, see
WIDGETS.md) to its module. A widget module defines `NAME`, `CONTROLS` (the declared
controls), `OUTPUTS` (output key -> kind), `compute(state) -> dict` and
`render(state, values, locale) -> str`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from types import ModuleType

#: Widget names in book order; each is the module `widgets.<name>`.
NAMES = ("why", "dp", "zero", "tp", "pp", "activations", "parallel3d", "planner", "collectives", "hardware", "bandwidth")


class _Registry(Mapping[str, ModuleType]):
    """Name -> widget module, imported on first use: in the browser a page imports only
    the widgets it shows, which keeps Pyodide's start short (issue 5)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self._names = names
        self._modules: dict[str, ModuleType] = {}

    def __getitem__(self, name: str) -> ModuleType:
        module = self._modules.get(name)
        if module is None:
            if name not in self._names:
                raise KeyError(name)
            module = self._modules[name] = importlib.import_module(f"{__name__}.{name}")
            assert module.NAME == name, (module.NAME, name)
        return module

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


REGISTRY: Mapping[str, ModuleType] = _Registry(NAMES)
