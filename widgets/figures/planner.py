"""Widget `planner`: plan a run.

Controls: the model, the sequence length (the model's own or a longer one), training
tokens, GPU count and memory, sustained throughput per GPU, the links inside and
between nodes, the global batch, activation recomputation, sequence parallelism and
whether sequences may be split (context parallelism; ep is always tried for an MoE model).
`calc.planner.plan` enumerates every (TP, CP, PP, DP, EP, ZeRO stage, micro-batch
count) layout; the widget shows the ten fastest that fit as a table with
one stacked bar per layout (compute, pipeline bubble, exposed communication, against
the ideal time), the rejected ones grouped by reason with a localized message that
carries the numbers, and a collapsible list of rejected layouts (a few per reason, the
count of the rest). The 3D chapter's layout (8 TP × 4 PP, ZeRO-1, micro-batch size 1)
is marked in the table, or appended with its rank. Every number comes from `calc`.

The models are the seed's Llama 2, Megatron-LM's GPT presets, Llama 3.1 and Mixtral
8x7B. DeepSeek-V3 is left out: its 61 layers and 256 experts make the search some
200,000 layouts at 2,048 GPUs, too slow for a live update in the browser; the 3D
chapter evaluates its published layout instead (``calc.runs``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable, Mapping

from calc.activations import RECOMPUTE_MODES
from calc.hardware import GPUS_PER_NODE
from calc.models import DEFAULT_MODEL, MEGATRON_MODELS, MODELS, RECENT_MODELS, ModelConfig
from calc.planner import (ALLOWANCE_BYTES, REASONS, Layout, Plan, layers_in_flight, layout_census, model_args, plan,
                          stage_layers)

from ..framework.html import attrs, esc, num, svg, value_span
from ..framework.locale import Locale
from ..framework.spec import Choice, NumberChoice, Range, Toggle
from ._common import RECIPE, all_values_table, output_label, recipe_args

NAME = "planner"
MODEL_TABLE: dict[str, ModelConfig] = {**MODELS, **MEGATRON_MODELS,
                                        **{k: m for k, m in RECENT_MODELS.items() if k != "deepseek-v3"}}
SEQ_LENS = ("model", "2048", "4096", "8192", "16384", "32768", "65536", "131072")
GPU_COUNTS = ("8", "16", "32", "64", "128", "256", "512", "1024", "1536", "2048", "3072", "4096", "8192", "16384")
MEMORIES_GB = ("16", "24", "40", "48", "80", "94", "141", "192")
BATCHES = ("64", "128", "256", "512", "1024", "1536", "2048", "3072", "4096")
TOP = 10  # fastest layouts drawn
ROWS_PER_REASON = 6  # rejected layouts listed per reason in the collapsible list
VALUES_LISTED = 5  # distinct t / p / d values named in a reason's summary
REF_TP, REF_PP, REF_ZERO, REF_B = 8, 4, 1, 1  # the 3D chapter's layout (seed 000, step 6), cp = ep = 1
IDEAL_SHARE = 5e-4  # bubble + exposed communication below 0.05% of a step reads as "ideal"
LIST_ORDER = ("memory", "zero_pp", "batch", "ep_sp", "ep_experts", "pp_layers", "cp_seq", "tp_node", "tp_heads")

CONTROLS = (
    Choice("model", tuple(MODEL_TABLE), DEFAULT_MODEL, labels={k: m.name for k, m in MODEL_TABLE.items()}),
    Choice("seq_len", SEQ_LENS, "model"),
    Range("tokens", lo=1e10, hi=1.5e13, step=1e10, default=2e12, display="count"),
    NumberChoice("gpus", GPU_COUNTS, "256", labels={g: g for g in GPU_COUNTS}),
    NumberChoice("gpu_memory_gb", MEMORIES_GB, "80", labels={g: f"{g} GB" for g in MEMORIES_GB}),
    Range("tflops", lo=10, hi=1000, step=1, default=150, integer=True, display="integer"),
    Range("intra_gbps", lo=10, hi=1000, step=5, default=450, display="number"),
    Range("inter_gbps", lo=1, hi=100, step=0.5, default=50, display="number"),
    NumberChoice("global_batch", BATCHES, "1024", labels={b: b for b in BATCHES}),
    Choice("recompute", RECOMPUTE_MODES, "selective", radio=True),
    Toggle("sequence_parallel", False),
    Toggle("context_parallel", False),
    RECIPE,
)

OUTPUTS: dict[str, str] = {
    "best_tp": "integer",
    "best_pp": "integer",
    "best_dp": "integer",
    "best_cp": "integer",
    "best_ep": "integer",
    "best_zero": "integer",
    "best_microbatches": "integer",
    "best_micro_batch": "integer",
    "best_time": "seconds",
    "best_step_time": "seconds",
    "best_compute_time": "seconds",
    "best_bubble_time": "seconds",
    "best_comm_time": "seconds",
    "best_tp_comm_time": "seconds",
    "best_cp_comm_time": "seconds",
    "best_ep_comm_time": "seconds",
    "best_pp_comm_time": "seconds",
    "best_dp_comm_time": "seconds",
    "best_bubble": "fraction",
    "best_comm_fraction": "fraction",
    "best_memory_bytes": "bytes",
    "best_over_ideal": "ratio",
    "best_stage_layers": "integer",
    "best_in_flight": "integer",
    "best_layers_in_flight": "integer",
    "closest_memory_bytes": "bytes",
    "closest_activation_bytes": "bytes",
    "ideal_time": "seconds",
    "flops": "flops",
    "step_flops": "flops",
    "batch_tokens": "count",
    "cluster_flops": "flops_per_s",
    "param_flops_per_token": "flops",
    "attention_flops_per_token": "flops",
    "attention_over_params": "fraction",
    "steps": "integer",
    "layouts_count": "integer",
    "tp_pp_pairs": "integer",
    "tp_pp_m_count": "integer",
    "pipelined_tp_pp_m_count": "integer",
    "zero_stage_count": "integer",
    "zero_pp_stage_count": "integer",
    "feasible_count": "integer",
    "rejected_count": "integer",
    **{f"rejected_{reason}": "integer" for reason in REASONS},
    "ref_time": "seconds",
    "ref_step_time": "seconds",
    "ref_memory_bytes": "bytes",
    "ref_bubble": "fraction",
    "ref_fits": "yesno",
    "ref_rank": "integer",
    "ref_over_best": "ratio",
    "ref_tp": "integer",
    "ref_pp": "integer",
    "ref_dp": "integer",
    "ref_stage_layers": "integer",
    "ref_in_flight": "integer",
    "ref_layers_in_flight": "integer",
    "ref_state_bytes": "bytes",
    "ref_activation_bytes": "bytes",
    "params": "count",
    "active_params": "count",
    "seq_len": "integer",
    "layers": "integer",
    "hidden": "integer",
    "tokens": "count",
    "gpus": "integer",
    "gpu_memory_bytes": "bytes",
    "allowance_bytes": "bytes",
    "gpu_flops": "flops_per_s",
    "intra_bytes_per_s": "bytes_per_s",
    "inter_bytes_per_s": "bytes_per_s",
    "global_batch": "integer",
}


def seq_len_of(state: Mapping[str, Any]) -> int:
    """The sequence length: the model's own, or the one chosen."""
    return MODEL_TABLE[state["model"]].seq_len if state["seq_len"] == "model" else int(state["seq_len"])


