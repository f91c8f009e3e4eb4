"""Widget `why`: why one GPU is not enough (seed 000, step 1).

Controls: training tokens and the model, and for the realistic companion a real GPU
and a model FLOPs utilization (MFU). Outputs: the training state by component against
one GPU's memory, the 6ND compute, and the training time on 1, 64 and 1,024 GPUs at
perfect scaling; beside it the same times with the attention FLOP that 6ND leaves out,
on the chosen GPU's peak at the chosen MFU. Every number comes from `calc`.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc.activations import activation_bytes, longer_sequence
from calc.compute import training_flops, training_seconds
from calc.hardware import DEFAULT_GPU, GPUS
from calc.memory import StateBytes
from calc.precision import recipe_bytes
from calc.models import MODELS, param_count
from calc.utilization import LLAMA2_GPU_HOURS, model_flops_over_6n, model_flops_per_token

from ..framework.html import details_table, esc, line_label, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, Range
from ._common import MODEL

NAME = "why"
GPU = GPUS[DEFAULT_GPU]  # the seed's illustrative 80 GB GPU at 150 TFLOP/s
GPU_COUNTS = (1, 64, 1024)  # the seed's three time bars
INT4_BYTES_PER_PARAM = 0.5  # QLoRA stores base weights in 4-bit NormalFloat (Dettmers et al. 2023, Sec. 3)
QLORA_GPU_MEMORY_BYTES = 48e9  # QLoRA fine-tunes a 65B model on one 48 GB GPU (Dettmers et al. 2023, abstract)
# Mixed-precision recipes (calc.precision.RECIPES) whose state a single GPU holds, with
# no distributed optimizer: the ZeRO paper's 16 bytes (the seed's), Megatron-LM's bf16
# with fp32 gradients (18), DeepSeek-V3's FP8 with BF16 moments (14), plain fp32 (16).
MEMORY_RECIPES = ("zero-paper", "megatron-bf16", "fp8-deepseek", "fp32")
# The realistic companion runs on a real GPU's peak: every sourced preset but the seed's.
REAL_GPUS = tuple(key for key in GPUS if key != DEFAULT_GPU)
# 40%: between Llama 3 405B's 38-43% on H100 (Dubey et al. 2024, Table 4) and PaLM's
# 46.2% (Chowdhery et al. 2022, Table 3); the FAQ discusses the range.
DEFAULT_MFU = 0.40

CONTROLS = (
    # Up to Llama 3's 15T training tokens (Meta, "The Llama 3 Herd of Models", 2024,
    # section 3), so that the default, Llama 2's 2T (Touvron et al. 2023, Table 1), is a
    # point the reader can move past in both directions.
    Range("tokens", lo=50e9, hi=15e12, step=10e9, default=2e12, display="count"),
    MODEL,
    Choice("gpu", REAL_GPUS, "a100-80gb", labels={k: GPUS[k].name for k in REAL_GPUS}),
    Range("mfu", lo=0.1, hi=0.7, step=0.01, default=DEFAULT_MFU, display="fraction"),
    Choice("recipe", MEMORY_RECIPES, "zero-paper"),
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
    "bytes_per_param": "number",
    # The model's shape and the run's GPU counts, for the worked examples.
    "layers": "integer",
    "hidden": "integer",
    "heads": "integer",
    "seq_len": "integer",
    **{f"gpus_{n}": "integer" for n in GPU_COUNTS},
    "int4_bytes_per_param": "number",
    "qlora_gpu_memory_bytes": "bytes",
    # The Llama 2 7B run as Touvron et al. 2023 report it (Table 2), to check 6ND against.
    "llama2_7b_gpu_hours": "integer",
    "llama2_7b_gpu_time": "seconds",
    # One layer's activations when the sequence doubles (calc.activations.longer_sequence).
    "score_factor": "number",
    "longer_score_factor": "number",
    "act_growth_double_seq": "ratio",
    "act_growth_double_seq_same_tokens": "ratio",
    "model_flops_per_token": "flops",
    "flops_over_6n": "ratio",
    "model_flops": "flops",
    "peak_flops": "flops_per_s",
    "mfu": "fraction",
    "mfu_flops_per_gpu": "flops_per_s",
    **{f"mfu_time_{n}": "seconds" for n in GPU_COUNTS},
}


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    """All outputs for a validated state, as plain numbers in SI units."""
    model = MODELS[state["model"]]
    params = param_count(model)
    tokens = float(state["tokens"])
    per_param = recipe_bytes(state["recipe"])
    parts = StateBytes(weights=per_param.weights * params, grads=per_param.grads * params,
                       optimizer=per_param.optimizer * params)
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
        "bytes_per_param": per_param.total,
        "layers": model.layers,
        "hidden": model.hidden,
        "heads": model.heads,
        "seq_len": model.seq_len,
        **{f"gpus_{n}": n for n in GPU_COUNTS},
        "int4_bytes_per_param": INT4_BYTES_PER_PARAM,
        "qlora_gpu_memory_bytes": QLORA_GPU_MEMORY_BYTES,
        # The reported GPU hours as one GPU's time in seconds: shown in GPU-years
        # (Locale.seconds: a Julian year of 365.25 days), hours / (24 · 365.25).
        "llama2_7b_gpu_hours": LLAMA2_GPU_HOURS["llama2-7b"],
        "llama2_7b_gpu_time": LLAMA2_GPU_HOURS["llama2-7b"] * 3600.0,
    }
    longer = longer_sequence(hidden=model.hidden, heads=model.heads, seq_len=model.seq_len)
    values.update({
        "score_factor": longer.score_factor,
        "longer_score_factor": longer.longer_score_factor,
        "act_growth_double_seq": longer.growth_same_b,
        "act_growth_double_seq_same_tokens": longer.growth_same_tokens,
    })
    # The companion: the model FLOP of PaLM's MFU convention (6N + attention scores)
    # at the chosen MFU of a real GPU's peak.
    per_token = model_flops_per_token(model)
    model_flops = per_token * tokens
    peak = GPUS[state["gpu"]].flops_per_s
    sustained = peak * state["mfu"]
    values.update({
        "model_flops_per_token": per_token,
        "flops_over_6n": model_flops_over_6n(model),
        "model_flops": model_flops,
        "peak_flops": peak,
        "mfu": state["mfu"],
        "mfu_flops_per_gpu": sustained,
        **{f"mfu_time_{n}": training_seconds(flops=model_flops, gpus=n, flops_per_gpu=sustained)
           for n in GPU_COUNTS},
    })
    return values


def output_label(key: str, loc: Locale) -> str:
    if key.startswith("gpus_"):
        return loc.t("why.outputs.gpus_n")
    if key.startswith("time_"):
        return loc.t("why.outputs.time_n", count=loc.integer(int(key[5:])))
    if key.startswith("mfu_time_"):
        return loc.t("why.outputs.mfu_time_n", count=loc.integer(int(key[9:])))
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
    gpu = GPUS[state["gpu"]].name
    realistic = loc.h("why.sentence_mfu", gpu=gpu, mfu=f["mfu"], rate=f["mfu_flops_per_gpu"],
                      ratio=f["flops_over_6n"], time_1024=f["mfu_time_1024"], gpus_1024=loc.integer(1024))
    table = details_table(loc.t("runtime.details"),
                          [(output_label(k, loc), k, v[k], kind) for k, kind in OUTPUTS.items()], loc)
    return (f'{cards}{figure(model, gpu, v, f, loc)}<p class="w-sentence">{sentence}</p>'
            f'<p class="w-sentence">{realistic}</p>{table}')


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


ROW_H, BAR_H = 40, 16  # each GPU count: the perfect-scaling bar above, the MFU bar below


def _bar(cls: str, y: float, end: float, text: str, faded: bool) -> str:
    """One time bar from TIME_X to ``end``, its value inside when it fits."""
    inside = end - TIME_X > 120
    on_bar = " w-on-bar" if inside and not faded else ""
    tint = ' fill-opacity=".45"' if faded else ""
    return (
        f'<rect class="{cls}"{tint} x="{TIME_X}" y="{num(y)}" width="{num(end - TIME_X)}" height="{BAR_H}"/>'
        f'<text class="w-fig-value{on_bar}" x="{num(end - 5 if inside else end + 5)}" y="{num(y + 12)}"'
        f' text-anchor="{"end" if inside else "start"}">{esc(text)}</text>'
    )


def _time_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """Training time on 1, 64 and 1,024 GPUs on a log scale, labelled with the value:
    perfect scaling at the illustrative rate, and beneath it the realistic companion."""
    height = len(GPU_COUNTS) * ROW_H
    parts = []
    for tick in TIME_TICKS:
        tx = _time_x(tick)
        parts.append(f'<line class="w-grid" x1="{num(tx)}" y1="0" x2="{num(tx)}" y2="{height + 2}"/>'
                     f'<text class="w-fig-tick" x="{num(tx)}" y="{height + 16}" text-anchor="middle">{esc(loc.duration_tick(tick))}</text>')
    for row, n in enumerate(GPU_COUNTS):
        y = 4 + row * ROW_H
        cls = f"w-c{row + 4}"
        parts.append(
            f'<text class="w-fig-note" x="{TIME_X - 6}" y="{y + 21}" text-anchor="end">{esc(loc.t("why.figure.gpus", count=loc.integer(n)))}</text>'
            + _bar(cls, y, _time_x(v[f"time_{n}"]), f[f"time_{n}"], faded=False)
            + _bar(cls, y + BAR_H + 2, _time_x(v[f"mfu_time_{n}"]), f[f"mfu_time_{n}"], faded=True)
        )
    return svg("w-why-time", WIDTH, height + 20, "".join(parts), title, desc)


def figure(model: str, gpu: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    memory_desc = loc.t("why.figure.memory_desc", weights=f["weights_bytes"], grads=f["grads_bytes"],
                        optimizer=f["optimizer_bytes"], state=f["state_bytes"], gpu=f["gpu_memory_bytes"])
    time_desc = loc.t("why.figure.time_desc", time_1=f["time_1"], time_64=f["time_64"],
                      time_1024=f["time_1024"], gpus_64=loc.integer(64), gpus_1024=loc.integer(1024),
                      mfu_time_1=f["mfu_time_1"], mfu_time_64=f["mfu_time_64"], mfu_time_1024=f["mfu_time_1024"])
    time_heading = loc.t("why.figure.time", gpu_flops=f["gpu_flops"])
    time_legend = (
        f'<li>{esc(loc.t("why.figure.perfect", gpu_flops=f["gpu_flops"]))}</li>'
        f'<li>{esc(loc.t("why.figure.realistic", gpu=gpu, mfu=f["mfu"], ratio=f["flops_over_6n"], rate=f["mfu_flops_per_gpu"]))}</li>'
    )
    legend = "".join(
        f'<li><span class="w-swatch {cls}"></span>{esc(loc.t("why.figure." + label))} {esc(f[key])}</li>'
        for key, cls, label in SEGMENTS
    )
    return (
        f'<figure class="w-fig">'
        f'<figcaption class="w-fig-heading">{esc(loc.t("why.figure.memory", params=f["params"], bytes=f["bytes_per_param"]))}</figcaption>'
        f'{_memory_svg(v, f, loc, loc.t("why.figure.title", model=model), memory_desc)}'
        f'<ul class="w-legend">{legend}</ul>'
        f'<p class="w-fig-heading">{esc(time_heading)}</p>'
        f'{_time_svg(v, f, loc, time_heading, time_desc)}'
        f'<ul class="w-legend">{time_legend}</ul></figure>'
    )

