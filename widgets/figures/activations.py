"""Widget `activations`: activation memory per layer and per GPU, and whether it fits.

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models": Table 2 gives the bytes one transformer layer stores for the backward pass
under tensor parallelism (t), sequence parallelism and selective or full
recomputation; with 1F1B the first pipeline stage holds L layers' worth of them
whatever p is (Sec. 4.2.3). On top comes the training state, 16Ψ/(t·p) bytes per GPU
(mixed-precision Adam, no ZeRO), and the total is set against the GPU's 80 GB.

The figure draws every row of Table 2 for the current s, b, h, a, t as the first
stage's activations on a log scale with the GPU's memory marked (the current row
highlighted), then one GPU's memory as a stacked bar: state, stored activations and,
with full recomputation, the one layer rebuilt during the backward pass.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc import activations as act
from calc.hardware import DEFAULT_GPU, GPUS
from calc.parallel3d import state_per_gpu_bytes

from ..framework.html import bar_end_label, esc, line_label, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, NumberChoice, Range, Toggle
from ._common import MODEL, all_values_table, model_params, output_label

NAME = "activations"
GPU = GPUS[DEFAULT_GPU]
SEQ_LENS = ("512", "1024", "2048", "4096", "8192", "16384", "32768")
DEGREES = ("1", "2", "4", "8")

CONTROLS = (
    NumberChoice("seq_len", SEQ_LENS, "4096"),
    Range("micro_batch", lo=1, hi=16, step=1, default=1, integer=True, display="integer"),
    NumberChoice("tp", DEGREES, "1", radio=True, labels={d: d for d in DEGREES}),
    NumberChoice("pp", DEGREES, "1", radio=True, labels={d: d for d in DEGREES}),
    Toggle("sp", False),
    Choice("recompute", act.RECOMPUTE_MODES, "none", radio=True),
    MODEL,
)

OUTPUTS: dict[str, str] = {
    "per_layer_bytes": "bytes",
    "activation_bytes": "bytes",
    "state_per_gpu_bytes": "bytes",
    "total_per_gpu_bytes": "bytes",
    "gpu_memory_bytes": "bytes",
    "fits": "yesno",
    "stored_activation_bytes": "bytes",
    "rematerialized_bytes": "bytes",
    "baseline_per_layer_bytes": "bytes",
    "reduction": "ratio",
    "attention_share": "fraction",
    "score_factor": "number",
    # Each byte count over sbh: the coefficient a worked solution writes, 34 + 5as/h and so on.
    "per_layer_factor": "number",
    "baseline_factor": "number",
    "stored_factor": "number",
    "rematerialized_factor": "number",
    "sbh": "count",
    "recompute_overhead": "fraction",
    "selective_overhead_eq8": "fraction",
    "seq_len": "integer",
    "micro_batch": "integer",
    "hidden": "integer",
    "heads": "integer",
    "kv_heads": "integer",
    "layers": "integer",
    "layers_per_stage": "integer",
}

# The rows of Table 2, in the paper's order: (key, recompute, sequence parallel, t = 1).
ROWS = (
    ("plain", "none", False, True),
    ("tp", "none", False, False),
    ("tp_sp", "none", True, False),
    ("selective", "selective", False, False),
    ("selective_sp", "selective", True, False),
    ("full", "full", False, False),
)


def _shape(state: Mapping[str, Any]) -> dict[str, int]:
    """calc's arguments for the current model and controls: s, b, h, a."""
    model, _ = model_params(state)
    return dict(seq_len=int(state["seq_len"]), micro_batch=int(state["micro_batch"]),
                hidden=model.hidden, heads=model.heads)


def current_row(state: Mapping[str, Any]) -> str:
    """The row of Table 2 the controls select (with t = 1, 'tensor parallel' is plain)."""
    t, sp, mode = int(state["tp"]), bool(state["sp"]), state["recompute"]
    if mode == "full":
        return "full"
    if mode == "selective":
        return "selective_sp" if sp and t > 1 else "selective"
    if t == 1:
        return "plain"
    return "tp_sp" if sp else "tp"


