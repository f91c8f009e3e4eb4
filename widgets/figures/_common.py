"""Pieces several widgets share: the model control and output labels."""

from __future__ import annotations

from typing import Any, Mapping

from calc.hardware import DEFAULT_MACHINE, MACHINES
from calc.models import DEFAULT_MODEL, MODELS, param_count
from calc.precision import recipe_bytes

from ..framework.html import details_table
from ..framework.locale import Locale
from ..framework.spec import Choice

MODEL = Choice("model", tuple(MODELS), DEFAULT_MODEL, labels={k: m.name for k, m in MODELS.items()})

# The mixed-precision recipes (calc.precision.RECIPES) that the widgets with ZeRO and
# model parallelism offer. All keep 2-byte weights, so a recipe changes the gradient
# buffer and K: the ZeRO paper's 2 + 2 + 12 (the default, the seed's), Megatron-LM's bf16
# with fp32 gradients 2 + 4 + 12, DeepSeek-V3's FP8 with BF16 moments 2 + 4 + 8.
# Megatron-LM's distributed optimizer is the bf16 recipe with ZeRO-1: 6 + 12/d.
SHARDED_RECIPES = ("zero-paper", "megatron-bf16", "fp8-deepseek")
RECIPE = Choice("recipe", SHARDED_RECIPES, "zero-paper")

# The machine (calc.hardware.MACHINES) of the widgets whose conclusion depends on the
# hardware: the seed's illustrative one by default, or one real server generation. The
# option labels are translated: `<widget>.controls.machine.options.<key>`.
MACHINE = Choice("machine", tuple(MACHINES), DEFAULT_MACHINE)


def machine_label(widget: str, machine: str, loc: Locale) -> str:
    """The preset's name as the widget's machine control shows it ("DGX H100")."""
    return loc.t(f"{widget}.controls.machine.options.{machine}")


def recipe_args(state: Mapping[str, Any]) -> dict[str, float]:
    """The state's recipe as calc's ``grad_bytes`` and ``optimizer_bytes`` (K)."""
    parts = recipe_bytes(state["recipe"])
    return {"grad_bytes": parts.grads, "optimizer_bytes": parts.optimizer}


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
