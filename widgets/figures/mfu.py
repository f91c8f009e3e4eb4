"""Widget `mfu`: model FLOPs utilization of published runs, counted three ways.

One run at a time (PaLM 540B, Megatron-LM's 1T GPT, Llama 2): the share of the peak it
reaches counted with 6Ψ, with the attention scores that 6Ψ leaves out (MFU as PaLM
defines it), and as its paper counts it (Megatron-LM's Eq. 3 includes recomputation,
so its 52% is a hardware utilization). Every number comes from calc.utilization.
"""

from __future__ import annotations

from typing import Any, Mapping

from calc.utilization import RUNS, run_utilization

from ..framework.html import esc, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice
from ._common import all_values_table, output_label

NAME = "mfu"

CONTROLS = (Choice("run", RUNS, "palm-540b"),)

OUTPUTS: dict[str, str] = {
    "peak_flops": "flops_per_s",
    "tokens_per_gpu_s": "number",
    "flops_per_token_6n": "flops",
    "model_flops_per_token": "flops",
    "counted_flops_per_token": "flops",
    "counted_flops_per_gpu": "flops_per_s",
    "mfu_6n": "fraction",
    "mfu": "fraction",
    "counted_utilization": "fraction",
    "model_over_6n": "ratio",
}

# The three bars, in the order the figure draws them: output key, colour class.
BARS = (("mfu_6n", "w-c4"), ("mfu", "w-c5"), ("counted_utilization", "w-c6"))


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    r = run_utilization(state["run"])
    return {
        "peak_flops": r.peak_flops_per_s,
        "tokens_per_gpu_s": r.tokens_per_gpu_s,
        "flops_per_token_6n": r.flops_per_token_6n,
        "model_flops_per_token": r.model_flops_per_token,
        "counted_flops_per_token": r.counted_flops_per_token,
        "counted_flops_per_gpu": r.counted_flops_per_gpu,
        "mfu_6n": r.mfu_6n,
        "mfu": r.mfu,
        "counted_utilization": r.counted_utilization,
        "model_over_6n": r.model_over_6n,
    }


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    run = state["run"]
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("mfu", "counted_utilization", "tokens_per_gpu_s", "counted_flops_per_gpu")], loc)
    name = loc.t(f"mfu.controls.run.options.{run}")
    sentence = loc.h("mfu.sentence", run=name, mfu=f["mfu"], mfu_6n=f["mfu_6n"], ratio=f["model_over_6n"],
                     counted=f["counted_utilization"], rate=f["counted_flops_per_gpu"],
                     peak=f["peak_flops"], tokens=f["tokens_per_gpu_s"])
    how = loc.h(f"mfu.counted_{run.split('-')[0]}", counted=f["counted_utilization"], mfu=f["mfu"])
    return (f'{cards}{figure(name, v, f, loc)}<p class="w-sentence">{sentence} {how}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


# 320 units wide: on a 375 px phone the figure is drawn near 1:1, so its 11 px labels
# stay 11 px.
WIDTH, LABEL_W, BAR_W, ROW = 320, 124, 150, 30


def figure(name: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    """Three bars on one 0-100% axis of the peak."""
    parts = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = LABEL_W + BAR_W * tick
        parts.append(f'<line class="w-grid" x1="{num(x)}" y1="0" x2="{num(x)}" y2="{ROW * len(BARS) + 2}"/>'
                     f'<text class="w-fig-tick" x="{num(x)}" y="{ROW * len(BARS) + 16}" text-anchor="middle">'
                     f'{esc(loc.t("units.percent", value=loc.integer(round(tick * 100))))}</text>')
    for row, (key, cls) in enumerate(BARS):
        y = 4 + row * ROW
        width = BAR_W * min(v[key], 1.0)
        parts.append(
            f'<text class="w-fig-note" x="{LABEL_W - 6}" y="{y + 15}" text-anchor="end">{esc(loc.t("mfu.figure." + key))}</text>'
            f'<rect class="{cls}" x="{LABEL_W}" y="{y}" width="{num(width)}" height="20"/>'
            f'<text class="w-fig-value" x="{num(LABEL_W + width + 5)}" y="{y + 15}">{esc(f[key])}</text>'
        )
    title = loc.t("mfu.figure.title", run=name, peak=f["peak_flops"])
    desc = loc.t("mfu.figure.desc", mfu_6n=f["mfu_6n"], mfu=f["mfu"], counted=f["counted_utilization"])
    return (f'<figure class="w-fig w-mfu-fig"><figcaption class="w-fig-heading">{esc(title)}</figcaption>'
            f'{svg("w-mfu-bars", WIDTH, ROW * len(BARS) + 20, "".join(parts), title, desc)}</figure>')
