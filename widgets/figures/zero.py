"""Widget `zero`: ZeRO sharding over N data-parallel GPUs (seed 000, step 3).

Stage 1 shards the optimizer state, stage 2 also the gradients, stage 3 also the
weights (Rajbhandari et al. 2019); stage 0 is plain data parallelism. The `offload`
control moves the optimizer (ZeRO-Offload) or, with ZeRO-3, every model state
(ZeRO-Infinity to CPU) off the GPU, and the widget prints what DeepSpeed's own
estimator says for the same run (`calc.offload`). An offload DeepSpeed does not accept
with the chosen stage is not applied, and the widget says so, as DeepSpeed's
configuration rules have it.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc import offload, zero
from calc.hardware import get_machine

from ..framework.html import bar_end_label, esc, line_label, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, Range
from ._common import MACHINE, MODEL, RECIPE, all_values_table, model_params, output_label, recipe_args

NAME = "zero"
# The machine gives the GPU's memory and its PCIe link to the CPU (offload): by default
# the seed's 80 GB GPU on PCIe 5.0 x16, as on H100-class servers.

CONTROLS = (
    Range("gpus", lo=1, hi=64, step=1, default=8, integer=True, display="integer"),
    Choice("stage", ("0", "1", "2", "3"), "1", radio=True),
    Choice("offload", offload.OFFLOADS, "none", radio=True),
    MODEL,
    RECIPE,
    MACHINE,
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
    "offload_applied": "yesno",
    "gpu_state_bytes": "bytes",
    "cpu_state_bytes": "bytes",
    "cpu_node_bytes": "bytes",
    "pcie_bytes": "bytes",
    "pcie_time": "seconds",
    "pcie_bytes_per_s": "bytes_per_s",
    "ds_gpu_gib": "number",
    "ds_cpu_gib": "number",
    "book_gpu_gib": "number",
    "book_cpu_node_gib": "number",
    "largest_layer_params": "count",
    "gpus_per_node": "integer",
    "nodes": "integer",
    "bytes_per_param": "number",
    "paper_params": "count",
    "paper_state_per_gpu_bytes": "bytes",
}


def applied_offload(offload_choice: str, stage: int) -> str:
    """What DeepSpeed would do with the choice: stage 0 offloads nothing, ZeRO-1/2 ignore
    the parameter offload (docs/_pages/config-json.md: offload_param "Available only with
    ZeRO stage 3")."""
    if offload.offload_available(offload_choice, stage):
        return offload_choice
    return "optimizer" if stage in (1, 2) else "none"


def deepspeed_rows(stage: int, params: int, layer: int, per_node: int, nodes: int) -> tuple[offload.EstimateRow, ...]:
    """DeepSpeed's printed table for the stage (ZeRO-1 and -2 share one); empty for stage 0."""
    if stage == 3:
        return offload.zero3_table(params=params, largest_layer_params=layer, gpus_per_node=per_node, nodes=nodes)
    if stage in (1, 2):
        return offload.zero2_table(params=params, gpus_per_node=per_node, nodes=nodes)
    return ()


def deepspeed_row_index(stage: int, applied: str) -> int:
    """The printed row of the run (ZeRO-3 with zero_init=1, as Hugging Face builds it)."""
    if stage == 3:
        return {"optimizer_params": 0, "optimizer": 2, "none": 4}[applied]
    return 0 if applied == "optimizer" else 1


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    model, params = model_params(state)
    machine = get_machine(state["machine"])
    memory, pcie_bytes_per_s = machine.gpu.memory_bytes, machine.pcie_bytes_per_s
    n, stage = state["gpus"], int(state["stage"])
    applied = applied_offload(state["offload"], stage)
    recipe = recipe_args(state)
    placed = offload.offload_state_per_gpu(params=params, dp=n, zero_stage=stage, offload=applied, **recipe)
    pcie = offload.pcie_bytes_per_gpu(params=params, dp=n, zero_stage=stage, offload=applied,
                                      grad_bytes=recipe["grad_bytes"])
    per_node, nodes = offload.deepspeed_layout(n)
    layer = offload.largest_layer_params(model)
    rows = deepspeed_rows(stage, params, layer, per_node, nodes)
    ds = rows[deepspeed_row_index(stage, applied)].estimate if rows else offload.Estimate(0, 0)
    parts = zero.state_per_gpu(params=params, dp=n, zero_stage=stage, **recipe)
    whole = zero.state_per_gpu(params=params, dp=1, zero_stage=0, **recipe)  # before any sharding
    return {
        "state_per_gpu_bytes": parts.total,
        "reduction": zero.reduction(dp=n, zero_stage=stage, **recipe),
        "sent_per_gpu_bytes": zero.sent_per_gpu_bytes(params=params, dp=n, zero_stage=stage),
        "fits": 1 if placed.gpu_bytes <= memory else 0,
        "weights_per_gpu_bytes": parts.weights,
        "grads_per_gpu_bytes": parts.grads,
        "optimizer_per_gpu_bytes": parts.optimizer,
        "comm_over_dp": zero.comm_over_dp(stage),
        "gpu_memory_bytes": memory,
        "weights_bytes": whole.weights,
        "grads_bytes": whole.grads,
        "optimizer_bytes": whole.optimizer,
        "dp_state_per_gpu_bytes": zero.state_per_gpu_bytes(params=params, dp=n, zero_stage=0, **recipe),
        "dp_sent_per_gpu_bytes": zero.sent_per_gpu_bytes(params=params, dp=n, zero_stage=0),
        "offload_applied": 1 if applied == state["offload"] else 0,
        "gpu_state_bytes": placed.gpu_bytes,
        "cpu_state_bytes": placed.cpu_bytes,
        "cpu_node_bytes": placed.cpu_bytes * per_node,
        "pcie_bytes": pcie,
        "pcie_time": pcie / pcie_bytes_per_s,
        "pcie_bytes_per_s": pcie_bytes_per_s,
        "ds_gpu_gib": ds.gpu_gib,
        "ds_cpu_gib": ds.cpu_gib,
        "book_gpu_gib": offload.gib(placed.gpu_bytes),
        "book_cpu_node_gib": offload.gib(placed.cpu_bytes * per_node),
        "largest_layer_params": layer,
        "gpus_per_node": per_node,
        "nodes": nodes,
        "bytes_per_param": zero.bytes_per_param(dp=n, zero_stage=stage, **recipe),
        "paper_params": zero.FIGURE1_PARAMS,
        "paper_state_per_gpu_bytes": zero.state_per_gpu_bytes(params=zero.FIGURE1_PARAMS, dp=n, zero_stage=stage,
                                                              **recipe),
    }


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """The output region: stat cards, the figure, the sentence, where an offload puts the
    state, DeepSpeed's estimate, the table of values."""
    n, stage = state["gpus"], int(state["stage"])
    applied = applied_offload(state["offload"], stage)
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    shown = ("state_per_gpu_bytes", "reduction", "sent_per_gpu_bytes", "fits") if applied == "none" else \
        ("gpu_state_bytes", "cpu_state_bytes", "pcie_bytes", "fits")
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in shown], loc)
    if v["fits"]:
        fit_key = "zero.fit_yes"
    else:
        fit_key = "zero.fit_no_more_gpus" if stage == 3 or n == 1 else "zero.fit_no"
    fit = loc.t(fit_key, gpu=f["gpu_memory_bytes"])
    key = "zero.sentence_single" if n == 1 else f"zero.sentence_stage{stage}"
    sentence = loc.h(key, gpus=loc.integer(n), state=f["state_per_gpu_bytes"], reduction=f["reduction"],
                     sent=f["sent_per_gpu_bytes"], comm=f["comm_over_dp"], weights=f["weights_per_gpu_bytes"],
                     grads=f["grads_per_gpu_bytes"], optimizer=f["optimizer_bytes"],
                     fit=fit if applied == "none" else "").rstrip()
    return (f'{cards}{figure(n, stage, applied, v, f, loc)}<p class="w-sentence">{sentence}</p>'
            f'{_offload_text(state["offload"], stage, applied, v, f, fit, loc)}{_deepspeed(stage, applied, state, v, f, loc)}'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


def _offload_text(chosen: str, stage: int, applied: str, v: Mapping[str, float], f: Mapping[str, str], fit: str,
                  loc: Locale) -> str:
    """What the offload moved, what it costs in PCIe traffic, and why a choice was not applied."""
    parts = []
    if chosen != applied:
        note = "zero.offload.note_stage0" if stage == 0 else "zero.offload.note_params"
        parts.append(f'<p class="w-sentence w-zero-note" role="note">{loc.h(note, stage=loc.integer(stage))}</p>')
    if applied != "none":
        parts.append('<p class="w-sentence w-zero-offload">' + loc.h(
            f"zero.offload.sentence_{applied}", gpu=f["gpu_state_bytes"], cpu=f["cpu_state_bytes"],
            cpu_node=f["cpu_node_bytes"], per_node=f["gpus_per_node"], pcie=f["pcie_bytes"],
            pcie_time=f["pcie_time"], pcie_bw=f["pcie_bytes_per_s"], fit=fit) + "</p>")
    return "".join(parts)


def _deepspeed(stage: int, applied: str, state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str],
               loc: Locale) -> str:
    """DeepSpeed's printed estimate for this run, the run's row marked, and why it differs."""
    heading = f'<figcaption class="w-fig-heading">{esc(loc.t("zero.ds.heading"))}</figcaption>'
    if stage == 0:
        return f'<figure class="w-fig w-zero-ds">{heading}<p class="w-sentence">{loc.h("zero.ds.stage0")}</p></figure>'
    model, params = model_params(state)
    per_node, nodes = int(v["gpus_per_node"]), int(v["nodes"])
    rows = deepspeed_rows(stage, params, int(v["largest_layer_params"]), per_node, nodes)
    current = deepspeed_row_index(stage, applied)
    # DeepSpeed's own printout (the *_all_cold functions), verbatim: program output, not prose.
    nodes_str, gpus_str = ("nodes" if nodes > 1 else "node"), ("GPUs" if per_node > 1 else "GPU")
    sw = f"SW: Model with {int(params / 1e6)}M total params"
    if stage == 3:
        sw += f", {int(v['largest_layer_params'] / 1e6)}M largest layer params"
    lines = ["Estimated memory needed for params, optim states and gradients for a:",
             f"HW: Setup with {nodes} {nodes_str}, {per_node} {gpus_str} per node.", sw + ".",
             "  per CPU  |  per GPU |   Options"]
    body = "\n".join(esc(line) for line in lines)
    for i, row in enumerate(rows):
        text = esc(row.printed().rstrip())
        body += "\n" + (f"<mark>{text}</mark>" if i == current else text)
    caption = loc.h("zero.ds.caption", which="3" if stage == 3 else "2", per_node=loc.integer(per_node),
                    nodes=loc.integer(nodes))
    why = loc.t(f"zero.ds.why_{'3' if stage == 3 else '12'}_{applied}", layer=f["largest_layer_params"],
                per_node=loc.integer(per_node), factor=loc.number(offload.ADDITIONAL_BUFFER_FACTOR))
    compare = loc.h("zero.ds.compare", ds_gpu=f["ds_gpu_gib"], ds_cpu=f["ds_cpu_gib"], book_gpu=f["book_gpu_gib"],
                    book_cpu=f["book_cpu_node_gib"], why=why)
    # A wide printout scrolls sideways on a phone: focusable, so a keyboard can scroll it.
    label = esc(loc.t("zero.ds.heading"))
    return (f'<figure class="w-fig w-zero-ds">{heading}<pre><code tabindex="0" aria-label="{label}">{body}</code></pre>'
            f'<p class="w-sentence">{caption}</p><p class="w-sentence">{compare}</p></figure>')


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
    parts = _bar_rows(rows, label_x=label_x, bar_x=bar_x, scale=scale, top=2, pitch=24)
    return svg("w-zero-comm", WIDTH, 4 + len(rows) * 24, "".join(parts), title, desc)


