"""Widget `zero`: ZeRO sharding over N data-parallel GPUs (seed 000, step 3).

Stage 1 shards the optimizer state, stage 2 also the gradients, stage 3 also the
weights (Rajbhandari et al. 2019); stage 0 is plain data parallelism.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc import zero
from calc.hardware import DEFAULT_GPU, GPUS
from calc.memory import training_state

from ..framework.html import bar_end_label, esc, line_label, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, Range
from ._common import MODEL, all_values_table, model_params, output_label

NAME = "zero"
GPU = GPUS[DEFAULT_GPU]

CONTROLS = (
    Range("gpus", lo=1, hi=64, step=1, default=8, integer=True, display="integer"),
    Choice("stage", ("0", "1", "2", "3"), "1", radio=True),
    MODEL,
)

OUTPUTS: dict[str, str] = {
    "state_per_gpu_bytes": "bytes",
    "reduction": "ratio",
    "sent_per_gpu_bytes": "bytes",
    "fits": "yesno",
    "weights_per_gpu_bytes": "bytes",
    "grads_per_gpu_bytes": "bytes",
    "optimizer_per_gpu_bytes": "bytes",
    "comm_over_dp": "ratio",
    "gpu_memory_bytes": "bytes",
    "weights_bytes": "bytes",
    "grads_bytes": "bytes",
    "optimizer_bytes": "bytes",
    "dp_state_per_gpu_bytes": "bytes",
    "dp_sent_per_gpu_bytes": "bytes",
}


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    _, params = model_params(state)
    n, stage = state["gpus"], int(state["stage"])
    parts = zero.state_per_gpu(params=params, dp=n, zero_stage=stage)
    whole = training_state(params)  # the whole model's state, before any sharding
    return {
        "state_per_gpu_bytes": parts.total,
        "reduction": zero.reduction(dp=n, zero_stage=stage),
        "sent_per_gpu_bytes": zero.sent_per_gpu_bytes(params=params, dp=n, zero_stage=stage),
        "fits": 1 if zero.fits(params=params, dp=n, zero_stage=stage, memory_bytes=GPU.memory_bytes) else 0,
        "weights_per_gpu_bytes": parts.weights,
        "grads_per_gpu_bytes": parts.grads,
        "optimizer_per_gpu_bytes": parts.optimizer,
        "comm_over_dp": zero.comm_over_dp(stage),
        "gpu_memory_bytes": GPU.memory_bytes,
        "weights_bytes": whole.weights,
        "grads_bytes": whole.grads,
        "optimizer_bytes": whole.optimizer,
        "dp_state_per_gpu_bytes": zero.state_per_gpu_bytes(params=params, dp=n, zero_stage=0),
        "dp_sent_per_gpu_bytes": zero.sent_per_gpu_bytes(params=params, dp=n, zero_stage=0),
    }


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """The output region: stat cards, the figure, the sentence, the table of values."""
    n, stage = state["gpus"], int(state["stage"])
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("state_per_gpu_bytes", "reduction", "sent_per_gpu_bytes", "fits")], loc)
    if v["fits"]:
        fit_key = "zero.fit_yes"
    else:
        fit_key = "zero.fit_no_more_gpus" if stage == 3 or n == 1 else "zero.fit_no"
    fit = loc.t(fit_key, gpu=f["gpu_memory_bytes"])
    key = "zero.sentence_single" if n == 1 else f"zero.sentence_stage{stage}"
    sentence = loc.h(key, gpus=loc.integer(n), state=f["state_per_gpu_bytes"], reduction=f["reduction"],
                     sent=f["sent_per_gpu_bytes"], comm=f["comm_over_dp"], weights=f["weights_per_gpu_bytes"],
                     grads=f["grads_per_gpu_bytes"], optimizer=f["optimizer_bytes"], fit=fit)
    return (f'{cards}{figure(n, stage, v, f, loc)}<p class="w-sentence">{sentence}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


# -- the figure -------------------------------------------------------------------------
# SVGs 400 units wide (legible from a 375 px phone up); headings and legends are HTML.
WIDTH = 400
MAP_X, MAP_W = 50.0, 276.0  # the whole state, 16 bytes per parameter, laid out once per GPU
ROW_H, ROW_PITCH = 14.0, 19.0
MAX_ROWS = 8  # GPUs drawn; beyond, GPU 0..6, an ellipsis, GPU N−1
GROUPS = (("weights", "w-c1"), ("grads", "w-c2"), ("optimizer", "w-c3"))


def _shown_gpus(n: int) -> list[int | None]:
    """The GPU indices drawn, None for the ellipsis row."""
    if n <= MAX_ROWS:
        return list(range(n))
    return [*range(MAX_ROWS - 1), None, n - 1]


def _ownership_svg(n: int, v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """One row per GPU: the whole state's three groups, solid where this GPU holds them."""
    scale = MAP_W / v["dp_state_per_gpu_bytes"]
    parts = []
    y = 2.0
    for gpu in _shown_gpus(n):
        if gpu is None:
            parts.append(f'<text class="w-fig-note" x="{num(MAP_X - 6)}" y="{num(y + 9)}" text-anchor="end">⋮</text>'
                         f'<text class="w-fig-note" x="{num(MAP_X + MAP_W / 2)}" y="{num(y + 9)}" text-anchor="middle">'
                         f'{esc(loc.t("zero.figure.more", count=loc.integer(n - MAX_ROWS)))}</text>')
            y += ROW_PITCH - 4
            continue
        parts.append(f'<text class="w-fig-tick" x="{num(MAP_X - 6)}" y="{num(y + 11)}" text-anchor="end">'
                     f'{esc(loc.t("zero.figure.gpu", index=loc.integer(gpu)))}</text>')
        x = MAP_X
        for group, cls in GROUPS:
            width = v[f"{group}_bytes"] * scale
            held = v[f"{group}_per_gpu_bytes"]
            if held < v[f"{group}_bytes"]:  # sharded: this GPU owns slice `gpu` of N
                parts.append(f'<rect class="{cls} w-zero-ghost" x="{num(x)}" y="{num(y)}" width="{num(width - 1)}" height="{ROW_H}"/>')
                slice_w = held * scale
                sx = x + gpu * slice_w
                parts.append(f'<rect class="{cls} w-zero-owned" x="{num(sx)}" y="{num(y)}" width="{num(max(slice_w - 0.3, 1.2))}" height="{ROW_H}"/>')
            else:
                parts.append(f'<rect class="{cls}" x="{num(x)}" y="{num(y)}" width="{num(width - 1)}" height="{ROW_H}"/>')
            x += width
        parts.append(f'<text class="w-fig-value" x="{WIDTH - 2}" y="{num(y + 11)}" text-anchor="end">{esc(f["state_per_gpu_bytes"])}</text>')
        y += ROW_PITCH
    return svg("w-zero-map", WIDTH, math.ceil(y), "".join(parts), title, desc)


