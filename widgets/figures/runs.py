"""Widget `runs`: where the five dimensions meet, in runs that were really trained.

One control picks a published layout (``calc.runs.RUNS``: Llama 3 405B at 8K and at
128K tokens on 16,384 H100s, DeepSeek-V3 on 2,048 H800s). The widget shows

1. the dimensions added one at a time, in the order a practitioner adds them
   (``calc.runs.build_up``: data parallelism alone, then TP inside a node, PP across
   nodes, CP for a long sequence, EP for the experts, the run's own ZeRO stage last),
   with the memory per GPU after each step on a log scale against the GPU's;
2. the GPU mesh: each dimension's size and whether its group stays inside a node
   (``calc.runs.links``);
3. one training step of the published layout through the planner's model
   (``calc.runs.evaluate``): compute, pipeline bubble and the exposed communication of
   each dimension.

Every number comes from `calc`.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc.runs import BUILD_STEPS, RUNS, build_up, evaluate, get_run, links
from calc.models import active_param_count, param_count
from calc.planner import ALLOWANCE_BYTES

from ..framework.html import esc, line_label, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice
from ._common import all_values_table, output_label
from .hardware import join_sentences

NAME = "runs"
DIMENSIONS = ("tp", "cp", "pp", "dp", "ep")

CONTROLS = (
    Choice("run", tuple(RUNS), "llama3-405b-128k", radio=True),
)

OUTPUTS: dict[str, str] = {
    "gpus": "integer",
    "tp": "integer",
    "cp": "integer",
    "pp": "integer",
    "dp": "integer",
    "ep": "integer",
    "zero_stage": "integer",
    "seq_len": "integer",
    "global_batch": "integer",
    "microbatches": "integer",
    "tokens_per_gpu": "integer",
    "chunks": "integer",
    "chunk_tokens": "integer",
    "layers": "integer",
    "layers_per_stage": "integer",
    "in_flight": "integer",
    "expert_replicas": "integer",
    "params": "count",
    "active_params": "count",
    "memory_bytes": "bytes",
    "state_bytes": "bytes",
    "activation_bytes": "bytes",
    "gpu_memory_bytes": "bytes",
    "memory_over_gpu": "ratio",
    "allowance_bytes": "bytes",
    "fits": "yesno",
    **{f"memory_after_{s}": "bytes" for s in BUILD_STEPS},
    **{f"state_after_{s}": "bytes" for s in BUILD_STEPS},
    **{f"activation_after_{s}": "bytes" for s in BUILD_STEPS},
    **{f"fits_after_{s}": "yesno" for s in BUILD_STEPS},
    **{f"{d}_inside": "yesno" for d in DIMENSIONS},
    "step_time": "seconds",
    "compute_share": "fraction",
    "bubble_share": "fraction",
    **{f"{d}_share": "fraction" for d in DIMENSIONS},
    "ep_over_compute": "ratio",
    "flops_per_gpu": "flops_per_s",
    "mfu": "fraction",
}


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    run = get_run(state["run"])
    x = evaluate(run)
    steps = build_up(run)
    inside = links(run)
    comm = {"tp": x.tp_comm_s, "cp": x.cp_comm_s, "pp": x.pp_comm_s, "dp": x.dp_comm_s, "ep": x.ep_comm_s}
    values: dict[str, float] = {
        "gpus": run.gpus, "tp": run.tp, "cp": run.cp, "pp": run.pp, "dp": run.dp, "ep": run.ep,
        "zero_stage": run.zero_stage, "seq_len": run.seq_len, "global_batch": run.global_batch,
        "microbatches": run.microbatches, "tokens_per_gpu": run.tokens_per_gpu,
        "chunks": run.chunks, "chunk_tokens": run.chunk_tokens, "layers": run.layers,
        "layers_per_stage": run.layers_per_stage, "in_flight": run.in_flight,
        "expert_replicas": run.expert_replicas,
        "params": param_count(run.config), "active_params": active_param_count(run.config),
        "memory_bytes": x.memory_bytes, "state_bytes": x.state_bytes, "activation_bytes": x.activation_bytes,
        "gpu_memory_bytes": run.memory_bytes, "memory_over_gpu": x.memory_bytes / run.memory_bytes,
        "allowance_bytes": ALLOWANCE_BYTES,
        "fits": 1 if x.memory_bytes <= run.memory_bytes else 0,
        "step_time": x.step_s, "compute_share": x.compute_s / x.step_s, "bubble_share": x.bubble_s / x.step_s,
        "ep_over_compute": x.ep_comm_s / x.compute_s,
        "flops_per_gpu": run.flops_per_gpu, "mfu": run.mfu,
    }
    for s in steps:
        values[f"memory_after_{s.name}"] = s.memory_bytes
        values[f"state_after_{s.name}"] = s.state_bytes
        values[f"activation_after_{s.name}"] = s.activation_bytes
        values[f"fits_after_{s.name}"] = 1 if s.memory_bytes <= run.memory_bytes else 0
    for d in DIMENSIONS:
        values[f"{d}_inside"] = 1 if inside[d] else 0
        values[f"{d}_share"] = comm[d] / x.step_s
    return values


# -- pieces of text -----------------------------------------------------------------------


def layout_text(tp: int, cp: int, pp: int, dp: int, ep: int, zero: int, loc: Locale) -> str:
    """`TP 8 × CP 16 × PP 16 × DP 8 · ZeRO-2`, with `EP 64` when the experts are spread."""
    text = loc.t(f"{NAME}.layout", tp=loc.integer(tp), cp=loc.integer(cp), pp=loc.integer(pp), dp=loc.integer(dp))
    if ep > 1:
        text = loc.t(f"{NAME}.with_ep", layout=text, ep=loc.integer(ep))
    return loc.t(f"{NAME}.with_zero", layout=text, zero=loc.integer(zero))


def _sentence(run_key: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    run = RUNS[run_key]
    s = f"{NAME}.sentence"
    first = next((name for name in BUILD_STEPS if v[f"fits_after_{name}"]), "")
    parts = [loc.t(f"{s}.layout", name=loc.t(f"{NAME}.controls.run.options.{run_key}"), gpus=f["gpus"],
                   layout=layout_text(run.tp, run.cp, run.pp, run.dp, run.ep, run.zero_stage, loc)),
             loc.t(f"{s}.alone", memory=f["memory_after_dp"], gpu=f["gpu_memory_bytes"])]
    parts.append(loc.t(f"{s}.first_fit", step=loc.t(f"{NAME}.step.{first}")) if first else loc.t(f"{s}.never"))
    if run.cp > 1:
        parts.append(loc.t(f"{s}.cp", acts=f["activation_after_pp"], cp=f["cp"], tokens=f["tokens_per_gpu"]))
    if run.ep > 1:
        parts.append(loc.t(f"{s}.ep", share=f["ep_share"], ratio=f["ep_over_compute"]))
    key = "fits" if v["fits"] else "over"
    parts.append(loc.t(f"{s}.{key}", memory=f["memory_bytes"], gpu=f["gpu_memory_bytes"], over=f["memory_over_gpu"],
                       allowance=f["allowance_bytes"]))
    return esc(join_sentences(*parts))


# -- the figures --------------------------------------------------------------------------

WIDTH = 400
BAR_X0, BAR_X1 = 4, 396
ROW_H = 58  # a step: its name, its layout, its bar (room for the phone's 14 px text)
MEM_LO, MEM_HI = 1e10, 1e14  # 10 GB to 100 TB, log scale


def _mem_x(value: float) -> float:
    clamped = min(max(value, MEM_LO), MEM_HI)
    return BAR_X0 + (BAR_X1 - BAR_X0) * math.log10(clamped / MEM_LO) / math.log10(MEM_HI / MEM_LO)


def _used(run: Any, step: str) -> bool:
    """Whether a step of the build-up changes anything for this run."""
    if step == "dp":
        return True
    if step == "zero":
        return run.zero_stage != 1
    return getattr(run, step) > 1


def _bar_value(x: float, y: float, text: str) -> str:
    """The value after a bar's end, or inside it, ending there, when the bar is long."""
    if x > BAR_X1 - 70:
        return f'<text class="w-fig-value w-runs-inside" x="{num(x - 3)}" y="{num(y)}" text-anchor="end">{text}</text>'
    return f'<text class="w-fig-value" x="{num(x + 3)}" y="{num(y)}">{text}</text>'