@lru_cache(maxsize=32)
def _cached_plan(model: str, seq_len: int, tokens: float, gpus: int, memory_gb: int, tflops: float,
                 intra_gbps: float, inter_gbps: float, batch: int, recompute: str, sequence_parallel: bool,
                 context_parallel: bool, recipe: str) -> Plan:
    return plan(**model_args(MODEL_TABLE[model]), seq_len=seq_len, tokens=float(tokens), gpus=gpus,
                memory_bytes=memory_gb * 1e9, flops_per_gpu=tflops * 1e12, intra_bytes_per_s=intra_gbps * 1e9,
                inter_bytes_per_s=inter_gbps * 1e9, gpus_per_node=GPUS_PER_NODE,
                global_batch=batch, recompute=recompute, sequence_parallel=sequence_parallel,
                context_parallel=context_parallel, **recipe_args({"recipe": recipe}))


def plan_of(state: Mapping[str, Any]) -> Plan:
    """The plan of a validated state (cached: compute and render share it, and the
    build's macros ask for the same states again and again)."""
    return _cached_plan(state["model"], seq_len_of(state), float(state["tokens"]), int(state["gpus"]),
                        int(state["gpu_memory_gb"]), float(state["tflops"]), float(state["intra_gbps"]),
                        float(state["inter_gbps"]), int(state["global_batch"]), state["recompute"],
                        bool(state["sequence_parallel"]), bool(state["context_parallel"]), state["recipe"])


