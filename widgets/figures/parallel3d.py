"""Widget `parallel3d`: tensor × pipeline × data parallelism (seed 000, step 6).

Narayanan et al. 2021: tensor parallelism inside a node (8 GPUs), pipeline stages
across nodes, data parallelism on top, optionally with ZeRO-1 over the replicas.

The figure is the grid of GPUs: columns are data-parallel replicas (the first
`SHOWN_REPLICAS`, then an ellipsis with the count beyond), rows are pipeline stages with
their layers, each cell one tensor-parallel group of t GPUs. GPUs are numbered as
Megatron-LM does (tensor rank fastest, then data, then pipeline), so node k holds the
ranks 8k..8k+7: with TP on a cell is exactly one node; with TP off a node spans several
cells and its outline is drawn open where it continues. Preset links above the cards
carry their whole state in the URL fragment (`#parallel3d.tp_on=1&...`).
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple
from urllib.parse import quote

from calc import parallel3d, zero
from calc.data_parallel import GLOBAL_BATCH_SEQS
from calc.hardware import DEFAULT_GPU, GPUS, GPUS_PER_NODE
from calc.models import MODELS
from calc.pipeline import stage_layers

from ..framework.html import attrs, esc, num, svg, value_span
from ..framework.locale import Locale
from ..framework.spec import Range, Toggle, canonical, defaults
from ._common import MODEL, RECIPE, all_values_table, model_params, output_label, recipe_args

NAME = "parallel3d"
GPU = GPUS[DEFAULT_GPU]
TP_ON, PP_ON = 8, 4  # the seed's degrees when the switches are on
ZERO_STAGE_ON = 1  # ZeRO-1 over the data-parallel replicas
BUBBLE_LARGE = 0.1  # the sentence calls a bubble of 10% of the step or more large
MICRO_BATCH = 1  # b: one sequence per micro-batch (calc.parallel3d's default)

CONTROLS = (
    Toggle("tp_on", True),
    Toggle("pp_on", True),
    Toggle("zero_on", True),
    Range("dp", lo=1, hi=64, step=1, default=8, integer=True, display="integer"),
    MODEL,
    RECIPE,
)

OUTPUTS: dict[str, str] = {
    "gpus": "integer",
    "nodes": "integer",
    "tp": "integer",
    "pp": "integer",
    "dp": "integer",
    "model_parallel": "integer",
    "global_batch": "integer",
    "micro_batch": "integer",
    "bytes_per_param": "number",
    "state_per_gpu_bytes": "bytes",
    "fits": "yesno",
    "microbatches": "count",
    "bubble": "fraction",
    "train_time": "seconds",
    "ideal_train_time": "seconds",
    "bubble_stretch": "ratio",
    "tokens": "count",
    "gpu_memory_bytes": "bytes",
    "weights_per_gpu_bytes": "bytes",
    "grads_per_gpu_bytes": "bytes",
    "optimizer_per_gpu_bytes": "bytes",
    "gpu_flops": "flops_per_s",
}

# Preset links: (key, overrides of the defaults). Each link carries the whole state.
PRESETS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("seed", {}),  # seed 000 step 6: 8 TP × 4 PP × 8 DP with ZeRO-1
    ("dp_only", {"tp_on": False, "pp_on": False, "zero_on": False, "dp": 64}),
    ("tp_node", {"tp_on": True, "pp_on": False, "zero_on": False, "dp": 1}),
    ("large_model", {"model": "llama2-70b", "dp": 16}),
)


def degrees(state: Mapping[str, Any]) -> tuple[int, int, int]:
    """(t, p, d) of the state."""
    return (TP_ON if state["tp_on"] else 1, PP_ON if state["pp_on"] else 1, state["dp"])


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    model, params = model_params(state)
    t, p, d = degrees(state)
    stage = ZERO_STAGE_ON if state["zero_on"] else 0
    recipe = recipe_args(state)
    batch = {"global_batch": GLOBAL_BATCH_SEQS, "micro_batch": MICRO_BATCH}
    memory = parallel3d.state_per_gpu_bytes(params=params, tp=t, pp=p, dp=d, zero_stage=stage, **recipe)
    # The same state by component: each GPU holds 1/(t·p) of the model, ZeRO-sharded over d.
    parts = zero.state_per_gpu(params=params / (t * p), dp=d, zero_stage=stage, **recipe)
    return {
        "gpus": parallel3d.gpus(tp=t, pp=p, dp=d),
        "nodes": parallel3d.nodes(tp=t, pp=p, dp=d),
        "tp": t,
        "pp": p,
        "dp": d,
        "model_parallel": parallel3d.model_parallel_size(tp=t, pp=p),
        "global_batch": GLOBAL_BATCH_SEQS,
        "micro_batch": MICRO_BATCH,
        "bytes_per_param": zero.bytes_per_param(dp=d, zero_stage=stage, **recipe),
        "state_per_gpu_bytes": memory,
        "fits": 1 if memory <= GPU.memory_bytes else 0,
        "microbatches": parallel3d.microbatches_per_pipeline(dp=d, **batch),
        "bubble": parallel3d.bubble_fraction_of_time(pp=p, dp=d, **batch),
        "train_time": parallel3d.train_seconds(params=params, tokens=model.train_tokens, tp=t, pp=p, dp=d,
                                               flops_per_gpu=GPU.flops_per_s, **batch),
        "ideal_train_time": parallel3d.ideal_train_seconds(params=params, tokens=model.train_tokens, tp=t, pp=p,
                                                           dp=d, flops_per_gpu=GPU.flops_per_s),
        "bubble_stretch": parallel3d.bubble_stretch(pp=p, dp=d, **batch),
        "tokens": model.train_tokens,
        "gpu_memory_bytes": GPU.memory_bytes,
        "gpu_flops": GPU.flops_per_s,
        "weights_per_gpu_bytes": parts.weights,
        "grads_per_gpu_bytes": parts.grads,
        "optimizer_per_gpu_bytes": parts.optimizer,
    }


# -- presets ----------------------------------------------------------------------------


def preset_state(key: str) -> dict[str, Any]:
    """The full (validated-form) state of preset `key`."""
    return {**defaults(CONTROLS), **dict(PRESETS)[key]}


def fragment(state: Mapping[str, Any]) -> str:
    """The URL fragment of a state, every control listed: `#parallel3d.tp_on=1&...`."""
    pairs = canonical(CONTROLS, state)
    return "#" + "&".join(f"{NAME}.{k}={quote(v, safe='')}" for k, v in pairs.items())


def _preset_label(key: str, loc: Locale) -> str:
    state = preset_state(key)
    v = compute(state)
    return loc.t(f"{NAME}.presets.{key}", tp=loc.integer(v["tp"]), pp=loc.integer(v["pp"]),
                 dp=loc.integer(state["dp"]), gpus=loc.integer(v["gpus"]),
                 model=MODELS[state["model"]].name)


def presets_html(state: Mapping[str, Any], loc: Locale) -> str:
    """The preset links; the one equal to the current state has aria-current="true"."""
    current = canonical(CONTROLS, state)
    links = "".join(
        f"<li><a{attrs(class_='w-preset', href=fragment(preset_state(key)), aria_current='true' if canonical(CONTROLS, preset_state(key)) == current else None)}>"
        f"{esc(_preset_label(key, loc))}</a></li>"
        for key, _ in PRESETS
    )
    label = esc(loc.t(f"{NAME}.presets.label"))
    return (f'<nav class="w-presets" aria-labelledby="w-p3d-presets"><span class="w-presets-label"'
            f' id="w-p3d-presets">{label}</span><ul>{links}</ul></nav>')


# -- the grid of GPUs -------------------------------------------------------------------
# One SVG 400 units wide (text stays legible from a 375 px phone, scale ~0.85).
WIDTH = 400
SHOWN_REPLICAS = 8  # columns drawn; the rest is an ellipsis with the count beyond
LABEL_X = 2
COL_X0, COL_PITCH, BOX_W = 58, 38, 34  # columns: first x, pitch, node-box width
HEAD_H, ROW_PITCH, BOX_H = 18, 34, 26  # header height, row pitch, node-box height
SQ, SQ_GAP, SQ_COLS = 7, 1.5, 4  # a GPU square, the gap, squares per line in a cell
SQ_ALONE = 10  # the square of a cell holding one GPU (TP off)


class Segment(NamedTuple):
    """A piece of one node's outline in one row: columns first..last (inclusive);
    `open_left`/`open_right` when the node continues in the previous/next cell."""

    stage: int
    first: int
    last: int
    node: int
    open_left: bool
    open_right: bool


def _node_of(rank: int) -> int:
    return rank // GPUS_PER_NODE


def node_segments(t: int, p: int, d: int, shown: int) -> list[Segment]:
    """The node outlines of the drawn cells. Rank of GPU k of cell (stage s, replica c)
    is k + t·(c + d·s) (Megatron-LM order: tensor, data, pipeline); node = rank // 8."""
    total = t * p * d
    out: list[Segment] = []
    for s in range(p):
        c = 0
        while c < shown:
            node = _node_of(t * (c + d * s))
            last = c
            while last + 1 < shown and _node_of(t * (last + 1 + d * s)) == node:
                last += 1
            before = t * (c + d * s) - 1
            after = t * (last + 1 + d * s)
            out.append(Segment(s, c, last, node,
                               open_left=before >= 0 and _node_of(before) == node,
                               open_right=after < total and _node_of(after) == node))
            c = last + 1
    return out