def _build_svg(run_key: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    run = RUNS[run_key]
    L = lambda key, **kw: loc.t(f"{NAME}.figure.{key}", **kw)  # noqa: E731
    steps = build_up(run)
    top = 24
    bottom = top + ROW_H * len(steps)
    parts = [f'<text class="w-fig-note" x="{BAR_X0}" y="{num(bottom + 28)}">{esc(L("memory_axis"))}</text>']
    for decade in range(10, 15):
        x = _mem_x(10.0 ** decade)
        anchor = "start" if decade == 10 else "end" if decade == 14 else "middle"
        parts.append(f'<line class="w-grid" x1="{num(x)}" y1="{top - 4}" x2="{num(x)}" y2="{num(bottom)}"/>'
                     f'<text class="w-fig-tick" x="{num(x)}" y="{num(bottom + 13)}" '
                     f'text-anchor="{anchor}">{esc(loc.bytes(10.0 ** decade))}</text>')
    for i, step in enumerate(steps):
        y = top + i * ROW_H
        used = _used(run, step.name)
        cls = "w-c3" if step.memory_bytes <= run.memory_bytes else "w-runs-over"
        if not used:
            cls += " w-runs-skip"
        x = _mem_x(step.memory_bytes)
        layout = layout_text(step.tp, step.cp, step.pp, step.dp, step.ep, step.zero_stage, loc) if used else L("unused")
        parts.append(f'<text class="w-fig-value" x="{BAR_X0}" y="{num(y + 13)}">{esc(loc.t(f"{NAME}.step.{step.name}"))}</text>'
                     f'<text class="w-fig-note" x="{BAR_X0}" y="{num(y + 30)}">{esc(layout)}</text>'
                     f'<rect class="{cls}" x="{BAR_X0}" y="{num(y + 36)}" width="{num(max(1.0, x - BAR_X0))}" height="16"/>'
                     + _bar_value(x, y + 49, esc(loc.bytes(step.memory_bytes))))
    gpu_x = _mem_x(run.memory_bytes)
    parts.append(f'<line class="w-runs-gpu" x1="{num(gpu_x)}" y1="{top - 6}" x2="{num(gpu_x)}" y2="{num(bottom)}"/>'
                 + line_label(gpu_x, top - 9, esc(L("gpu_line", memory=f["gpu_memory_bytes"])), WIDTH))
    desc = " ".join(L("step_desc", step=loc.t(f"{NAME}.step.{s.name}"), memory=loc.bytes(s.memory_bytes),
                      layout=layout_text(s.tp, s.cp, s.pp, s.dp, s.ep, s.zero_stage, loc)) for s in steps)
    return svg("w-runs-build", WIDTH, math.ceil(bottom + 33), "".join(parts), L("build_title"), desc)


def _mesh_table(v: Mapping[str, float], loc: Locale) -> str:
    L = lambda key, **kw: loc.t(f"{NAME}.figure.{key}", **kw)  # noqa: E731
    head = "".join(f'<th scope="col">{esc(L(f"col_{k}"))}</th>' for k in ("dimension", "size", "link"))
    rows = []
    for d in DIMENSIONS:
        size = int(v[d])
        link = L("link_none") if size == 1 else L("link_inside" if v[f"{d}_inside"] else "link_across")
        rows.append(f'<tr><th scope="row">{esc(loc.t(f"{NAME}.dimension.{d}"))}</th>'
                    f'<td class="w-runs-num">{esc(loc.integer(size))}</td><td>{esc(link)}</td></tr>')
    return (f'<div class="w-plan-scroll"><table class="w-runs-mesh"><caption>{esc(L("mesh_caption", gpus=loc.integer(int(v["gpus"]))))}</caption>'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


STEP_PARTS = (("compute_share", "w-c1"), ("bubble_share", "w-runs-bubble"), ("tp_share", "w-c2"),
              ("cp_share", "w-c3"), ("ep_share", "w-c4"), ("pp_share", "w-c5"), ("dp_share", "w-c6"))


def _step_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    L = lambda key, **kw: loc.t(f"{NAME}.figure.{key}", **kw)  # noqa: E731
    x0, span = 4, WIDTH - 8
    parts, left = [], float(x0)
    for key, cls in STEP_PARTS:
        width = v[key] * span
        if width > 0:
            parts.append(f'<rect class="{cls}" x="{num(left)}" y="18" width="{num(width)}" height="18"/>')
        left += width
    parts.append(f'<text class="w-fig-note" x="{x0}" y="12">{esc(L("step_axis", time=f["step_time"]))}</text>')
    desc = L("step_bar_desc", **{key: f[key] for key, _ in STEP_PARTS})
    return svg("w-runs-step", WIDTH, 40, "".join(parts), L("step_title", time=f["step_time"]), desc)


def figure(run_key: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    L = lambda key, **kw: loc.t(f"{NAME}.figure.{key}", **kw)  # noqa: E731
    legend = "".join(f'<li><span class="w-swatch {cls}"></span>{esc(L(key))}</li>' for key, cls in STEP_PARTS)
    return (f'<figure class="w-fig w-runs-fig"><figcaption class="w-fig-heading">{esc(L("heading"))}</figcaption>'
            f'{_build_svg(run_key, v, f, loc)}'
            f'<p class="w-runs-note">{esc(L("build_note"))}</p>'
            f'{_mesh_table(v, loc)}'
            f'<p class="w-fig-heading">{esc(L("step_heading"))}</p>'
            f'<ul class="w-legend">{legend}</ul>{_step_svg(v, f, loc)}'
            f'<p class="w-runs-note">{esc(L("step_note", flops=f["flops_per_gpu"]))}</p></figure>')


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("gpus", "tokens_per_gpu", "memory_bytes", "bubble_share")], loc)
    return (f'{cards}{figure(state["run"], v, f, loc)}<p class="w-sentence">{_sentence(state["run"], v, f, loc)}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')