def _is_reference(x: Layout) -> bool:
    return (x.tp, x.cp, x.pp, x.ep, x.zero_stage) == (REF_TP, 1, REF_PP, 1, REF_ZERO)


def reference(p: Plan) -> tuple[Layout | None, int]:
    """The 3D chapter's layout in this plan (t = 8, p = 4, no cp or ep, ZeRO-1, b = 1)
    and its rank among the feasible layouts (1 = best; 0 when it does not fit or does
    not exist)."""
    for rank, x in enumerate(p.feasible, 1):
        if _is_reference(x) and x.micro_batch == REF_B:
            return x, rank
    for x in p.rejected:
        if _is_reference(x) and x.micro_batch in (REF_B, 0):
            return x, 0
    return None, 0


def _closest(p: Plan) -> Layout | None:
    """The layout rejected for memory that came closest to fitting (the widget's hint)."""
    rows = [x for x in p.rejected if x.reason == "memory"]
    return min(rows, key=lambda x: x.memory_bytes) if rows else None


def _in_flight(x: Layout | None, layers: int) -> tuple[int, int, int]:
    """(⌈L/p⌉, min(p, m), min(p, m)·⌈L/p⌉) of a layout (zeros without micro-batches)."""
    if x is None or not x.microbatches:
        return 0, 0, 0
    return (stage_layers(layers, x.pp), min(x.pp, x.microbatches),
            layers_in_flight(layers=layers, pp=x.pp, microbatches=x.microbatches))


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    p = plan_of(state)
    spec, best = p.spec, p.best
    census = layout_census(gpus=spec.gpus, global_batch=spec.global_batch)
    closest = _closest(p)
    values: dict[str, float] = {
        "ideal_time": spec.ideal_seconds,
        "flops": spec.flops,
        "step_flops": spec.step_flops,
        "batch_tokens": spec.batch_tokens,
        "cluster_flops": spec.cluster_flops_per_s,
        "tp_pp_pairs": census.pairs,
        "tp_pp_m_count": census.triples,
        "pipelined_tp_pp_m_count": census.pipelined,
        "zero_stage_count": census.stages,
        "zero_pp_stage_count": census.stages_refused_with_pp,
        "closest_memory_bytes": closest.memory_bytes if closest else 0.0,
        "closest_activation_bytes": closest.activation_bytes if closest else 0.0,
        "layers": spec.layers,
        "hidden": spec.hidden,
        "allowance_bytes": ALLOWANCE_BYTES,
        "param_flops_per_token": spec.param_flops_per_token,
        "attention_flops_per_token": spec.attention_flops_per_token,
        "attention_over_params": spec.attention_flops_per_token / spec.param_flops_per_token,
        "steps": spec.steps,
        "layouts_count": len(p.layouts),
        "feasible_count": len(p.feasible),
        "rejected_count": len(p.rejected),
        **{f"rejected_{reason}": n for reason, n in p.counts},
        "params": spec.params,
        "active_params": spec.used_params,
        "seq_len": spec.seq_len,
        "tokens": spec.tokens,
        "gpus": spec.gpus,
        "gpu_memory_bytes": spec.memory_bytes,
        "gpu_flops": spec.flops_per_gpu,
        "intra_bytes_per_s": spec.intra_bytes_per_s,
        "inter_bytes_per_s": spec.inter_bytes_per_s,
        "global_batch": spec.global_batch,
    }
    b = best
    values.update({
        "best_tp": b.tp if b else 0,
        "best_pp": b.pp if b else 0,
        "best_dp": b.dp if b else 0,
        "best_cp": b.cp if b else 0,
        "best_ep": b.ep if b else 0,
        "best_zero": b.zero_stage if b else 0,
        "best_microbatches": b.microbatches if b else 0,
        "best_micro_batch": b.micro_batch if b else 0,
        "best_time": b.run_s if b else 0.0,
        "best_step_time": b.step_s if b else 0.0,
        "best_compute_time": b.compute_s if b else 0.0,
        "best_bubble_time": b.bubble_s if b else 0.0,
        "best_comm_time": b.comm_s if b else 0.0,
        "best_tp_comm_time": b.tp_comm_s if b else 0.0,
        "best_cp_comm_time": b.cp_comm_s if b else 0.0,
        "best_ep_comm_time": b.ep_comm_s if b else 0.0,
        "best_pp_comm_time": b.pp_comm_s if b else 0.0,
        "best_dp_comm_time": b.dp_comm_s if b else 0.0,
        "best_bubble": b.bubble_s / b.step_s if b else 0.0,
        "best_comm_fraction": b.comm_s / b.step_s if b else 0.0,
        "best_memory_bytes": b.memory_bytes if b else 0.0,
        "best_over_ideal": b.run_s / spec.ideal_seconds if b and spec.ideal_seconds > 0 else 0.0,
    })
    values.update(zip(("best_stage_layers", "best_in_flight", "best_layers_in_flight"), _in_flight(b, spec.layers)))
    ref, rank = reference(p)
    known = ref is not None and ref.evaluated
    values.update({
        "ref_time": ref.run_s if known else 0.0,
        "ref_step_time": ref.step_s if known else 0.0,
        "ref_memory_bytes": ref.memory_bytes if known else 0.0,
        "ref_bubble": ref.bubble_s / ref.step_s if known and ref.step_s > 0 else 0.0,
        "ref_fits": 1 if rank else 0,
        "ref_rank": rank,
        "ref_over_best": ref.run_s / b.run_s if known and b and b.run_s > 0 else 0.0,
        "ref_tp": ref.tp if ref else 0,
        "ref_pp": ref.pp if ref else 0,
        "ref_dp": ref.dp if ref else 0,
        "ref_state_bytes": ref.state_bytes if known else 0.0,
        "ref_activation_bytes": ref.activation_bytes if known else 0.0,
    })
    values.update(zip(("ref_stage_layers", "ref_in_flight", "ref_layers_in_flight"),
                      _in_flight(ref if known else None, spec.layers)))
    return values


