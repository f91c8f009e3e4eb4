"""Properties every registered widget must have (new widgets are covered automatically)."""

from __future__ import annotations

import re

import pytest

from widgets import REGISTRY
from widgets.framework.core import render_output
from widgets.build.native import locale
from widgets.framework.spec import Choice, Number, Range, defaults, edge_states


def figure(html: str) -> str:
    found = re.search(r"<figure\b.*?</figure>", html, re.S)
    assert found, "the output has no <figure>"
    return found.group(0)


def alternatives(control) -> list:
    if isinstance(control, (Range, Number)):
        return [control.lo, control.hi]
    if isinstance(control, Choice):
        return list(control.options)
    return [True, False]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_control_changes_the_figure(name: str) -> None:
    """For each control there is a state where moving it redraws the figure (pp's
    `chunks`, for instance, matters once the schedule is interleaved)."""
    module = REGISTRY[name]
    loc = locale("id")
    bases = [defaults(module.CONTROLS), *edge_states(module.CONTROLS)]
    for control in module.CONTROLS:
        changed = False
        for base in bases:
            drawn = {figure(render_output(name, {**base, control.name: value}, loc).html)
                     for value in alternatives(control)}
            if len(drawn) > 1:
                changed = True
                break
        assert changed, f"{name}: moving {control.name} never changes the figure"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_widget_names_and_outputs_follow_the_contract(name: str) -> None:
    module = REGISTRY[name]
    assert module.NAME == name and re.fullmatch(r"[a-z0-9]+", name)
    for key, kind in module.OUTPUTS.items():
        assert re.fullmatch(r"[a-z0-9_]+", key)
        from widgets.framework.spec import OUTPUT_KINDS

        assert kind in OUTPUT_KINDS
