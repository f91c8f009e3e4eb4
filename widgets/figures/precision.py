"""Widget `precision`: number formats, loss scaling and bytes per parameter of the
mixed-precision recipes.

The figures, every number from `calc.precision` (and `calc.models` for the model):

1. the bit fields of the chosen value in the chosen format (sign, exponent, mantissa),
   with the value they encode;
2. the range of every format on one log axis, subnormals lighter, the value marked:
   bf16 spans fp32's range, fp16 a narrow band, FP8 narrower still;
3. loss scaling: the value taken as a gradient, stored in fp16 without and with the
   loss scale λ, and in bf16, on fp16's part of the axis (Micikevicius et al. 2018,
   Sec. 3.2);
4. bytes per parameter of every recipe, stacked by part, at the chosen dp.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc import precision as prec

from ..framework.html import esc, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, NumberChoice, Range
from ._common import MODEL, all_values_table, model_params, output_label
from .hardware import join_sentences

NAME = "precision"
FORMAT_LABELS = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "e4m3": "FP8 E4M3", "e5m2": "FP8 E5M2"}
# Values to represent, from a gradient below fp16's smallest subnormal (2^-24 ≈ 6e-8) to
# one that only E4M3 cannot hold (its max is 448); none overflows fp16 or E5M2 by itself.
VALUES = ("1e-8", "1e-6", "1e-4", "1e-1", "1", "3e2", "3e4")
# Powers of two: λ = 8 is Micikevicius et al. 2018's SSD scale (Sec. 3.2); 65536 = 2^16 is
# PyTorch GradScaler's init_scale.
LOSS_SCALES = ("1", "8", "128", "1024", "32768", "65536")

CONTROLS = (
    Choice("fmt", prec.FORMAT_NAMES, "fp16", radio=True, labels=FORMAT_LABELS),
    NumberChoice("value", VALUES, "1e-1"),
    NumberChoice("loss_scale", LOSS_SCALES, "1024"),
    Choice("recipe", prec.RECIPE_NAMES, "zero-paper"),
    Range("dp", lo=1, hi=64, step=1, default=8, integer=True, display="integer"),
    MODEL,
)

# A format's limits are exact (65.504, 448, 57.344, 3,4028235 × 10³⁸); the smallest values
# and epsilon always as powers of ten, so that each column of the chapter's table of
# formats reads one way (2⁻⁷ as 7,8125 × 10⁻³ beside fp16's 9,765625 × 10⁻⁴).
RANGE_KINDS = {"max": "exact", "min_normal": "exact_scientific", "min_subnormal": "exact_scientific"}
RECIPE_KEYS = {r: r.replace("-", "_") for r in prec.RECIPE_NAMES}

OUTPUTS: dict[str, str] = {
    "bits": "integer",
    "exponent_bits": "integer",
    "mantissa_bits": "integer",
    "bias": "integer",
    "max_value": "exact",
    "min_normal": "exact_scientific",
    "min_subnormal": "exact_scientific",
    "epsilon": "exact_scientific",
    "decimal_digits": "number",
    "value": "scientific",
    # Stored values with enough digits that the rounding shows (0,099975586, not 0,1).
    "rounded_value": "exact",
    "relative_error": "scientific",
    "spacing": "exact",
    "sign_bit": "integer",
    "exponent_field": "integer",
    "mantissa_field": "integer",
    "unbiased_exponent": "integer",
    "subnormal": "yesno",
    "underflow": "yesno",
    "saturated": "yesno",
    **{f"{f}_{k}": kind for f in prec.FORMAT_NAMES for k, kind in RANGE_KINDS.items()},
    "loss_scale": "integer",
    "fp16_unscaled": "exact",
    "fp16_unscaled_error": "scientific",
    # The same error in percent (a number, 0,0244 for 0,1 in fp16): "fraction" prints one
    # decimal of a percent and would show an error of 2,4 × 10⁻⁴ as 0,0%.
    "fp16_unscaled_error_percent": "scientific",
    "scaled_gradient": "exact",
    "fp16_scaled": "exact",
    "fp16_overflow": "yesno",
    "fp16_recovered": "exact",
    "fp16_recovered_error": "scientific",
    "bf16_gradient": "exact",
    "bf16_gradient_error": "scientific",
    # Bytes per parameter are exact fractions (12/64 = 0,1875): "exact" shows them whole,
    # where "number" (two decimals) would print 0,06 + 0,12 for a sum of 0,19.
    **{f"{key}_bytes": "exact" for key in RECIPE_KEYS.values()},
    "dp": "integer",
    "recipe_weights": "exact",
    "recipe_grads": "exact",
    "recipe_master": "exact",
    "recipe_moments": "exact",
    "recipe_optimizer": "exact",
    "recipe_total": "exact",
    "params": "count",
    "params_exact": "integer",  # Ψ to the parameter, so that a reader can redo 6Ψ
    "recipe_state_bytes": "bytes",
    "recipe_unsharded": "exact",
    "recipe_unsharded_state_bytes": "bytes",
}


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    fmt = state["fmt"]
    f = prec.FORMATS[fmt]
    x = float(state["value"])
    s = float(state["loss_scale"])
    d = state["dp"]
    _, params = model_params(state)
    rounded = prec.round_to(x, fmt)
    enc = prec.encode(x, fmt)
    values: dict[str, float] = {
        "bits": f.bits,
        "exponent_bits": f.exponent_bits,
        "mantissa_bits": f.mantissa_bits,
        "bias": f.bias,
        "max_value": prec.max_finite(fmt),
        "min_normal": prec.min_normal(fmt),
        "min_subnormal": prec.min_subnormal(fmt),
        "epsilon": prec.epsilon(fmt),
        "decimal_digits": prec.decimal_digits(fmt),
        "value": x,
        "rounded_value": rounded,
        "relative_error": prec.relative_error(x, fmt),
        "spacing": prec.spacing(x, fmt),
        "sign_bit": enc.sign,
        "exponent_field": enc.exponent,
        "mantissa_field": enc.mantissa,
        "unbiased_exponent": enc.unbiased_exponent(fmt),
        "subnormal": 1 if enc.subnormal else 0,
        "underflow": 1 if rounded == 0.0 else 0,
        "saturated": 1 if abs(x) > prec.max_finite(fmt) else 0,
    }
    for name in prec.FORMAT_NAMES:
        values[f"{name}_max"] = prec.max_finite(name)
        values[f"{name}_min_normal"] = prec.min_normal(name)
        values[f"{name}_min_subnormal"] = prec.min_subnormal(name)
    plain = prec.loss_scaled(x, 1)
    scaled = prec.loss_scaled(x, s)
    bf16 = prec.round_to(x, "bf16")
    values.update({
        "loss_scale": s,
        "fp16_unscaled": plain.recovered,
        "fp16_unscaled_error": plain.recovered_error,
        "fp16_unscaled_error_percent": plain.recovered_error * 100,
        "scaled_gradient": x * s,
        # An overflow stores inf; the figure says so, the number stays finite (max).
        "fp16_scaled": prec.max_finite("fp16") if scaled.overflow else scaled.scaled,
        "fp16_overflow": 1 if scaled.overflow else 0,
        "fp16_recovered": scaled.recovered,
        "fp16_recovered_error": scaled.recovered_error,
        "bf16_gradient": bf16,
        "bf16_gradient_error": prec.relative_error(x, "bf16"),
    })
    for recipe, key in RECIPE_KEYS.items():
        values[f"{key}_bytes"] = prec.state_bytes_per_param(recipe, dp=d)
    chosen = prec.recipe_bytes(state["recipe"], dp=d)
    values.update({
        "dp": d,
        "recipe_weights": chosen.weights,
        "recipe_grads": chosen.grads,
        "recipe_master": chosen.master,
        "recipe_moments": chosen.moments,
        "recipe_optimizer": chosen.optimizer,
        "recipe_total": chosen.total,
        "params": params,
        "params_exact": params,
        "recipe_state_bytes": prec.state_bytes(params, state["recipe"], dp=d),
        "recipe_unsharded": prec.unsharded_bytes_per_param(state["recipe"]),
        "recipe_unsharded_state_bytes": params * prec.unsharded_bytes_per_param(state["recipe"]),
    })
    return values


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """The output region: stat cards, the figures, the sentence, the table of values."""
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("rounded_value", "relative_error", "fp16_recovered", "recipe_total")], loc)
    fmt_label = FORMAT_LABELS[state["fmt"]]
    recipe = loc.t(f"{NAME}.controls.recipe.options.{state['recipe']}")
    if v["underflow"] and v["value"] != 0:
        stored = loc.t(f"{NAME}.stored_zero", fmt=fmt_label, value=f["value"])
    elif v["saturated"]:
        stored = loc.t(f"{NAME}.stored_saturated", fmt=fmt_label, value=f["value"], max=f["max_value"])
    else:
        stored = loc.t(f"{NAME}.stored", fmt=fmt_label, value=f["value"], rounded=f["rounded_value"],
                       error=f["relative_error"])
    if v["loss_scale"] == 1:
        scaling = loc.t(f"{NAME}.scaling_none", unscaled=f["fp16_unscaled_error"], bf16=f["bf16_gradient_error"])
    elif v["fp16_overflow"]:
        scaling = loc.t(f"{NAME}.scaling_overflow", scale=f["loss_scale"], scaled=f["scaled_gradient"],
                        max=f["fp16_max"])
    elif v["fp16_unscaled"] == 0 and v["fp16_recovered"] != 0:
        scaling = loc.t(f"{NAME}.scaling_rescued", scale=f["loss_scale"], recovered=f["fp16_recovered"],
                        error=f["fp16_recovered_error"])
    elif v["fp16_unscaled_error"] == v["fp16_recovered_error"]:  # λ = 2^k leaves a normal value as it was
        scaling = loc.t(f"{NAME}.scaling_same", scale=f["loss_scale"], error=f["fp16_unscaled_error"],
                        bf16=f["bf16_gradient_error"])
    else:
        scaling = loc.t(f"{NAME}.scaling", scale=f["loss_scale"], unscaled=f["fp16_unscaled_error"],
                        scaled=f["fp16_recovered_error"], bf16=f["bf16_gradient_error"])
    state_text = loc.t(f"{NAME}.recipe_sentence", recipe=recipe, total=f["recipe_total"], dp=f["dp"],
                       model=model_params(state)[0].name, state=f["recipe_state_bytes"])
    sentence = esc(join_sentences(stored, scaling, state_text))
    return (f'{cards}{figure(state, v, f, loc)}<p class="w-sentence">{sentence}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")

# -- the figures ------------------------------------------------------------------------
WIDTH = 400
FIELD_CLASSES = (("sign", "w-c2"), ("exponent", "w-c1"), ("mantissa", "w-c3"))


def _bits_svg(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale, title: str, desc: str) -> str:
    """One box per bit, coloured by field, 1s filled and 0s pale, field names above and
    the field values below."""
    f = prec.FORMATS[state["fmt"]]
    fields = (
        ("sign", 1, int(v["sign_bit"])),
        ("exponent", f.exponent_bits, int(v["exponent_field"])),
        ("mantissa", f.mantissa_bits, int(v["mantissa_field"])),
    )
    left, right, gap = 4.0, 396.0, 4.0
    box = min(24.0, (right - left - 2 * gap) / f.bits)
    x = left
    top = 16.0
    parts = []
    for (field, width, bits), (_, cls) in zip(fields, FIELD_CLASSES):
        text = f"{bits:0{width}b}"
        start = x
        for digit in text:
            on = digit == "1"
            parts.append(f'<rect class="{cls}" x="{num(x)}" y="{num(top)}" width="{num(box - 1)}" height="22"'
                         f' fill-opacity="{"1" if on else "0.22"}"/>')
            if box >= 9:
                parts.append(f'<text class="w-fig-value{" w-on-bar" if on else ""}" x="{num(x + (box - 1) / 2)}"'
                             f' y="{num(top + 15)}" text-anchor="middle">{digit}</text>')
            x += box
        label = "±" if field == "sign" else loc.t(f"{NAME}.figure.{field}", bits=loc.integer(width))
        parts.append(f'<text class="w-fig-note" x="{num(start)}" y="{num(top - 4)}">{esc(label)}</text>')
        parts.append(f'<text class="w-fig-tick" x="{num(start)}" y="{num(top + 36)}">{esc(loc.integer(bits))}</text>')
        x += gap
    if v["subnormal"] or v["underflow"]:
        formula = loc.t(f"{NAME}.figure.formula_subnormal", sign=loc.integer(v["sign_bit"]),
                        emin=loc.integer(v["unbiased_exponent"]), mantissa=loc.integer(v["mantissa_field"]),
                        scale=loc.integer(2 ** f.mantissa_bits), value=loc.exact(v["rounded_value"]))
    else:
        formula = loc.t(f"{NAME}.figure.formula", sign=loc.integer(v["sign_bit"]),
                        exponent=loc.integer(v["exponent_field"]), bias=loc.integer(v["bias"]),
                        mantissa=loc.integer(v["mantissa_field"]), scale=loc.integer(2 ** f.mantissa_bits),
                        value=loc.exact(v["rounded_value"]))
    parts.append(f'<text class="w-fig-note" x="{num(left)}" y="{num(top + 54)}">{esc(formula)}</text>')
    return svg("w-precision-bits", WIDTH, 78, "".join(parts), title, desc)


AXIS_X, AXIS_END = 66.0, 392.0


def _log_axis(lo: float, hi: float):
    scale = (AXIS_END - AXIS_X) / (hi - lo)
    return lambda log2_value: AXIS_X + (min(max(log2_value, lo), hi) - lo) * scale


def _ticks(x_of, exponents: tuple[int, ...], height: float) -> list[str]:
    """Grid lines at powers of ten, labelled 10ⁿ (the axis's scale, not results)."""
    parts = []
    for e in exponents:
        x = x_of(e * math.log2(10))
        parts.append(f'<line class="w-grid" x1="{num(x)}" y1="0" x2="{num(x)}" y2="{num(height)}"/>'
                     f'<text class="w-fig-tick" x="{num(x)}" y="{num(height + 11)}" text-anchor="middle">'
                     f'10{str(e).translate(SUPERSCRIPT)}</text>')
    return parts


def _marker(x: float, height: float, label: str, cls: str = "w-limit") -> str:
    anchor = "end" if x > WIDTH / 2 else "start"
    tx = x - 3 if anchor == "end" else x + 3
    return (f'<line class="{cls}" x1="{num(x)}" y1="0" x2="{num(x)}" y2="{num(height)}"/>'
            f'<text class="w-fig-note" x="{num(tx)}" y="{num(height - 3)}" text-anchor="{anchor}">{esc(label)}</text>')


def _range_svg(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale,
               title: str, desc: str) -> str:
    """Every format's positive range on one log axis: subnormals pale, normals solid."""
    x_of = _log_axis(-150.0, 130.0)
    rows = prec.FORMAT_NAMES
    pitch = 18.0
    height = 6 + len(rows) * pitch + 14
    parts = _ticks(x_of, (-40, -20, 0, 20), height)
    for i, name in enumerate(rows):
        y = 6 + i * pitch
        sub, normal, top = (math.log2(v[f"{name}_{k}"]) for k in ("min_subnormal", "min_normal", "max"))
        cls = "w-c1" if name == state["fmt"] else "w-c6"
        weight = ' font-weight="700"' if name == state["fmt"] else ""
        parts.append(f'<text class="w-fig-note" x="{num(AXIS_X - 6)}" y="{num(y + 10)}" text-anchor="end"{weight}>'
                     f'{esc(FORMAT_LABELS[name])}</text>'
                     f'<rect class="{cls}" x="{num(x_of(sub))}" y="{num(y)}" width="{num(x_of(normal) - x_of(sub))}"'
                     f' height="12" fill-opacity="0.35"/>'
                     f'<rect class="{cls}" x="{num(x_of(normal))}" y="{num(y)}" width="{num(x_of(top) - x_of(normal))}"'
                     f' height="12"/>')
    parts.append(_marker(x_of(math.log2(v["value"])), height, loc.t(f"{NAME}.figure.value_mark", value=f["value"])))
    return svg("w-precision-range", WIDTH, math.ceil(height + 16), "".join(parts), title, desc)


def _scaling_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """fp16's band around the gradient g and λ·g, with what each storage keeps."""
    lo, hi = -34.0, 20.0
    x_of = _log_axis(lo, hi)
    parts = []
    band_y, band_h = 4.0, 14.0
    sub, normal, top = (math.log2(v[f"fp16_{k}"]) for k in ("min_subnormal", "min_normal", "max"))
    parts.append(f'<text class="w-fig-note" x="{num(AXIS_X - 6)}" y="{num(band_y + 11)}" text-anchor="end">fp16</text>'
                 f'<rect class="w-c1" x="{num(x_of(sub))}" y="{num(band_y)}" width="{num(x_of(normal) - x_of(sub))}"'
                 f' height="{band_h}" fill-opacity="0.35"/>'
                 f'<rect class="w-c1" x="{num(x_of(normal))}" y="{num(band_y)}" width="{num(x_of(top) - x_of(normal))}"'
                 f' height="{band_h}"/>')
    lost_w = x_of(sub) - AXIS_X  # below half the smallest subnormal a value rounds to zero
    parts.append(f'<rect class="w-over" x="{num(AXIS_X)}" y="{num(band_y)}" width="{num(max(lost_w, 0))}"'
                 f' height="{band_h}"/>')
    parts.append(f'<text class="w-fig-tick" x="{num(AXIS_X + 2)}" y="{num(band_y + band_h + 10)}">'
                 f'{esc(loc.t(f"{NAME}.figure.flushed"))}</text>')
    g, sg = math.log2(v["value"]), math.log2(v["scaled_gradient"])
    arrow_y = band_y + band_h + 34
    x1, x2 = x_of(g), x_of(sg)
    parts.append(f'<circle class="w-c2" cx="{num(x1)}" cy="{num(arrow_y)}" r="3.5"/>')
    if x2 - x1 > 8:
        parts.append(f'<line class="w-grid" x1="{num(x1 + 4)}" y1="{num(arrow_y)}" x2="{num(x2 - 6)}" y2="{num(arrow_y)}"'
                     f' stroke-width="2"/>'
                     f'<polygon class="w-c2" points="{num(x2)},{num(arrow_y)} {num(x2 - 6)},{num(arrow_y - 3.5)} '
                     f'{num(x2 - 6)},{num(arrow_y + 3.5)}"/>')
    parts.append(f'<text class="w-fig-note" x="{num(x1)}" y="{num(arrow_y + 15)}" text-anchor="{"start" if x1 < 200 else "end"}">'
                 f'{esc(loc.t(f"{NAME}.figure.g", value=f["value"]))}</text>')
    scaled_label = loc.t(f"{NAME}.figure.sg_overflow" if v["fp16_overflow"] else f"{NAME}.figure.sg",
                         scale=f["loss_scale"], scaled=f["scaled_gradient"])
    parts.append(f'<text class="w-fig-note" x="{num(x2)}" y="{num(arrow_y - 7)}" text-anchor="{"start" if x2 < 200 else "end"}">'
                 f'{esc(scaled_label)}</text>')
    # What each path keeps, one line each.
    lines = [
        loc.t(f"{NAME}.figure.keep_unscaled", stored=f["fp16_unscaled"], error=f["fp16_unscaled_error"]),
        loc.t(f"{NAME}.figure.keep_overflow" if v["fp16_overflow"] else f"{NAME}.figure.keep_scaled",
              scale=f["loss_scale"], stored=f["fp16_recovered"], error=f["fp16_recovered_error"]),
        loc.t(f"{NAME}.figure.keep_bf16", stored=f["bf16_gradient"], error=f["bf16_gradient_error"]),
    ]
    y = arrow_y + 34
    for i, text in enumerate(lines):
        parts.append(f'<text class="w-fig-note" x="4" y="{num(y + i * 15)}">{esc(text)}</text>')
    return svg("w-precision-scaling", WIDTH, math.ceil(y + 2 * 15 + 6), "".join(parts), title, desc)


def _text_width(text: str) -> float:
    """Rough width of a tick label at 11 px: wide CJK characters, narrow Latin ones."""
    return math.fsum(11.0 if ord(c) >= 0x2E80 else 5.8 for c in text)


PART_CLASSES = (("weights", "w-c1"), ("grads", "w-c2"), ("master", "w-c3"), ("moments", "w-c4"))
BAR_X, BAR_END = 118.0, 360.0


def _recipes_svg(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale,
                 title: str, desc: str) -> str:
    """One stacked bar per recipe (weights, gradients, master, moments) at the chosen dp."""
    d = state["dp"]
    totals = {r: v[f"{RECIPE_KEYS[r]}_bytes"] for r in prec.RECIPE_NAMES}
    hi = max(max(totals.values()), 18.0)
    scale = (BAR_END - BAR_X) / hi
    pitch = 20.0
    parts = []
    legend_x = 4.0
    for part, cls in PART_CLASSES:
        label = loc.t(f"{NAME}.figure.part_{part}")
        parts.append(f'<rect class="{cls}" x="{num(legend_x)}" y="2" width="9" height="9"/>'
                     f'<text class="w-fig-tick" x="{num(legend_x + 12)}" y="10">{esc(label)}</text>')
        legend_x += 12 + _text_width(label) + 12
    top = 18.0
    for i, recipe in enumerate(prec.RECIPE_NAMES):
        y = top + i * pitch
        chosen = recipe == state["recipe"]
        split = prec.recipe_bytes(recipe, dp=d)
        weight = ' font-weight="700"' if chosen else ""
        parts.append(f'<text class="w-fig-note" x="{num(BAR_X - 6)}" y="{num(y + 11)}" text-anchor="end"{weight}>'
                     f'{esc(loc.t(f"{NAME}.figure.short.{recipe}"))}</text>')
        x = BAR_X
        for part, cls in PART_CLASSES:
            w = getattr(split, part) * scale
            if w > 0:
                parts.append(f'<rect class="{cls}" x="{num(x)}" y="{num(y)}" width="{num(w)}" height="14"/>')
            x += w
        if chosen:
            parts.append(f'<rect class="w-over" x="{num(BAR_X - 1)}" y="{num(y - 1)}" width="{num(x - BAR_X + 2)}" height="16"/>')
        parts.append(f'<text class="w-fig-value" x="{num(x + 4)}" y="{num(y + 11)}"{weight}>'
                     f'{esc(f[RECIPE_KEYS[recipe] + "_bytes"])}</text>')
    y = top + len(prec.RECIPE_NAMES) * pitch + 8
    note = loc.t(f"{NAME}.figure.model_state", model=model_params(state)[0].name, state=f["recipe_state_bytes"],
                 recipe=loc.t(f"{NAME}.figure.short.{state['recipe']}"))
    parts.append(f'<text class="w-fig-note" x="4" y="{num(y)}">{esc(note)}</text>')
    return svg("w-precision-recipes", WIDTH, math.ceil(y + 6), "".join(parts), title, desc)


def figure(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    fmt = FORMAT_LABELS[state["fmt"]]
    bits_heading = loc.t(f"{NAME}.figure.bits", fmt=fmt, value=f["value"], bits=f["bits"],
                         exponent=f["exponent_bits"], mantissa=f["mantissa_bits"])
    bits_desc = loc.t(f"{NAME}.figure.bits_desc", fmt=fmt, value=f["value"], sign=f["sign_bit"],
                      exponent=f["exponent_field"], mantissa=f["mantissa_field"],
                      rounded=f["rounded_value"], error=f["relative_error"])
    range_heading = loc.t(f"{NAME}.figure.range")
    range_desc = loc.t(f"{NAME}.figure.range_desc", fp32=f["fp32_max"], fp16=f["fp16_max"], bf16=f["bf16_max"],
                       e4m3=f["e4m3_max"], e5m2=f["e5m2_max"], sub=f["fp16_min_subnormal"])
    scaling_heading = loc.t(f"{NAME}.figure.scaling", scale=f["loss_scale"])
    scaling_desc = loc.t(f"{NAME}.figure.scaling_desc", value=f["value"], scale=f["loss_scale"],
                         unscaled=f["fp16_unscaled"], recovered=f["fp16_recovered"],
                         bf16=f["bf16_gradient"])
    recipes_heading = loc.t(f"{NAME}.figure.recipes", dp=f["dp"])
    recipes_desc = loc.t(f"{NAME}.figure.recipes_desc", dp=f["dp"], **{
        RECIPE_KEYS[r]: f[RECIPE_KEYS[r] + "_bytes"] for r in prec.RECIPE_NAMES})
    return (
        f'<figure class="w-fig w-precision-fig">'
        f'<figcaption class="w-fig-heading">{esc(bits_heading)}</figcaption>'
        f'{_bits_svg(state, v, loc, bits_heading, bits_desc)}'
        f'<p class="w-fig-heading">{esc(range_heading)}</p>{_range_svg(state, v, f, loc, range_heading, range_desc)}'
        f'<p class="w-fig-heading">{esc(scaling_heading)}</p>{_scaling_svg(v, f, loc, scaling_heading, scaling_desc)}'
        f'<p class="w-fig-heading">{esc(recipes_heading)}</p>{_recipes_svg(state, v, f, loc, recipes_heading, recipes_desc)}'
        f'</figure>'
    )