# -- text pieces ---------------------------------------------------------------------------


def layout_text(x: Layout, loc: Locale) -> str:
    """`8 × 4 × 8` (t × p × d), or `8 × CP 16 × 16 × 8` when the sequence is split: the
    factors multiply to the GPU count."""
    if x.cp > 1:
        return loc.t(f"{NAME}.layout_cp", tp=loc.integer(x.tp), cp=loc.integer(x.cp), pp=loc.integer(x.pp),
                     dp=loc.integer(x.dp))
    return loc.t(f"{NAME}.layout", tp=loc.integer(x.tp), pp=loc.integer(x.pp), dp=loc.integer(x.dp))


def detail_text(x: Layout, loc: Locale) -> str:
    """`ZeRO-1 · m 4 × b 1` (or without the micro-batches when there are none), led by
    `EP 8 · ` when the experts are spread (ep is carved out of cp·d, not a factor)."""
    zero = loc.t(f"{NAME}.zero", stage=loc.integer(x.zero_stage))
    if x.ep > 1:
        zero = loc.t(f"{NAME}.ep", ep=loc.integer(x.ep), rest=zero)
    if not x.microbatches:
        return loc.t(f"{NAME}.detail_no_micro", zero=zero)
    return loc.t(f"{NAME}.detail", zero=zero, m=loc.integer(x.microbatches), b=loc.integer(x.micro_batch))