def _outline(x0: float, y0: float, x1: float, y1: float, open_left: bool, open_right: bool) -> str:
    if not open_left and not open_right:
        return f'<rect class="w-p3d-node" x="{num(x0)}" y="{num(y0)}" width="{num(x1 - x0)}" height="{num(y1 - y0)}" rx="3"/>'
    if open_left and open_right:
        d = f"M{num(x0)} {num(y0)}H{num(x1)}M{num(x0)} {num(y1)}H{num(x1)}"
    elif open_right:
        d = f"M{num(x1)} {num(y0)}H{num(x0)}V{num(y1)}H{num(x1)}"
    else:
        d = f"M{num(x0)} {num(y0)}H{num(x1)}V{num(y1)}H{num(x0)}"
    return f'<path class="w-p3d-node w-p3d-open" d="{d}"/>'


def _cell_squares(t: int, cx: float, cy: float, stage: int) -> str:
    """t GPU squares centred on (cx, cy), in lines of SQ_COLS; a lone GPU drawn larger."""
    size = SQ if t > 1 else SQ_ALONE
    cols, lines = min(t, SQ_COLS), -(-t // SQ_COLS)
    w = cols * size + (cols - 1) * SQ_GAP
    h = lines * size + (lines - 1) * SQ_GAP
    return "".join(
        f'<rect class="w-c{stage % 6 + 1}" x="{num(cx - w / 2 + (k % SQ_COLS) * (size + SQ_GAP))}"'
        f' y="{num(cy - h / 2 + (k // SQ_COLS) * (size + SQ_GAP))}" width="{size}" height="{size}" rx="1"/>'
        for k in range(t)
    )


def _grid_svg(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale, title: str) -> str:
    t, p, d = int(v["tp"]), int(v["pp"]), int(state["dp"])
    shown = min(d, SHOWN_REPLICAS)
    layers = stage_layers(MODELS[state["model"]].layers, p)
    parts = []
    for c in range(shown):
        cx = COL_X0 + c * COL_PITCH + BOX_W / 2
        parts.append(f'<text class="w-fig-tick w-p3d-label" x="{num(cx)}" y="13" text-anchor="middle">'
                     f'{esc(loc.t(f"{NAME}.figure.replica", index=loc.integer(c)))}</text>')
    more_x = COL_X0 + SHOWN_REPLICAS * COL_PITCH + 2
    if d > shown:
        parts.append(f'<text class="w-fig-tick w-p3d-label" x="{num(more_x)}" y="13">'
                     f'{esc(loc.t(f"{NAME}.figure.more", count=loc.integer(d - shown)))}</text>')
    for s, (first, last) in enumerate(layers):
        top = HEAD_H + s * ROW_PITCH
        mid = top + BOX_H / 2
        parts.append(
            f'<text class="w-fig-note w-p3d-label" x="{LABEL_X}" y="{num(top + 11)}">{esc(loc.t(f"{NAME}.figure.stage", index=loc.integer(s)))}</text>'
            f'<text class="w-fig-tick w-p3d-label" x="{LABEL_X}" y="{num(top + 25)}">'
            f'{esc(loc.t(f"{NAME}.figure.layers", first=loc.integer(first), last=loc.integer(last)))}</text>')
        for c in range(shown):
            parts.append(_cell_squares(t, COL_X0 + c * COL_PITCH + BOX_W / 2, mid, s))
        if d > shown:
            parts.append(f'<text class="w-fig-value w-p3d-label" x="{num(more_x)}" y="{num(mid + 4)}">…</text>')
    pad = (COL_PITCH - BOX_W) / 2
    for seg in node_segments(t, p, d, shown):
        top = HEAD_H + seg.stage * ROW_PITCH
        x0 = COL_X0 + seg.first * COL_PITCH - (pad if seg.open_left else 0)
        x1 = COL_X0 + seg.last * COL_PITCH + BOX_W + (pad if seg.open_right else 0)
        parts.append(_outline(x0, top, x1, top + BOX_H, seg.open_left, seg.open_right))
    height = HEAD_H + p * ROW_PITCH - (ROW_PITCH - BOX_H) + 2
    desc = loc.t(f"{NAME}.figure.desc", pp=loc.integer(p), dp=loc.integer(d), shown=loc.integer(shown),
                 tp=loc.integer(t), nodes=loc.integer(v["nodes"]), per_node=loc.integer(GPUS_PER_NODE))
    return svg("w-p3d-grid", WIDTH, int(height), "".join(parts), title, desc)


def _memory_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str) -> str:
    """One GPU's state by component against its memory (the whole bar is the larger)."""
    scale = WIDTH / max(v["state_per_gpu_bytes"], v["gpu_memory_bytes"])
    parts, x = [], 0.0
    for key, cls in (("weights_per_gpu_bytes", "w-c1"), ("grads_per_gpu_bytes", "w-c2"), ("optimizer_per_gpu_bytes", "w-c3")):
        width = v[key] * scale
        parts.append(f'<rect class="{cls}" x="{num(x)}" y="2" width="{num(width)}" height="16"/>')
        x += width
    limit = v["gpu_memory_bytes"] * scale
    parts.append(f'<rect class="w-grid-box" x="0" y="2" width="{num(limit)}" height="16" fill="none"/>'
                 f'<line class="w-limit" x1="{num(limit)}" y1="0" x2="{num(limit)}" y2="20"/>'
                 f'<text class="w-fig-note w-p3d-label" x="{num(limit)}" y="34" text-anchor="end">'
                 f'{esc(loc.t(f"{NAME}.figure.gpu_line", memory=f["gpu_memory_bytes"]))}</text>'
                 f'<text class="w-fig-value w-p3d-label" x="0" y="34">{esc(f["state_per_gpu_bytes"])}</text>')
    desc = loc.t(f"{NAME}.figure.memory_desc", weights=f["weights_per_gpu_bytes"], grads=f["grads_per_gpu_bytes"],
                 optimizer=f["optimizer_per_gpu_bytes"], state=f["state_per_gpu_bytes"], gpu=f["gpu_memory_bytes"])
    return svg("w-p3d-memory", WIDTH, 38, "".join(parts), title, desc)