def row_bytes(state: Mapping[str, Any]) -> dict[str, float]:
    """Each row of Table 2 as the first stage's peak activations (L layers' worth, plus
    the layer rebuilt by full recomputation), for the current s, b, h, a and t."""
    model, _ = model_params(state)
    shape, t = _shape(state), int(state["tp"])
    sp_now = bool(state["sp"])
    out = {}
    for key, mode, sp, plain in ROWS:
        if key == "full":  # Table 2's sbh(2) holds for any t; the rebuilt layer follows the controls
            out[key] = act.peak_activation_bytes(**shape, layers=model.layers, tp=t,
                                                 sequence_parallel=sp_now, recompute=mode)
        else:
            out[key] = act.peak_activation_bytes(**shape, layers=model.layers, tp=1 if plain else t,
                                                 sequence_parallel=sp, recompute=mode)
    return out


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    model, params = model_params(state)
    shape = _shape(state)
    t, p = int(state["tp"]), int(state["pp"])
    split = dict(tp=t, sequence_parallel=bool(state["sp"]), recompute=state["recompute"])
    per_layer = act.activation_bytes_per_layer(**shape, **split)
    baseline = act.activation_bytes_per_layer(**shape)
    stored = act.activation_bytes(**shape, layers=model.layers, **split)
    rebuilt = act.rematerialized_bytes(**shape, **split)
    peak = act.peak_activation_bytes(**shape, layers=model.layers, **split)
    state_bytes = state_per_gpu_bytes(params=params, tp=t, pp=p, dp=1)
    no_recompute = act.activation_bytes_per_layer(**shape, tp=t, sequence_parallel=bool(state["sp"]))
    scores = act.attention_score_bytes_per_layer(**shape, tp=t)
    flops_shape = dict(layers=model.layers, hidden=model.hidden, vocab=model.vocab, seq_len=shape["seq_len"])
    sbh = float(shape["seq_len"]) * shape["micro_batch"] * model.hidden
    coeff_shape = dict(hidden=model.hidden, heads=model.heads, seq_len=shape["seq_len"])
    return {
        "per_layer_bytes": per_layer,
        "activation_bytes": peak,
        "state_per_gpu_bytes": state_bytes,
        "total_per_gpu_bytes": state_bytes + peak,
        "gpu_memory_bytes": GPU.memory_bytes,
        "fits": 1 if state_bytes + peak <= GPU.memory_bytes else 0,
        "stored_activation_bytes": stored,
        "rematerialized_bytes": rebuilt,
        "baseline_per_layer_bytes": baseline,
        "reduction": baseline / per_layer,
        "attention_share": scores / no_recompute,
        "score_factor": act.attention_score_factor(hidden=model.hidden, heads=model.heads, seq_len=shape["seq_len"]),
        "per_layer_factor": act.sbh_coefficient(**coeff_shape, **split),
        "baseline_factor": act.sbh_coefficient(**coeff_shape),
        "stored_factor": stored / sbh,
        "rematerialized_factor": (act.sbh_coefficient(**coeff_shape, tp=t, sequence_parallel=bool(state["sp"]))
                                  if state["recompute"] == "full" else 0.0),
        "sbh": sbh,
        "recompute_overhead": act.recompute_overhead(**flops_shape, recompute=state["recompute"]),
        "selective_overhead_eq8": act.selective_overhead_eq8(**flops_shape),
        "seq_len": shape["seq_len"],
        "micro_batch": shape["micro_batch"],
        "hidden": model.hidden,
        "heads": model.heads,
        "kv_heads": model.kv_heads,
        "layers": model.layers,
        "layers_per_stage": model.layers // p,
    }


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """Stat cards, the Table 2 bars and the memory bar, the sentence, the table of values."""
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("per_layer_bytes", "activation_bytes", "total_per_gpu_bytes", "fits")], loc)
    return (f'{cards}{figure(state, v, f, loc)}<p class="w-sentence">{_sentence(state, v, f, loc)}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


def _sentence(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    t, p, mode = int(state["tp"]), int(state["pp"]), state["recompute"]
    row = current_row(state)
    fit = loc.t("activations.fit_yes" if v["fits"] else "activations.fit_no", gpu=f["gpu_memory_bytes"])
    common = dict(row=loc.t(f"activations.rows_long.{row}", t=loc.integer(t)), per_layer=f["per_layer_bytes"],
                  baseline=f["baseline_per_layer_bytes"], reduction=f["reduction"], layers=f["layers"],
                  act=f["activation_bytes"], state=f["state_per_gpu_bytes"], total=f["total_per_gpu_bytes"],
                  t=loc.integer(t), p=loc.integer(p), fit=fit, share=f["attention_share"],
                  overhead=f["recompute_overhead"], stored=f["stored_activation_bytes"],
                  rebuilt=f["rematerialized_bytes"])
    first = loc.t("activations.sentence_plain" if row == "plain" else "activations.sentence_layer", **common)
    tail = loc.t(f"activations.sentence_{mode}", **common)
    if state["sp"] and t == 1:
        tail = loc.t("activations.sentence_join", first=tail, second=loc.t("activations.sp_no_effect"))
    return loc.h("activations.sentence_join", first=first, second=tail)


# -- the figure -------------------------------------------------------------------------
# SVGs 400 units wide (legible on a 375 px phone); headings, legends and notes are HTML.
WIDTH = 400
LABEL_END, BAR_X, BAR_END, VALUE_X = 114.0, 118.0, 318.0, 323.0
ROW_PITCH, ROW_H, TOP = 20.0, 13.0, 16.0


def _log_axis(values: list[float]) -> tuple[int, int]:
    """Whole decades of bytes that hold every value (and the GPU's memory)."""
    lo = math.floor(math.log10(min(values)))
    hi = math.ceil(math.log10(max(values)) - 1e-9)
    return lo, max(hi, lo + 1)


def _rows_svg(rows: Mapping[str, float], current: str, v: Mapping[str, float], f: Mapping[str, str],
              loc: Locale, title: str, desc: str) -> str:
    """One bar per row of Table 2 on a log scale; the GPU's memory as a red line."""
    lo, hi = _log_axis([*rows.values(), v["gpu_memory_bytes"]])

    def x_of(value: float) -> float:
        return BAR_X + (BAR_END - BAR_X) * (math.log10(value) - lo) / (hi - lo)

    bottom = TOP + len(ROWS) * ROW_PITCH
    parts = []
    every = 1 if hi - lo <= 4 else 2  # tick labels need ~40 units each
    for e in range(lo, hi + 1):
        x = x_of(10.0 ** e)
        parts.append(f'<line class="w-grid" x1="{num(x)}" y1="{num(TOP - 3)}" x2="{num(x)}" y2="{num(bottom)}"/>')
        if (e - lo) % every == 0:
            parts.append(f'<text class="w-fig-tick" x="{num(x)}" y="{num(bottom + 12)}" text-anchor="middle">'
                         f'{esc(loc.bytes(10.0 ** e))}</text>')
    for i, (key, *_rest) in enumerate(ROWS):
        y = TOP + i * ROW_PITCH
        cur = key == current
        label_cls = "w-fig-note w-act-cur" if cur else "w-fig-note"
        bar_cls = "w-c2" if cur else "w-c2 w-act-dim"
        end = x_of(rows[key])
        parts.append(f'<text class="{label_cls}" x="{num(LABEL_END)}" y="{num(y + 10.5)}" text-anchor="end">'
                     f'{esc(loc.t(f"activations.rows.{key}"))}</text>'
                     f'<rect class="{bar_cls}" x="{num(BAR_X)}" y="{num(y)}" width="{num(max(end - BAR_X, 1))}" height="{num(ROW_H)}"/>'
                     f'<text class="w-fig-value{"" if cur else " w-act-dimtext"}" x="{num(VALUE_X)}" y="{num(y + 10.5)}">'
                     f'{esc(loc.bytes(rows[key]))}</text>')
        if cur:
            parts.append(f'<rect class="w-act-frame" x="{num(BAR_X - 2)}" y="{num(y - 2)}" '
                         f'width="{num(WIDTH - BAR_X)}" height="{num(ROW_H + 4)}"/>')
    gpu_x = x_of(v["gpu_memory_bytes"])
    gpu_label = esc(loc.t("activations.figure.gpu_line", memory=f["gpu_memory_bytes"]))
    parts.append(f'<line class="w-limit" x1="{num(gpu_x)}" y1="{num(TOP - 5)}" x2="{num(gpu_x)}" y2="{num(bottom)}"/>'
                 f'<text class="w-fig-note w-act-gpu" x="{num(gpu_x)}" y="{num(TOP - 7)}" text-anchor="middle">{gpu_label}</text>')
    return svg("w-act-rows", WIDTH, math.ceil(bottom + 16), "".join(parts), title, desc)


SEGMENTS = (("state_per_gpu_bytes", "w-c1", "state"), ("stored_activation_bytes", "w-c2", "stored"),
            ("rematerialized_bytes", "w-c4", "rebuilt"))


def _memory_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """One GPU: state + stored activations (+ the rebuilt layer) against its memory."""
    left, span = 4.0, 392.0
    scale = span / (max(v["total_per_gpu_bytes"], v["gpu_memory_bytes"]) * 1.02)
    top, bar_h = 18.0, 26.0
    parts, x = [], left
    for key, cls, _ in SEGMENTS:
        width = v[key] * scale
        if width > 0:
            parts.append(f'<rect class="{cls}" x="{num(x)}" y="{num(top)}" width="{num(width)}" height="{num(bar_h)}"/>')
        x += width
    gpu_x = left + v["gpu_memory_bytes"] * scale
    if v["total_per_gpu_bytes"] > v["gpu_memory_bytes"]:
        parts.append(f'<rect class="w-over" x="{num(gpu_x)}" y="{num(top - 2)}" width="{num(x - gpu_x)}" height="{num(bar_h + 4)}"/>')
    parts.append(f'<line class="w-limit" x1="{num(gpu_x)}" y1="{num(top - 6)}" x2="{num(gpu_x)}" y2="{num(top + bar_h + 6)}"/>')
    total = esc(loc.t("activations.figure.total_fits" if v["fits"] else "activations.figure.total_over",
                      total=f["total_per_gpu_bytes"]))
    parts.append(bar_end_label(x, left, 12, total, 200))
    gpu_label = esc(loc.t("activations.figure.gpu_line", memory=f["gpu_memory_bytes"]))
    label_y = top + bar_h + 16
    parts.append(line_label(gpu_x, label_y, gpu_label, WIDTH))
    return svg("w-act-mem", WIDTH, math.ceil(label_y + 4), "".join(parts), title, desc)


def figure(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    model, _ = model_params(state)
    t, p = int(state["tp"]), int(state["pp"])
    L = lambda key, **kw: loc.t(f"activations.figure.{key}", **kw)  # noqa: E731
    rows = row_bytes(state)
    current = current_row(state)
    config = L("config", model=model.name, h=f["hidden"], a=f["heads"], layers=f["layers"], s=f["seq_len"],
               b=f["micro_batch"], t=loc.integer(t), p=loc.integer(p))
    rows_heading = L("rows", layers=f["layers"])
    rows_desc = L("rows_desc", values="; ".join(f'{loc.t(f"activations.rows.{key}")} {loc.bytes(rows[key])}'
                                                for key, *_ in ROWS),
                  current=loc.t(f"activations.rows.{current}"), gpu=f["gpu_memory_bytes"])
    note = L("rows_note_t1") if t == 1 else L("rows_note", t=loc.integer(t))
    mem_heading = L("memory", gpu=f["gpu_memory_bytes"])
    mem_desc = L("memory_desc_fits" if v["fits"] else "memory_desc_over", state=f["state_per_gpu_bytes"],
                 act=f["activation_bytes"], total=f["total_per_gpu_bytes"], gpu=f["gpu_memory_bytes"])
    legend = [f'<li><span class="w-swatch w-c1"></span>{esc(L("state", state=f["state_per_gpu_bytes"], t=loc.integer(t), p=loc.integer(p)))}</li>',
              f'<li><span class="w-swatch w-c2"></span>{esc(L("stored", stored=f["stored_activation_bytes"], layers=f["layers"], per_layer=f["per_layer_bytes"]))}</li>']
    if v["rematerialized_bytes"] > 0:
        legend.append(f'<li><span class="w-swatch w-c4"></span>{esc(L("rebuilt", rebuilt=f["rematerialized_bytes"]))}</li>')
    return (
        f'<figure class="w-fig w-act-fig">'
        f'<figcaption class="w-fig-heading w-act-config">{esc(config)}</figcaption>'
        f'<p class="w-fig-heading">{esc(rows_heading)}</p>'
        f'{_rows_svg(rows, current, v, f, loc, rows_heading, rows_desc)}'
        f'<p class="w-act-note">{esc(note)}</p>'
        f'<p class="w-fig-heading">{esc(mem_heading)}</p>{_memory_svg(v, f, loc, mem_heading, mem_desc)}'
        f'<ul class="w-legend">{"".join(legend)}</ul></figure>'
    )