def _values_list(numbers: Iterable[int], loc: Locale) -> str:
    distinct = sorted(set(numbers))
    shown = [loc.integer(v) for v in distinct[:VALUES_LISTED]]
    return ", ".join(shown) + (", …" if len(distinct) > VALUES_LISTED else "")


def reason_row(x: Layout, p: Plan, loc: Locale) -> str:
    """One rejected layout's reason, with its numbers ("needs 93.4 GB of 80 GB")."""
    spec = p.spec
    return loc.t(f"{NAME}.reason_row.{x.reason}", tp=loc.integer(x.tp), pp=loc.integer(x.pp),
                 dp=loc.integer(x.dp), cp=loc.integer(x.cp), ep=loc.integer(x.ep),
                 chunks=loc.integer(2 * x.cp), seq_len=loc.integer(spec.seq_len),
                 experts=loc.integer(spec.experts), kv_heads=loc.integer(spec.key_value_heads),
                 zero=loc.integer(x.zero_stage), heads=loc.integer(spec.heads),
                 layers=loc.integer(spec.layers), batch=loc.integer(spec.global_batch),
                 per_node=loc.integer(spec.gpus_per_node), need=loc.bytes(x.memory_bytes),
                 memory=loc.bytes(spec.memory_bytes))


def reason_summary(reason: str, rows: list[Layout], p: Plan, loc: Locale) -> str:
    """A reason group's message with its numbers (the values of t, p or d involved, or
    the layout that came closest to fitting)."""
    spec = p.spec
    params = dict(heads=loc.integer(spec.heads), kv_heads=loc.integer(spec.key_value_heads),
                  layers=loc.integer(spec.layers), seq_len=loc.integer(spec.seq_len),
                  experts=loc.integer(spec.experts), batch=loc.integer(spec.global_batch),
                  per_node=loc.integer(spec.gpus_per_node), memory=loc.bytes(spec.memory_bytes))
    if reason in ("tp_heads", "tp_node"):
        params["values"] = _values_list((x.tp for x in rows), loc)
    elif reason == "pp_layers":
        params["values"] = _values_list((x.pp for x in rows), loc)
    elif reason == "cp_seq":
        params["values"] = _values_list((x.cp for x in rows), loc)
    elif reason in ("ep_experts", "ep_sp"):
        params["values"] = _values_list((x.ep for x in rows), loc)
    elif reason == "batch":
        params["values"] = _values_list((x.dp for x in rows), loc)
    elif reason == "memory":
        closest = min(rows, key=lambda x: x.memory_bytes)
        params.update(need=loc.bytes(closest.memory_bytes), layout=layout_text(closest, loc),
                      detail=detail_text(closest, loc))
    return loc.t(f"{NAME}.reason.{reason}", **params)


def _grouped(p: Plan) -> dict[str, list[Layout]]:
    groups: dict[str, list[Layout]] = {r: [] for r in REASONS}
    for x in p.rejected:
        groups[x.reason].append(x)
    groups["memory"].sort(key=lambda x: (x.memory_bytes, x.tp, x.pp, x.zero_stage, x.microbatches))
    return groups


# -- the figure: the fastest layouts ------------------------------------------------------

BAR_W, BAR_H = 200, 14