def _bubble_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str) -> str:
    """One step of a pipeline: the busy part and the bubble, as one bar."""
    busy_w = WIDTH * (1 - v["bubble"])
    parts = [f'<rect class="w-c3" x="0" y="2" width="{num(busy_w)}" height="16"/>',
             f'<text class="w-fig-note w-p3d-label" x="0" y="34">{esc(loc.t(f"{NAME}.figure.busy"))}</text>']
    if v["pp"] > 1:
        large = " w-p3d-large" if v["bubble"] >= BUBBLE_LARGE else ""
        parts.append(f'<rect class="w-p3d-idle{large}" x="{num(busy_w)}" y="2" width="{num(WIDTH - busy_w)}" height="16"/>'
                     f'<text class="w-fig-value w-p3d-label" x="{WIDTH}" y="34" text-anchor="end">'
                     f'{esc(loc.t(f"{NAME}.figure.idle", bubble=f["bubble"]))}</text>')
    desc = loc.t(f"{NAME}.figure.bubble_desc", bubble=f["bubble"], microbatches=f["microbatches"],
                 pp=f["pp"]) if v["pp"] > 1 else title
    return svg("w-p3d-bubble", WIDTH, 38, "".join(parts), title, desc)


def figure(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    t, d = int(v["tp"]), state["dp"]
    per_node = loc.integer(GPUS_PER_NODE)
    heading = loc.t(f"{NAME}.figure.heading", tp=f["tp"], pp=f["pp"], dp=loc.integer(d),
                    gpus=f["gpus"], nodes=f["nodes"])
    note_key = "grid_note_tp" if t > 1 else "grid_note_no_tp"
    note = loc.t(f"{NAME}.figure.{note_key}", tp=f["tp"], per_node=per_node)
    legend = (f'<li><span class="w-swatch w-c1"></span>{esc(loc.t(f"{NAME}.figure.gpu"))}</li>'
              f'<li><span class="w-swatch w-p3d-node-swatch"></span>{esc(loc.t(f"{NAME}.figure.node", per_node=per_node))}</li>')
    if v["pp"] > 1:
        bubble_heading = loc.t(f"{NAME}.figure.bubble_heading", microbatches=f["microbatches"], bubble=f["bubble"])
    else:
        bubble_heading = loc.t(f"{NAME}.figure.bubble_heading_none", microbatches=f["microbatches"])
    memory_heading = loc.t(f"{NAME}.figure.memory_heading", state=f["state_per_gpu_bytes"], gpu=f["gpu_memory_bytes"])
    memory_legend = "".join(
        f'<li><span class="w-swatch {cls}"></span>{esc(loc.t(f"{NAME}.figure.{label}", value=f[key]))}</li>'
        for key, cls, label in (("weights_per_gpu_bytes", "w-c1", "weights"), ("grads_per_gpu_bytes", "w-c2", "grads"),
                                ("optimizer_per_gpu_bytes", "w-c3", "optimizer")))
    return (
        f'<figure class="w-fig w-p3d-fig">'
        f'<figcaption class="w-fig-heading">{esc(heading)}</figcaption>'
        f'<p class="w-p3d-note">{esc(note)}</p>'
        f'{_grid_svg(state, v, loc, heading)}'
        f'<ul class="w-legend">{legend}</ul>'
        f'<p class="w-fig-heading">{esc(memory_heading)}</p>'
        f'{_memory_svg(v, f, loc, memory_heading)}<ul class="w-legend">{memory_legend}</ul>'
        f'<p class="w-fig-heading">{esc(bubble_heading)}</p>'
        f'{_bubble_svg(v, f, loc, bubble_heading)}'
        f'<p class="w-p3d-note">{esc(loc.t(f"{NAME}.figure.note", gpu_flops=f["gpu_flops"]))}</p>'
        f'</figure>'
    )


# -- cards, sentence, render ------------------------------------------------------------


def _cards(v: Mapping[str, float], loc: Locale) -> str:
    """Stat cards; the first shows GPUs with nodes in brackets, like the seed."""
    def card(label: str, body: str, cls: str = "") -> str:
        return f'<div class="w-stat{cls}"><dt>{esc(label)}</dt><dd>{body}</dd></div>'

    gpus = (f'{value_span("gpus", v["gpus"], "integer", loc)} '
            f'<span class="w-p3d-sub">({value_span("nodes", v["nodes"], "integer", loc)})</span>')
    items = [
        card(loc.t(f"{NAME}.cards.gpus_nodes"), gpus),
        card(output_label(NAME, "state_per_gpu_bytes", loc),
             value_span("state_per_gpu_bytes", v["state_per_gpu_bytes"], "bytes", loc),
             "" if v["fits"] else " w-p3d-over"),
        card(output_label(NAME, "bubble", loc), value_span("bubble", v["bubble"], "fraction", loc)),
        card(output_label(NAME, "train_time", loc), value_span("train_time", v["train_time"], "seconds", loc)),
    ]
    return f'<dl class="w-stats">{"".join(items)}</dl>'


def sentence_keys(v: Mapping[str, float]) -> tuple[str, str, str]:
    """The i18n keys of the sentence's three parts (memory, pipeline, time): no TP and
    no PP, or the state does not fit, or the bubble is large, each reads differently."""
    plain = "plain_" if v["tp"] == 1 and v["pp"] == 1 else ""
    fits = "fits" if v["fits"] else "over"
    if v["pp"] == 1:
        pipeline = "pipeline_none"
    elif v["bubble"] >= BUBBLE_LARGE:
        pipeline = "pipeline_large"
    else:
        pipeline = "pipeline_small"
    return f"memory_{plain}{fits}", pipeline, f"time_{fits}"


def sentence(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    """The sentence stating the current numbers (HTML-escaped)."""
    p = {**f, "dp": loc.integer(state["dp"]), "model": MODELS[state["model"]].name}
    memory, pipeline, time = (loc.t(f"{NAME}.sentence.{key}", **p) for key in sentence_keys(v))
    return loc.h(f"{NAME}.sentence.joined", memory=memory, pipeline=pipeline, time=time)


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    return (f'{presets_html(state, loc)}{_cards(v, loc)}{figure(state, v, f, loc)}'
            f'<p class="w-sentence">{sentence(state, v, f, loc)}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')
