"""Live widgets of the textbook: one module per widget, plus the shared machinery.

`REGISTRY` maps each widget name (the `data-widget` of the DOM contract, see
WIDGETS.md) to its module. A widget module defines `NAME`, `CONTROLS` (the declared
controls), `OUTPUTS` (output key -> kind), `compute(state) -> dict` and
`render(state, values, locale) -> str`.
"""

from __future__ import annotations

from types import ModuleType

from . import bandwidth, collectives, dp, hardware, parallel3d, pp, tp, why, zero

REGISTRY: dict[str, ModuleType] = {
    module.NAME: module for module in (why, dp, zero, tp, pp, parallel3d, collectives, hardware, bandwidth)
}