def _bar(x: Layout, rank: int, scale: float, ideal: float, loc: Locale) -> str:
    """One layout's run time as a stacked bar: compute, bubble, exposed communication
    (widths proportional to time, the same scale for every row) and the ideal time."""
    run_per_step = x.run_s / x.step_s if x.step_s > 0 else 0.0
    parts, left = [], 0.0
    for seconds, cls in ((x.compute_s, "w-c1"), (x.bubble_s, "w-plan-bubble"), (x.comm_s, "w-c2")):
        width = seconds * run_per_step * scale
        if width > 0:
            parts.append(f'<rect class="{cls}" x="{num(left)}" y="1" width="{num(width)}" height="{BAR_H - 2}"/>')
        left += width
    at = ideal * scale
    parts.append(f'<line class="w-plan-ideal" x1="{num(at)}" y1="0" x2="{num(at)}" y2="{BAR_H}"/>')
    step = x.step_s
    title = loc.t(f"{NAME}.figure.bar_title", rank=loc.integer(rank), layout=layout_text(x, loc),
                  time=loc.seconds(x.run_s))
    desc = loc.t(f"{NAME}.figure.bar_desc", compute=loc.percent(x.compute_s / step), bubble=loc.percent(x.bubble_s / step),
                 comm=loc.percent(x.comm_s / step), ideal=loc.seconds(ideal))
    return svg(f"w-plan-bar-{rank}", BAR_W, BAR_H, "".join(parts), title, desc).replace(
        'class="w-figure"', 'class="w-figure w-plan-bar" preserveAspectRatio="none"', 1)


def _row(x: Layout, rank: int, scale: float, ideal: float, is_ref: bool, loc: Locale) -> str:
    ref = f' <span class="w-plan-ref">{esc(loc.t(f"{NAME}.figure.ref_marker"))}</span>' if is_ref else ""
    cls = ' class="w-plan-ref-row"' if is_ref else ""
    return (f'<tr{cls}><th scope="row" class="w-plan-rank">{esc(loc.integer(rank))}</th>'
            f'<td><span class="w-plan-layout">{esc(layout_text(x, loc))}</span>{ref}'
            f'<span class="w-plan-sub">{esc(detail_text(x, loc))}</span>'
            f'<span class="w-plan-sub w-plan-memline">{esc(loc.t(f"{NAME}.figure.memory_line", memory=loc.bytes(x.memory_bytes)))}</span></td>'
            f'<td class="w-plan-num w-plan-memcol">{esc(loc.bytes(x.memory_bytes))}</td>'
            f'<td class="w-plan-time"><span class="w-plan-num">{esc(loc.seconds(x.run_s))}</span>'
            f'{_bar(x, rank, scale, ideal, loc)}</td></tr>')


def figure(p: Plan, v: Mapping[str, float], loc: Locale) -> str:
    t = f"{NAME}.figure"
    if not p.feasible:
        return (f'<figure class="w-fig w-plan-fig"><figcaption class="w-fig-heading">'
                f'{esc(loc.t(f"{t}.heading_none", layouts=loc.integer(len(p.layouts)), memory=loc.bytes(p.spec.memory_bytes)))}'
                f'</figcaption></figure>')
    top = list(enumerate(p.feasible[:TOP], 1))
    ref, ref_rank = reference(p)
    if ref_rank > TOP and ref is not None:
        top.append((ref_rank, ref))
    slowest = max(x.run_s for _, x in top)
    scale = BAR_W / slowest if slowest > 0 else 0.0
    ideal = p.spec.ideal_seconds
    rows = "".join(_row(x, rank, scale, ideal, rank == ref_rank, loc) for rank, x in top)
    heading = loc.t(f"{t}.heading", shown=loc.integer(min(TOP, len(p.feasible))),
                    feasible=loc.integer(len(p.feasible)), layouts=loc.integer(len(p.layouts)))
    legend = "".join(
        f'<li><span class="w-swatch {cls}"></span>{esc(loc.t(f"{t}.{key}"))}</li>'
        for cls, key in (("w-c1", "compute"), ("w-plan-bubble", "bubble"), ("w-c2", "comm"), ("w-plan-ideal-swatch", "ideal")))
    head = "".join(f'<th scope="col"{attrs(class_=c)}>{esc(loc.t(f"{t}.col_{k}"))}</th>'
                   for k, c in (("rank", "w-plan-rank"), ("layout", None), ("memory", "w-plan-num w-plan-memcol"), ("time", None)))
    return (f'<figure class="w-fig w-plan-fig"><figcaption class="w-fig-heading">{esc(heading)}</figcaption>'
            f'<ul class="w-legend">{legend}</ul>'
            f'<div class="w-plan-scroll"><table class="w-plan-table"><thead><tr>{head}</tr></thead>'
            f'<tbody>{rows}</tbody></table></div>'
            f'<p class="w-plan-note">{esc(loc.t(f"{t}.note", layout=loc.t(f"{NAME}.layout_axes"), gpu_flops=loc.format("flops_per_s", v["gpu_flops"])))}</p>'
            f'</figure>')


