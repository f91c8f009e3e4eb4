"""Widget `why`: why one GPU is not enough (seed 000, step 1).

Controls: training tokens and the model. Outputs: the training state by component
against one GPU's memory, the 6ND compute, and the training time on 1, 64 and 1,024 GPUs
at perfect scaling. Every number comes from `calc`.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc.activations import activation_bytes
from calc.compute import training_flops, training_seconds
from calc.hardware import DEFAULT_GPU, GPUS
from calc.memory import training_state
from calc.models import MODELS, param_count

from ..framework.html import details_table, esc, line_label, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Range
from ._common import MODEL

NAME = "why"
GPU = GPUS[DEFAULT_GPU]  # the seed's illustrative 80 GB GPU at 150 TFLOP/s
GPU_COUNTS = (1, 64, 1024)  # the seed's three time bars
INT4_BYTES_PER_PARAM = 0.5  # QLoRA stores base weights in 4-bit NormalFloat (Dettmers et al. 2023, Sec. 3)

CONTROLS = (
    Range("tokens", lo=50e9, hi=2e12, step=10e9, default=2e12, display="count"),
    MODEL,
)

OUTPUTS: dict[str, str] = {
    "params": "count",
    "tokens": "count",
    "weights_bytes": "bytes",
    "grads_bytes": "bytes",
    "optimizer_bytes": "bytes",
    "state_bytes": "bytes",
    "gpu_memory_bytes": "bytes",
    "state_over_gpu": "ratio",
    "min_gpus_state": "integer",
    "flops": "flops",
    "gpu_flops": "flops_per_s",
    **{f"time_{n}": "seconds" for n in GPU_COUNTS},
    "act_seq_bytes": "bytes",
    "act_seq_bytes_selective": "bytes",
    "weights_int4_bytes": "bytes",
}


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    """All outputs for a validated state, as plain numbers in SI units."""
    model = MODELS[state["model"]]
    params = param_count(model)
    tokens = float(state["tokens"])
    parts = training_state(params)
    flops = training_flops(params, tokens)
    one_sequence = dict(seq_len=model.seq_len, micro_batch=1, hidden=model.hidden,
                        heads=model.heads, layers=model.layers)
    values: dict[str, float] = {
        "params": params,
        "tokens": tokens,
        "weights_bytes": parts.weights,
        "grads_bytes": parts.grads,
        "optimizer_bytes": parts.optimizer,
        "state_bytes": parts.total,
        "gpu_memory_bytes": GPU.memory_bytes,
        "state_over_gpu": parts.total / GPU.memory_bytes,
        "min_gpus_state": math.ceil(parts.total / GPU.memory_bytes),
        "flops": flops,
        "gpu_flops": GPU.flops_per_s,
        **{f"time_{n}": training_seconds(flops=flops, gpus=n, flops_per_gpu=GPU.flops_per_s) for n in GPU_COUNTS},
        "act_seq_bytes": activation_bytes(**one_sequence),
        "act_seq_bytes_selective": activation_bytes(**one_sequence, recompute="selective"),
        "weights_int4_bytes": params * INT4_BYTES_PER_PARAM,
    }
    return values


def output_label(key: str, loc: Locale) -> str:
    if key.startswith("time_"):
        return loc.t("why.outputs.time_n", count=loc.integer(int(key[5:])))
    return loc.t(f"why.outputs.{key}")


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """The output region: stat cards, the SVG figure, the sentence, the table of values."""
    model = MODELS[state["model"]].name
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([
        (output_label("state_bytes", loc), "state_bytes", v["state_bytes"], "bytes"),
        (output_label("state_over_gpu", loc), "state_over_gpu", v["state_over_gpu"], "ratio"),
        (output_label("flops", loc), "flops", v["flops"], "flops"),
        (output_label("time_1", loc), "time_1", v["time_1"], "seconds"),
    ], loc)
    template = "why.sentence_over" if v["state_over_gpu"] > 1 else "why.sentence_fits"
    sentence = loc.h(template, model=model, tokens=f["tokens"], flops=f["flops"],
                     time_1=f["time_1"], time_64=f["time_64"], time_1024=f["time_1024"],
                     gpus_64=loc.integer(64), gpus_1024=loc.integer(1024),
                     state=f["state_bytes"], ratio=f["state_over_gpu"],
                     gpu=f["gpu_memory_bytes"], min_gpus=f["min_gpus_state"])
    table = details_table(loc.t("runtime.details"),
                          [(output_label(k, loc), k, v[k], kind) for k, kind in OUTPUTS.items()], loc)
    return f'{cards}{figure(model, v, f, loc)}<p class="w-sentence">{sentence}</p>{table}'


# -- the figure -------------------------------------------------------------------------
# Two small SVGs, 400 units wide, so their text stays legible from a phone (scale ~0.85)
# to a desktop (the CSS caps them); headings and legends are HTML, so they wrap.
WIDTH = 400
BAR_X, BAR_W = 4, 392
TIME_X, TIME_W = 70, 322
TIME_TICKS = (3600.0, 86400.0, 30 * 86400.0, 365.25 * 86400, 36525 * 86400)
TIME_LO, TIME_HI = 1800.0, 365250 * 86400.0  # half an hour .. 1,000 years, log scale
SEGMENTS = (("weights_bytes", "w-c1", "weights"), ("grads_bytes", "w-c2", "grads"), ("optimizer_bytes", "w-c3", "optimizer"))


def _time_x(seconds: float) -> float:
    clamped = min(max(seconds, TIME_LO), TIME_HI)
    return TIME_X + TIME_W * math.log(clamped / TIME_LO) / math.log(TIME_HI / TIME_LO)


def _memory_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """One stacked bar of the training state; the GPU's memory as a red line."""
    scale = BAR_W / (max(v["state_bytes"], v["gpu_memory_bytes"]) * 1.02)
    parts, x = [], float(BAR_X)
    for key, cls, _ in SEGMENTS:
        width = v[key] * scale
        parts.append(f'<rect class="{cls}" x="{num(x)}" y="6" width="{num(width)}" height="30"/>')
        x += width
    gpu_x = BAR_X + v["gpu_memory_bytes"] * scale
    if v["state_bytes"] > v["gpu_memory_bytes"]:
        parts.append(f'<rect class="w-over" x="{num(gpu_x)}" y="4" width="{num(x - gpu_x)}" height="34"/>')
    parts.append(f'<line class="w-limit" x1="{num(gpu_x)}" y1="0" x2="{num(gpu_x)}" y2="46"/>')
    gpu_label = esc(loc.t("why.figure.gpu_line", memory=f["gpu_memory_bytes"]))
    parts.append(line_label(gpu_x, 58, gpu_label, WIDTH))
    if x - gpu_x > 70 or gpu_x > WIDTH / 2:
        parts.append(f'<text class="w-fig-value" x="{num(x)}" y="58" text-anchor="end">{esc(f["state_bytes"])}</text>')
    return svg("w-why-mem", WIDTH, 62, "".join(parts), title, desc)