def _bar_rows(rows: list[tuple[str, str, float, str]], *, label_x: float, bar_x: float, scale: float,
              top: float, pitch: float) -> list[str]:
    """Horizontal bars, one a row: the label left of the bar, the value inside a long bar
    or just past a short one."""
    parts = []
    for i, (label, cls, value, text) in enumerate(rows):
        y = top + i * pitch
        end = bar_x + value * scale
        inside = end - bar_x > 150
        parts.append(f'<text class="w-fig-note" x="{num(label_x)}" y="{y + 13}" text-anchor="end">{esc(label)}</text>'
                     f'<rect class="{cls}" x="{num(bar_x)}" y="{y}" width="{num(max(value * scale, 0.0))}" height="18"/>'
                     f'<text class="w-fig-value{" w-on-bar" if inside else ""}" x="{num(end - 5 if inside else end + 5)}"'
                     f' y="{y + 13}" text-anchor="{"end" if inside else "start"}">{esc(text)}</text>')
    return parts


def _offload_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """Where one GPU's share of the state lives: its own memory (against the memory line)
    and the CPU's memory."""
    label_x, bar_x, bar_end = 40.0, 46.0, 392.0
    hi = max(v["gpu_state_bytes"], v["cpu_state_bytes"], v["gpu_memory_bytes"]) * 1.02
    scale = (bar_end - bar_x) / hi
    rows = [(loc.t("zero.figure.gpu_row"), "w-c1", v["gpu_state_bytes"], f["gpu_state_bytes"]),
            (loc.t("zero.figure.cpu_row"), "w-c3", v["cpu_state_bytes"], f["cpu_state_bytes"])]
    parts = _bar_rows(rows, label_x=label_x, bar_x=bar_x, scale=scale, top=4, pitch=26)
    gpu_x = bar_x + v["gpu_memory_bytes"] * scale
    parts.append(f'<line class="w-limit" x1="{num(gpu_x)}" y1="0" x2="{num(gpu_x)}" y2="26"/>')
    parts.append(line_label(gpu_x, 68, esc(loc.t("zero.figure.gpu_line", memory=f["gpu_memory_bytes"])), WIDTH))
    return svg("w-zero-offload", WIDTH, 72, "".join(parts), title, desc)