# -- rejected layouts ---------------------------------------------------------------------


def rejected_html(p: Plan, loc: Locale) -> str:
    """The reasons with their counts and numbers, then the collapsible list."""
    if not p.rejected:
        return f'<p class="w-plan-none">{loc.h(f"{NAME}.rejected.none")}</p>'
    groups = _grouped(p)
    items = "".join(
        f'<li><strong>{esc(loc.integer(len(groups[r])))}</strong> {esc(reason_summary(r, groups[r], p, loc))}</li>'
        for r in REASONS if groups[r])
    heading = loc.t(f"{NAME}.rejected.heading", count=loc.integer(len(p.rejected)),
                    layouts=loc.integer(len(p.layouts)))
    bodies = []
    for r in LIST_ORDER:
        rows = groups[r]
        if not rows:
            continue
        title = loc.t(f"{NAME}.rejected.group", reason=loc.t(f"{NAME}.reason_title.{r}"), count=loc.integer(len(rows)))
        body = [f'<tr><th scope="rowgroup" colspan="2">{esc(title)}</th></tr>']
        for x in rows[:ROWS_PER_REASON]:
            body.append(f'<tr><td><span class="w-plan-num">{esc(layout_text(x, loc))}</span>'
                        f'<span class="w-plan-sub">{esc(detail_text(x, loc))}</span></td>'
                        f'<td>{esc(reason_row(x, p, loc))}</td></tr>')
        if len(rows) > ROWS_PER_REASON:
            more = loc.t(f"{NAME}.rejected.more", count=loc.integer(len(rows) - ROWS_PER_REASON))
            body.append(f'<tr><td colspan="2" class="w-plan-more">{esc(more)}</td></tr>')
        bodies.append(f'<tbody>{"".join(body)}</tbody>')
    head = "".join(f'<th scope="col">{esc(loc.t(f"{NAME}.rejected.col_{k}"))}</th>' for k in ("layout", "reason"))
    summary = loc.t(f"{NAME}.rejected.list", count=loc.integer(len(p.rejected)), per_reason=loc.integer(ROWS_PER_REASON))
    return (f'<p class="w-fig-heading w-plan-rej-heading">{esc(heading)}</p><ul class="w-plan-reasons">{items}</ul>'
            f'<details class="w-details w-plan-rejected"><summary>{esc(summary)}</summary>'
            f'<div class="w-plan-scroll"><table class="w-plan-rej-table"><thead><tr>{head}</tr></thead>{"".join(bodies)}</table></div></details>')


# -- cards, sentence, render ---------------------------------------------------------------