def _memory_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """One GPU's stacked state against its memory line, over the plain-DP state as an outline."""
    left, span = 4.0, 392.0
    scale = span / (max(v["dp_state_per_gpu_bytes"], v["gpu_memory_bytes"]) * 1.02)
    top, bar_h = 18.0, 26.0
    parts = []
    base_end = left + v["dp_state_per_gpu_bytes"] * scale
    parts.append(f'<rect class="w-zero-base" x="{num(left)}" y="{num(top)}" width="{num(base_end - left)}" height="{bar_h}"/>')
    x = left
    for group, cls in GROUPS:
        width = v[f"{group}_per_gpu_bytes"] * scale
        parts.append(f'<rect class="{cls}" x="{num(x)}" y="{num(top)}" width="{num(width)}" height="{bar_h}"/>')
        x += width
    gpu_x = left + v["gpu_memory_bytes"] * scale
    if v["state_per_gpu_bytes"] > v["gpu_memory_bytes"]:
        parts.append(f'<rect class="w-over" x="{num(gpu_x)}" y="{num(top - 2)}" width="{num(x - gpu_x)}" height="{bar_h + 4}"/>')
    parts.append(f'<line class="w-limit" x1="{num(gpu_x)}" y1="{num(top - 6)}" x2="{num(gpu_x)}" y2="{num(top + bar_h + 6)}"/>')
    total = esc(loc.t("zero.figure.total_fits" if v["fits"] else "zero.figure.total_over", state=f["state_per_gpu_bytes"]))
    parts.append(bar_end_label(x, left, 12, total, 150))
    if v["state_per_gpu_bytes"] < v["dp_state_per_gpu_bytes"]:
        base = esc(loc.t("zero.figure.baseline", state=f["dp_state_per_gpu_bytes"]))
        parts.append(f'<text class="w-fig-note" x="{num(base_end)}" y="12" text-anchor="end">{base}</text>')
    gpu_label = esc(loc.t("zero.figure.gpu_line", memory=f["gpu_memory_bytes"]))
    label_y = top + bar_h + 16
    parts.append(line_label(gpu_x, label_y, gpu_label, WIDTH))
    return svg("w-zero-mem", WIDTH, math.ceil(label_y + 4), "".join(parts), title, desc)


