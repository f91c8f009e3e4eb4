"""Pieces several widgets share: the model control and output labels."""

from __future__ import annotations

from typing import Any, Mapping

from calc.models import DEFAULT_MODEL, MODELS, param_count

from ..framework.html import details_table
from ..framework.locale import Locale
from ..framework.spec import Choice

MODEL = Choice("model", tuple(MODELS), DEFAULT_MODEL, labels={k: m.name for k, m in MODELS.items()})


def model_params(state: Mapping[str, Any]) -> tuple[Any, int]:
    """The model config of the state and its exact parameter count."""
    model = MODELS[state["model"]]
    return model, param_count(model)


def output_label(widget: str, key: str, loc: Locale) -> str:
    return loc.t(f"{widget}.outputs.{key}")


def all_values_table(widget: str, outputs: Mapping[str, str], values: Mapping[str, float], loc: Locale) -> str:
    """Every output of the widget in a collapsible table (the figure's text alternative)."""
    rows = [(output_label(widget, key, loc), key, values[key], kind) for key, kind in outputs.items()]
    return details_table(loc.t("runtime.details"), rows, loc)