def _cards(p: Plan, v: Mapping[str, float], loc: Locale) -> str:
    def card(label: str, body: str, sub: str = "") -> str:
        extra = f'<span class="w-plan-card-sub">{sub}</span>' if sub else ""
        return f'<div class="w-stat"><dt>{esc(label)}</dt><dd>{body}{extra}</dd></div>'

    b = p.best
    c = f"{NAME}.cards"
    if b is None:
        best = card(loc.t(f"{c}.layout"), esc(loc.t(f"{c}.none")))
    else:
        keys = ("tp", "cp", "pp", "dp") if b.cp > 1 else ("tp", "pp", "dp")
        spans = loc.h(f"{NAME}.layout_cp" if b.cp > 1 else f"{NAME}.layout", **{k: f"\0{k}\0" for k in keys})
        for key in keys:
            spans = spans.replace(f"\0{key}\0", value_span(f"best_{key}", v[f"best_{key}"], "integer", loc))
        best = card(loc.t(f"{c}.layout"), spans, esc(detail_text(b, loc)))
    items = [
        best,
        card(output_label(NAME, "best_time", loc), value_span("best_time", v["best_time"], "seconds", loc),
             loc.h(f"{c}.ideal", ideal=loc.seconds(v["ideal_time"]))),
        card(output_label(NAME, "best_memory_bytes", loc),
             value_span("best_memory_bytes", v["best_memory_bytes"], "bytes", loc),
             loc.h(f"{c}.of_memory", memory=loc.bytes(v["gpu_memory_bytes"]))),
        card(loc.t(f"{c}.feasible"), value_span("feasible_count", v["feasible_count"], "integer", loc),
             loc.h(f"{c}.of_layouts", layouts=loc.integer(v["layouts_count"]))),
    ]
    return f'<dl class="w-stats w-plan-stats">{"".join(items)}</dl>'


def sentence(state: Mapping[str, Any], p: Plan, v: Mapping[str, float], loc: Locale) -> str:
    """The sentence stating the result (HTML-escaped)."""
    s = f"{NAME}.sentence"
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    model = MODEL_TABLE[state["model"]].name
    b = p.best
    if b is None:
        groups = _grouped(p)
        closest = loc.bytes(min(x.memory_bytes for x in groups["memory"])) if groups["memory"] else "–"
        return loc.h(f"{s}.none", layouts=f["layouts_count"], model=model, gpus=f["gpus"],
                     memory=f["gpu_memory_bytes"], need=closest)
    key = "best_ideal" if b.comm_s + b.bubble_s <= IDEAL_SHARE * b.step_s else "best"
    parts = [loc.t(f"{s}.{key}", layouts=f["layouts_count"], feasible=f["feasible_count"], model=model,
                   gpus=f["gpus"], memory=f["gpu_memory_bytes"], layout=layout_text(b, loc),
                   detail=detail_text(b, loc), time=f["best_time"], over=f["best_over_ideal"],
                   ideal=f["ideal_time"], bubble=f["best_bubble"], comm=f["best_comm_fraction"])]
    ref, rank = reference(p)
    if ref is not None:
        ref_layout = layout_text(ref, loc)
        if rank == 1:
            parts.append(loc.t(f"{s}.ref_best", layout=ref_layout))
        elif rank:
            parts.append(loc.t(f"{s}.ref_rank", layout=ref_layout, rank=f["ref_rank"], time=f["ref_time"],
                               over=f["ref_over_best"]))
        else:
            parts.append(loc.t(f"{s}.ref_rejected", layout=ref_layout, reason=reason_row(ref, p, loc)))
    return esc(_join(parts))


def _join(parts: list[str]) -> str:
    """Sentences in a row: a space after `.`, none after a full-width `。` (Chinese)."""
    out = ""
    for part in parts:
        out += part if not out or out.endswith(("。", "！", "？", "：")) else " " + part
    return out


def render(state: Mapping[str, Any], values: Mapping[str, float], loc: Locale) -> str:
    p = plan_of(state)
    return (f'{_cards(p, values, loc)}<p class="w-sentence">{sentence(state, p, values, loc)}</p>'
            f'{figure(p, values, loc)}{rejected_html(p, loc)}'
            f'{all_values_table(NAME, OUTPUTS, values, loc)}')