def _comm_svg(stage: int, v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """Bytes each GPU sends per step: plain DP, and this stage beside it."""
    label_x, bar_x, bar_end = 80.0, 86.0, 310.0
    rows = [(loc.t("zero.figure.dp_row"), "w-c5", v["dp_sent_per_gpu_bytes"], f["dp_sent_per_gpu_bytes"])]
    if stage > 0:
        text = loc.t("zero.figure.sent_value", sent=f["sent_per_gpu_bytes"], comm=f["comm_over_dp"])
        rows.append((loc.t("zero.figure.stage_row", stage=loc.integer(stage)), "w-c6", v["sent_per_gpu_bytes"], text))
    hi = max(v["dp_sent_per_gpu_bytes"], v["sent_per_gpu_bytes"])
    scale = (bar_end - bar_x) / hi if hi > 0 else 0.0
    parts = []
    for i, (label, cls, value, text) in enumerate(rows):
        y = 2 + i * 24
        end = bar_x + value * scale
        inside = end - bar_x > 150  # the longer bar carries its label inside
        parts.append(f'<text class="w-fig-note" x="{num(label_x)}" y="{y + 13}" text-anchor="end">{esc(label)}</text>'
                     f'<rect class="{cls}" x="{num(bar_x)}" y="{y}" width="{num(value * scale)}" height="18"/>'
                     f'<text class="w-fig-value{" w-on-bar" if inside else ""}" x="{num(end - 5 if inside else end + 5)}" y="{y + 13}"'
                     f' text-anchor="{"end" if inside else "start"}">{esc(text)}</text>')
    return svg("w-zero-comm", WIDTH, 4 + len(rows) * 24, "".join(parts), title, desc)


def figure(n: int, stage: int, v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    map_heading = loc.t("zero.figure.map", gpus=loc.integer(n), state=f["dp_state_per_gpu_bytes"])
    legend = []
    for group, cls in GROUPS:
        name = loc.t(f"zero.figure.{group}")
        if v[f"{group}_per_gpu_bytes"] < v[f"{group}_bytes"]:
            text = loc.t("zero.figure.sharded", name=name, whole=f[f"{group}_bytes"], gpus=loc.integer(n),
                         held=f[f"{group}_per_gpu_bytes"])
        else:
            text = loc.t("zero.figure.full_copy", name=name, whole=f[f"{group}_bytes"])
        legend.append(f'<li><span class="w-swatch {cls}"></span>{esc(text)}</li>')
    if v["state_per_gpu_bytes"] < v["dp_state_per_gpu_bytes"]:
        legend.append(f'<li><span class="w-swatch w-c3 w-zero-swatch-ghost"></span>{esc(loc.t("zero.figure.ghost"))}</li>')
    map_desc = loc.t("zero.figure.map_desc", gpus=loc.integer(n), weights=f["weights_per_gpu_bytes"],
                     grads=f["grads_per_gpu_bytes"], optimizer=f["optimizer_per_gpu_bytes"], state=f["state_per_gpu_bytes"])
    mem_heading = loc.t("zero.figure.memory", gpu=f["gpu_memory_bytes"])
    mem_desc = loc.t("zero.figure.memory_desc_fits" if v["fits"] else "zero.figure.memory_desc_over",
                     state=f["state_per_gpu_bytes"], gpu=f["gpu_memory_bytes"], baseline=f["dp_state_per_gpu_bytes"])
    comm_heading = loc.t("zero.figure.comm")
    comm_desc = loc.t("zero.figure.comm_desc", sent=f["sent_per_gpu_bytes"], baseline=f["dp_sent_per_gpu_bytes"],
                      comm=f["comm_over_dp"])
    return (
        f'<figure class="w-fig w-zero-fig">'
        f'<figcaption class="w-fig-heading">{esc(map_heading)}</figcaption>'
        f'{_ownership_svg(n, v, f, loc, map_heading, map_desc)}'
        f'<ul class="w-legend">{"".join(legend)}</ul>'
        f'<p class="w-fig-heading">{esc(mem_heading)}</p>{_memory_svg(v, f, loc, mem_heading, mem_desc)}'
        f'<p class="w-fig-heading">{esc(comm_heading)}</p>{_comm_svg(stage, v, f, loc, comm_heading, comm_desc)}'
        f'</figure>'
    )