def _time_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """Training time on 1, 64 and 1,024 GPUs on a log scale, labelled with the value."""
    parts = []
    for tick in TIME_TICKS:
        tx = _time_x(tick)
        parts.append(f'<line class="w-grid" x1="{num(tx)}" y1="0" x2="{num(tx)}" y2="92"/>'
                     f'<text class="w-fig-tick" x="{num(tx)}" y="106" text-anchor="middle">{esc(loc.duration_tick(tick))}</text>')
    for row, n in enumerate(GPU_COUNTS):
        y = 4 + row * 30
        end = _time_x(v[f"time_{n}"])
        inside = end - TIME_X > 120
        parts.append(
            f'<text class="w-fig-note" x="{TIME_X - 6}" y="{y + 15}" text-anchor="end">{esc(loc.t("why.figure.gpus", count=loc.integer(n)))}</text>'
            f'<rect class="w-c{row + 4}" x="{TIME_X}" y="{y}" width="{num(end - TIME_X)}" height="22"/>'
            f'<text class="w-fig-value{" w-on-bar" if inside else ""}" x="{num(end - 5 if inside else end + 5)}" y="{y + 15}"'
            f' text-anchor="{"end" if inside else "start"}">{esc(f[f"time_{n}"])}</text>'
        )
    return svg("w-why-time", WIDTH, 110, "".join(parts), title, desc)


def figure(model: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    memory_desc = loc.t("why.figure.memory_desc", weights=f["weights_bytes"], grads=f["grads_bytes"],
                        optimizer=f["optimizer_bytes"], state=f["state_bytes"], gpu=f["gpu_memory_bytes"])
    time_desc = loc.t("why.figure.time_desc", time_1=f["time_1"], time_64=f["time_64"],
                      time_1024=f["time_1024"], gpus_64=loc.integer(64), gpus_1024=loc.integer(1024))
    time_heading = loc.t("why.figure.time", gpu_flops=f["gpu_flops"])
    legend = "".join(
        f'<li><span class="w-swatch {cls}"></span>{esc(loc.t("why.figure." + label))} {esc(f[key])}</li>'
        for key, cls, label in SEGMENTS
    )
    return (
        f'<figure class="w-fig">'
        f'<figcaption class="w-fig-heading">{esc(loc.t("why.figure.memory", params=f["params"]))}</figcaption>'
        f'{_memory_svg(v, f, loc, loc.t("why.figure.title", model=model), memory_desc)}'
        f'<ul class="w-legend">{legend}</ul>'
        f'<p class="w-fig-heading">{esc(time_heading)}</p>'
        f'{_time_svg(v, f, loc, time_heading, time_desc)}</figure>'
    )