def figure(n: int, stage: int, applied: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
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
    if applied == "none":
        memory = f'<p class="w-fig-heading">{esc(mem_heading)}</p>{_memory_svg(v, f, loc, mem_heading, mem_desc)}'
    else:
        off_heading = loc.t("zero.figure.offload", gpu=f["gpu_memory_bytes"])
        off_desc = loc.t("zero.figure.offload_desc", gpu=f["gpu_state_bytes"], cpu=f["cpu_state_bytes"],
                         memory=f["gpu_memory_bytes"])
        memory = f'<p class="w-fig-heading">{esc(off_heading)}</p>{_offload_svg(v, f, loc, off_heading, off_desc)}'
    comm_heading = loc.t("zero.figure.comm")
    comm_desc = loc.t("zero.figure.comm_desc", sent=f["sent_per_gpu_bytes"], baseline=f["dp_sent_per_gpu_bytes"],
                      comm=f["comm_over_dp"])
    return (
        f'<figure class="w-fig w-zero-fig">'
        f'<figcaption class="w-fig-heading">{esc(map_heading)}</figcaption>'
        f'{_ownership_svg(n, v, f, loc, map_heading, map_desc)}'
        f'<ul class="w-legend">{"".join(legend)}</ul>'
        f'{memory}'
        f'<p class="w-fig-heading">{esc(comm_heading)}</p>{_comm_svg(stage, v, f, loc, comm_heading, comm_desc)}'
        f'</figure>'
    )
