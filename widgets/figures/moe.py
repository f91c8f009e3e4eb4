"""Widget `moe`: mixture of experts and expert parallelism.

An MoE layer holds E expert MLPs and a router that sends each token to its top-k
experts (Shazeer et al. 2017; GShard, Lepikhin et al. 2020; Switch Transformer, Fedus
et al. 2021). Expert parallelism puts E/ep experts on each of ep GPUs; the tokens stay
on their home GPU for attention, and an all-to-all carries every token copy to the GPU
of its expert and back (dispatch and combine, twice more in the backward pass).

The figures, every number from `calc.experts` and `calc.models`:

1. the experts on the ep GPUs (one cell per expert; node outlines past 8 GPUs);
2. a small batch routed top-k by `route_tokens` (seeded, deterministic): tokens as
   columns grouped by home GPU, expert blocks as rows, and the `dispatch_counts`
   matrix of copies each GPU sends each GPU (each node each node past 8 GPUs);
3. the load per expert against the capacity C (`capacity`, `expert_load`,
   `dropped_tokens`);
4. one MoE layer on one GPU, forward + backward, for one training sequence: the
   all-to-all time on NVLink and on the network against the experts' compute
   (`moe_layer_times`, balanced routing);
5. the training state per GPU for every ep (`expert_state_per_gpu_bytes` plus the rest
   of the model, which ep does not divide), on a log scale, against the GPU's memory.

Mixtral 8x7B has 8 experts: an ep above 8 is refused by calc (``experts % ep``), so the
widget uses ep = 8 and says why; the other GPUs would hold copies of that group (data
parallelism over the experts).

The machine (calc.hardware.MACHINES) sets X, both links and the GPU's memory: by default
the seed's illustrative one (150 TFLOP/s, 80 GB, NVLink 450 GB/s, network 50 GB/s, half
an A100's compute with an H100's links); on a real server the all-to-all over compute
follows X/β of that generation and the state is measured against its GPU.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Mapping

from calc import experts as moe
from calc.hardware import GPUS_PER_NODE, get_machine
from calc.memory import training_state
from calc.models import RECENT_MODELS, active_param_count, expert_param_count, param_count

from ..framework.html import esc, line_label, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, NumberChoice, Range
from ._common import MACHINE, machine_label, all_values_table, output_label
from .hardware import join_sentences

NAME = "moe"
LINK_KEYS = ("nvlink", "network")
MOE_MODELS = {key: m for key, m in RECENT_MODELS.items() if m.experts}  # Mixtral 8x7B, DeepSeek-V3
EP_OPTIONS = ("1", "2", "4", "8", "16", "32", "64")  # DeepSeek-V3 trained with EP 64 (report Sec. 3.2)
MICRO_BATCH = 1  # sequences per GPU in the layer times: one training sequence

CONTROLS = (
    Choice("model", tuple(MOE_MODELS), "mixtral-8x7b", labels={k: m.name for k, m in MOE_MODELS.items()}),
    NumberChoice("ep", EP_OPTIONS, "8", radio=True, labels={d: d for d in EP_OPTIONS}),
    Range("tokens", lo=8, hi=64, step=8, default=32, integer=True, display="integer"),
    Range("seed", lo=0, hi=99, step=1, default=0, integer=True, display="integer"),
    Range("skew", lo=0, hi=2, step=0.25, default=0, display="number"),
    Range("capacity_factor", lo=1, hi=2, step=0.25, default=1.25, display="number"),
    Choice("link", LINK_KEYS, "nvlink", radio=True),
    MACHINE,  # X, NVLink, network and M_GPU of one preset; the book's illustrative one by default
)

OUTPUTS: dict[str, str] = {
    "total_params": "count",
    "active_params": "count",
    "active_fraction": "fraction",
    "experts": "integer",
    "experts_per_token": "integer",
    "ep_used": "integer",
    "experts_per_gpu": "integer",
    "nodes": "integer",
    "routed_copies": "integer",
    "capacity": "integer",
    "max_load": "integer",
    "dropped": "integer",
    "dropped_fraction": "fraction",
    "batch_remote_copies": "integer",
    "batch_remote_fraction": "fraction",
    "tokens_per_gpu": "integer",
    "all_to_all_sent_per_gpu_layer_bytes": "bytes",
    "all_to_all_time": "seconds",
    "all_to_all_time_nvlink": "seconds",
    "all_to_all_time_network": "seconds",
    "expert_compute_time": "seconds",
    "comm_over_compute": "ratio",
    "expert_state_per_gpu_bytes": "bytes",
    "rest_state_per_gpu_bytes": "bytes",
    "state_per_gpu_bytes": "bytes",
    "gpu_memory_bytes": "bytes",
    "fits": "yesno",
    "link_bytes_per_s": "bytes_per_s",
    "gpu_flops": "flops_per_s",  # X of the chosen machine
    "hidden": "integer",
    "moe_ffn": "integer",
    "moe_layers": "integer",
    "dense_layers": "integer",
    "shared_experts": "integer",
    "expert_params": "count",
    "routed_expert_params": "count",
    "active_routed_params": "count",
    "rest_params": "count",
    "active_params_without_embedding": "count",
    "mean_load": "number",
    "dispatch_bytes": "bytes",
    "expert_flops": "flops",
    "capacity_factor": "number",  # the control, CF, for the worked steps
}


# -- the numbers ------------------------------------------------------------------------
def ep_used(model: Any, ep: int) -> int:
    """The expert-parallel size the model allows: ep, at most its E experts."""
    return min(ep, model.experts)


def units(ep: int) -> tuple[int, str]:
    """What the routed-batch figure groups by: the ep GPUs inside a node, the nodes of
    GPUS_PER_NODE GPUs each past it (GPU g sits in node g // 8, and holds experts and
    tokens in order, so node n holds the experts and tokens of its 8 GPUs in order)."""
    if ep <= GPUS_PER_NODE:
        return ep, "gpu"
    return ep // GPUS_PER_NODE, "node"


def rest_params(model: Any) -> int:
    """Parameters outside the routed experts (attention, norms, routers, shared experts,
    dense layers, embedding and head): every GPU of the expert-parallel group holds them."""
    return param_count(model) - model.moe_layers * model.experts * expert_param_count(model)


def state_by_ep(model: Any, ep: int) -> tuple[float, float]:
    """(routed experts' training state per GPU, the rest's) at 16 bytes per parameter."""
    experts = moe.expert_state_per_gpu_bytes(hidden=model.hidden, moe_ffn=model.moe_ffn, experts=model.experts,
                                             moe_layers=model.moe_layers, ep=ep)
    return experts, training_state(rest_params(model)).total


@lru_cache(maxsize=8)
def _routes(key: str, tokens: int, seed: int, skew: float) -> tuple[tuple[int, ...], ...]:
    """`route_tokens` once per state: compute() and render() both need it (one live update
    costs one routing)."""
    model = MOE_MODELS[key]
    return moe.route_tokens(tokens=tokens, experts=model.experts, experts_per_token=model.experts_per_token,
                            seed=seed, skew=skew)


def link_bandwidths(state: Mapping[str, Any]) -> dict[str, float]:
    """β of each link of the state's machine, bytes/s per GPU and direction."""
    machine = get_machine(state["machine"])
    return {"nvlink": machine.nvlink_bytes_per_s, "network": machine.network_bytes_per_s}


def routing(model: Any, state: Mapping[str, Any]) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...], int]:
    """The drawn batch: each token's k experts, the load per expert, the capacity."""
    t, k = state["tokens"], model.experts_per_token
    routes = _routes(model.key, t, state["seed"], state["skew"])
    cap = moe.capacity(tokens=t, experts=model.experts, experts_per_token=k,
                       capacity_factor=state["capacity_factor"])
    return routes, moe.expert_load(routes, model.experts), cap


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    model = MOE_MODELS[state["model"]]
    d = ep_used(model, int(state["ep"]))
    k, t = model.experts_per_token, state["tokens"]
    routes, load, cap = routing(model, state)
    dropped = moe.dropped_tokens(load, cap)
    n_units, _ = units(d)
    counts = moe.dispatch_counts(routes, experts=model.experts, ep=n_units)
    copies = t * k
    kept = 0  # copies whose expert sits on their own GPU (node): the diagonal, integers
    for i in range(n_units):
        kept += counts[i][i]
    remote = copies - kept
    tokens_per_gpu = model.seq_len * MICRO_BATCH
    gpu = get_machine(state["machine"]).gpu
    betas = link_bandwidths(state)
    times = {key: moe.moe_layer_times(tokens=tokens_per_gpu, hidden=model.hidden, moe_ffn=model.moe_ffn,
                                      experts_per_token=k, ep=d, flops_per_gpu=gpu.flops_per_s,
                                      bytes_per_s=betas[key]) for key in LINK_KEYS}
    chosen = times[state["link"]]
    experts_state, rest_state = state_by_ep(model, d)
    total = param_count(model)
    active = active_param_count(model)
    return {
        "total_params": total,
        "active_params": active,
        "active_fraction": active / total,
        "experts": model.experts,
        "experts_per_token": k,
        "ep_used": d,
        "experts_per_gpu": moe.experts_per_gpu(model.experts, d),
        "nodes": math.ceil(d / GPUS_PER_NODE),
        "routed_copies": copies,
        "capacity": cap,
        "max_load": max(load),
        "dropped": dropped,
        "dropped_fraction": dropped / copies,
        "batch_remote_copies": remote,
        "batch_remote_fraction": remote / copies,
        "tokens_per_gpu": tokens_per_gpu,
        "all_to_all_sent_per_gpu_layer_bytes": moe.all_to_all_sent_per_gpu_layer_bytes(
            tokens=tokens_per_gpu, hidden=model.hidden, experts_per_token=k, ep=d),
        "all_to_all_time": chosen.all_to_all,
        "all_to_all_time_nvlink": times["nvlink"].all_to_all,
        "all_to_all_time_network": times["network"].all_to_all,
        "expert_compute_time": chosen.compute,
        "comm_over_compute": chosen.comm_over_compute,
        "expert_state_per_gpu_bytes": experts_state,
        "rest_state_per_gpu_bytes": rest_state,
        "state_per_gpu_bytes": experts_state + rest_state,
        "gpu_memory_bytes": gpu.memory_bytes,
        "fits": 1 if experts_state + rest_state <= gpu.memory_bytes else 0,
        "link_bytes_per_s": betas[state["link"]],
        "gpu_flops": gpu.flops_per_s,
        # the shape behind the formulas, for the chapter's worked examples
        "hidden": model.hidden,
        "moe_ffn": model.moe_ffn,
        "moe_layers": model.moe_layers,
        "dense_layers": model.dense_layers,
        "shared_experts": model.shared_experts,
        "expert_params": expert_param_count(model),
        "routed_expert_params": model.moe_layers * model.experts * expert_param_count(model),
        "active_routed_params": model.moe_layers * k * expert_param_count(model),
        "rest_params": rest_params(model),
        # Mixtral's 12.9B counts the embedding (Mistral AI's figure); without it, 12.7B
        "active_params_without_embedding": active - model.vocab * model.hidden,
        "mean_load": k * t / model.experts,
        # one all-to-all (dispatch or combine) of the four per layer and step
        "dispatch_bytes": moe.all_to_all_sent_per_gpu_layer_bytes(
            tokens=tokens_per_gpu, hidden=model.hidden, experts_per_token=k, ep=d,
            direction="forward") / moe.ALL_TO_ALLS_PER_PASS,
        "expert_flops": moe.expert_flops_per_gpu_layer(tokens=tokens_per_gpu, hidden=model.hidden,
                                                       moe_ffn=model.moe_ffn, experts_per_token=k),
        "capacity_factor": state["capacity_factor"],
    }


# -- the output region ------------------------------------------------------------------
CARDS = ("active_params", "experts_per_gpu", "capacity", "dropped", "comm_over_compute", "state_per_gpu_bytes")
COSTLY = 0.2  # all-to-all over compute above which the sentence calls it a large share
# (from 1 up it outlasts the compute: common on a real DGX, whose X grew faster than β)


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """Stat cards, the five figures, the sentence, the table of values."""
    model = MOE_MODELS[state["model"]]
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in CARDS], loc)
    routes, load, cap = routing(model, state)
    return (f'{cards}{figure(model, state, routes, load, v, f, loc)}'
            f'<p class="w-sentence">{sentence(model, state, v, f, loc)}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


def _link_name(key: str, state: Mapping[str, Any], loc: Locale) -> str:
    return loc.t(f"moe.figure.link_{key}", bandwidth=loc.format("bytes_per_s", link_bandwidths(state)[key]))


def sentence(model: Any, state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    """Three or four sentences: the model (and ep clamped), the batch, the all-to-all, memory."""
    S = lambda key, **kw: loc.h(f"moe.{key}", **kw)  # noqa: E731
    ep, d = int(state["ep"]), int(v["ep_used"])
    parts = [S("sentence_intro_shared" if model.shared_experts else "sentence_intro", model=model.name,
               total=f["total_params"], active=f["active_params"], fraction=f["active_fraction"],
               k=loc.integer(model.experts_per_token), experts=loc.integer(model.experts),
               shared=loc.integer(model.shared_experts))]
    if ep > d:
        parts.append(S("sentence_clamp", model=model.name, experts=loc.integer(model.experts), ep=loc.integer(ep)))
    route = dict(tokens=loc.integer(state["tokens"]), copies=f["routed_copies"], k=loc.integer(model.experts_per_token),
                 capacity=f["capacity"], factor=loc.number(state["capacity_factor"]), max_load=f["max_load"],
                 dropped=f["dropped"], fraction=f["dropped_fraction"])
    parts.append(S("sentence_drop" if v["dropped"] else "sentence_no_drop", **route))
    link = state["link"]
    other = LINK_KEYS[1 - LINK_KEYS.index(link)]
    if d == 1:
        parts.append(S("sentence_comm_single", experts=loc.integer(model.experts), compute=f["expert_compute_time"],
                       seq=f["tokens_per_gpu"]))
    else:
        ratio = v["comm_over_compute"]
        key = ("sentence_comm_slower" if ratio >= 1 else
               "sentence_comm_costly" if ratio >= COSTLY else "sentence_comm_cheap")
        parts.append(S(key, ep=loc.integer(d), per_gpu=f["experts_per_gpu"], seq=f["tokens_per_gpu"],
                       sent=f["all_to_all_sent_per_gpu_layer_bytes"], link=_link_name(link, state, loc),
                       comm=f["all_to_all_time"], compute=f["expert_compute_time"], ratio=f["comm_over_compute"],
                       other_link=_link_name(other, state, loc), other_comm=f[f"all_to_all_time_{other}"]))
    mem = dict(experts=f["expert_state_per_gpu_bytes"], rest=f["rest_state_per_gpu_bytes"],
               state=f["state_per_gpu_bytes"], gpu=f["gpu_memory_bytes"], ep=loc.integer(d))
    if v["fits"]:
        parts.append(S("sentence_mem_fits", **mem))
    elif v["rest_state_per_gpu_bytes"] > v["gpu_memory_bytes"]:
        parts.append(S("sentence_mem_rest", **mem))
    else:
        parts.append(S("sentence_mem_experts", **mem))
    return join_sentences(*parts)


# -- the figure -------------------------------------------------------------------------
# SVGs 400 units wide (legible on a 375 px phone); headings, legends and notes are HTML.
WIDTH = 400
GPU_CLASSES = tuple(f"w-tp-g{i}" for i in range(8))  # one colour per GPU, per node past 8 GPUs (tp's palette)
TEXT_W = 7.8  # width of a character of figure text at the phone's 14 px, in figure units
BLOCKS = 8  # rows of the routed-batch figure: E/8 experts each (Mixtral 1, DeepSeek-V3 32)


# Notes that say what a model's own training did (DeepSeek-V3 report, Sec. 2.1.2 and 3.2).
MODEL_NOTES = {"deepseek-v3": "deepseek"}
# DeepSeek-V3's training layout, a fact of the paper rather than of calc, for its memory note.
DEEPSEEK_V3_PP = 16  # DeepSeek-V3 report Sec. 3.2: 16-way pipeline parallelism
DEEPSEEK_V3_EP = 64  # DeepSeek-V3 report Sec. 3.2: 64-way expert parallelism spanning 8 nodes


def _noted(model: Any, key: str) -> str:
    suffix = MODEL_NOTES.get(model.key)
    return f"{key}_{suffix}" if suffix else key


def _colour(index: int) -> str:
    return GPU_CLASSES[index % len(GPU_CLASSES)]


def _expert_range(first: int, count: int) -> str:
    return f"E{first}" if count == 1 else f"E{first}–{first + count - 1}"


def _placement_svg(model: Any, d: int, load: tuple[int, ...], cap: int, loc: Locale, title: str, desc: str) -> str:
    """ep boxes, 8 to a row (one row per node past 8 GPUs), each with its E/ep experts
    as cells in its colour, outlined in red when the batch sends an expert more than C."""
    E = model.experts
    per_gpu = E // d
    cols = min(d, GPUS_PER_NODE)
    rows = math.ceil(d / cols)
    gap, pad, head = 4.0, 3.0, 15.0
    box_w = (WIDTH - 4 - (cols - 1) * gap) / cols
    if E <= 16:  # Mixtral: one row of labelled cells
        per_row, cell_h = per_gpu, 18.0
    else:  # DeepSeek-V3: a grid of small cells, 8 rows inside a node, fewer past it
        per_row = per_gpu // 8 if d <= GPUS_PER_NODE else min(per_gpu, 4)
        cell_h = 9.0
    cell_gap = 1.5
    cell_w = (box_w - 2 * pad - (per_row - 1) * cell_gap) / per_row
    cell_rows = math.ceil(per_gpu / per_row)
    box_h = head + cell_rows * (cell_h + cell_gap) - cell_gap + pad
    node_pad = 3.0 if d > GPUS_PER_NODE else 0.0
    per_colour = d // units(d)[0]  # GPUs of one colour: 1, or the 8 of a node past 8 GPUs
    row_pitch = box_h + gap + 2 * node_pad
    parts = []
    for g in range(d):
        r, c = divmod(g, cols)
        x = 2 + c * (box_w + gap)
        y = 2 + node_pad + r * row_pitch
        parts.append(f'<rect class="w-moe-gpu" x="{num(x)}" y="{num(y)}" width="{num(box_w)}" height="{num(box_h)}" rx="2"/>')
        label = loc.t("moe.figure.gpu", index=loc.integer(g))
        if len(label) * TEXT_W > box_w - 4:  # two-digit GPUs in a node of eight: the number only
            label = loc.integer(g)
        parts.append(f'<text class="w-fig-tick" x="{num(x + box_w / 2)}" y="{num(y + 11)}" text-anchor="middle">'
                     f'{esc(label)}</text>')
        for i in range(per_gpu):
            e = g * per_gpu + i
            cr, cc = divmod(i, per_row)
            cx = x + pad + cc * (cell_w + cell_gap)
            cy = y + head + cr * (cell_h + cell_gap)
            hot = " w-moe-hot" if load[e] > cap else ""
            parts.append(f'<rect class="{_colour(g // per_colour)}{hot}" x="{num(cx)}" y="{num(cy)}" width="{num(cell_w)}" height="{num(cell_h)}"/>')
            if E <= 16 and cell_w >= 18:
                parts.append(f'<text class="w-fig-value w-on-bar" x="{num(cx + cell_w / 2)}" y="{num(cy + 13)}"'
                             f' text-anchor="middle">E{e}</text>')
    if d > GPUS_PER_NODE:
        for r in range(rows):
            y = 2 + r * row_pitch
            parts.append(f'<rect class="w-p3d-node" x="0.5" y="{num(y - 1.5)}" width="{WIDTH - 1}"'
                         f' height="{num(box_h + 2 * node_pad + 3)}" rx="3"/>')
    height = 2 + rows * row_pitch + 2
    return svg("w-moe-place", WIDTH, math.ceil(height), "".join(parts), title, desc)


MX_X, MX_W = 66.0, 330.0  # the routed-batch matrix: labels left of MX_X, tokens across MX_W
MX_TOP, ROW_H = 20.0, 13.0


def _routing_svg(model: Any, d: int, routes: tuple[tuple[int, ...], ...], loc: Locale, title: str, desc: str) -> str:
    """Tokens as columns grouped by home GPU (node), expert blocks as rows with the colour
    of the GPU (node) that holds them; a cell is filled where a token sends a copy, darker
    for more copies in one block (DeepSeek-V3's 32-expert blocks). A pale background marks
    the blocks where a copy stays on its GPU (node)."""
    E, T = model.experts, len(routes)
    n_units, kind = units(d)
    block = E // BLOCKS
    per_unit_experts = E // n_units
    col_w = MX_W / T
    group_w = MX_W / n_units
    parts = []
    for u in range(n_units):  # the home groups: coloured band, label, and the "stays" region
        gx = MX_X + u * group_w
        parts.append(f'<rect class="{_colour(u)} w-moe-band" x="{num(gx + 0.5)}" y="2" width="{num(group_w - 1)}" height="14"/>')
        label = loc.t(f"moe.figure.{kind}_short", index=loc.integer(u)) if group_w >= 60 else loc.integer(u)
        parts.append(f'<text class="w-fig-tick" x="{num(gx + group_w / 2)}" y="13" text-anchor="middle">{esc(label)}</text>')
        rows = [r for r in range(BLOCKS) if (r * block) // per_unit_experts == u]
        ys = MX_TOP + rows[0] * ROW_H
        parts.append(f'<rect class="w-moe-stay" x="{num(gx)}" y="{num(ys)}" width="{num(group_w)}"'
                     f' height="{num(len(rows) * ROW_H)}"/>')
    parts.append(f'<text class="w-fig-tick" x="{num(MX_X - 6)}" y="13" text-anchor="end">'
                 f'{esc(loc.t(f"moe.figure.home_{kind}"))}</text>')
    for r in range(BLOCKS):
        y = MX_TOP + r * ROW_H
        holder = (r * block) // per_unit_experts
        parts.append(f'<text class="w-fig-tick" x="{num(MX_X - 8)}" y="{num(y + 10)}" text-anchor="end">'
                     f'{esc(_expert_range(r * block, block))}</text>')
        parts.append(f'<rect class="{_colour(holder)}" x="{num(MX_X - 5)}" y="{num(y + 1)}" width="3" height="{num(ROW_H - 2)}"/>')
    for t, chosen in enumerate(routes):
        x = MX_X + t * col_w
        per_block = [0] * BLOCKS
        for e in chosen:
            per_block[e // block] += 1
        for r, n in enumerate(per_block):
            if not n:
                continue
            holder = (r * block) // per_unit_experts
            shade = "" if block == 1 else f" w-moe-n{min(n, 3)}"
            parts.append(f'<rect class="{_colour(holder)}{shade}" x="{num(x + 0.4)}" y="{num(MX_TOP + r * ROW_H + 1)}"'
                         f' width="{num(max(col_w - 0.8, 0.8))}" height="{num(ROW_H - 2)}"/>')
    for u in range(1, n_units):  # separators between home groups
        gx = MX_X + u * group_w
        parts.append(f'<line class="w-moe-sep" x1="{num(gx)}" y1="2" x2="{num(gx)}" y2="{num(MX_TOP + BLOCKS * ROW_H)}"/>')
    return svg("w-moe-route", WIDTH, math.ceil(MX_TOP + BLOCKS * ROW_H + 2), "".join(parts), title, desc)


def _dispatch_svg(counts: tuple[tuple[int, ...], ...], kind: str, loc: Locale, title: str, desc: str) -> str:
    """The dispatch all-to-all of the batch: copies each GPU (node) sends each GPU (node),
    [from][to]; the diagonal stays, the rest crosses the link."""
    n = len(counts)
    cell = min(30.0, 208.0 / n)
    x0, y0 = 96.0, 30.0
    hi = max([counts[i][j] for i in range(n) for j in range(n) if i != j] or [0])
    parts = [f'<text class="w-fig-tick" x="{num(x0 + n * cell / 2)}" y="11" text-anchor="middle">'
             f'{esc(loc.t(f"moe.figure.to_{kind}"))}</text>',
             f'<text class="w-fig-tick" x="{num(x0 - 6)}" y="{num(y0 - 6)}" text-anchor="end">'
             f'{esc(loc.t(f"moe.figure.from_{kind}"))}</text>']
    for j in range(n):
        parts.append(f'<text class="w-fig-tick" x="{num(x0 + j * cell + cell / 2)}" y="{num(y0 - 6)}"'
                     f' text-anchor="middle">{loc.integer(j)}</text>')
    for i in range(n):
        y = y0 + i * cell
        parts.append(f'<rect class="{_colour(i)}" x="{num(x0 - 5)}" y="{num(y + 1)}" width="3" height="{num(cell - 2)}"/>')
        parts.append(f'<text class="w-fig-tick" x="{num(x0 - 8)}" y="{num(y + cell / 2 + 4)}" text-anchor="end">'
                     f'{loc.integer(i)}</text>')
        for j in range(n):
            x = x0 + j * cell
            c = counts[i][j]
            if i == j:
                parts.append(f'<rect class="w-moe-stay w-moe-cell" x="{num(x)}" y="{num(y)}" width="{num(cell)}" height="{num(cell)}"/>')
            else:
                opacity = 0.12 + 0.68 * c / hi if hi else 0.12
                parts.append(f'<rect class="w-moe-send w-moe-cell" x="{num(x)}" y="{num(y)}" width="{num(cell)}"'
                             f' height="{num(cell)}" fill-opacity="{num(opacity)}"/>')
            parts.append(f'<text class="{"w-fig-value" if c else "w-fig-tick"}" x="{num(x + cell / 2)}" y="{num(y + cell / 2 + 4)}"'
                         f' text-anchor="middle">{loc.integer(c)}</text>')
    return svg("w-moe-dispatch", WIDTH, math.ceil(y0 + n * cell + 2), "".join(parts), title, desc)


LD_X, LD_W, LD_TOP, LD_H = 30.0, 366.0, 14.0, 84.0


def _load_svg(model: Any, d: int, load: tuple[int, ...], cap: int, loc: Locale, title: str, desc: str) -> str:
    """Token copies per expert in the batch, in the colour of the GPU that holds it; the
    part above the capacity C in red; C as a dashed line."""
    E = len(load)
    per_colour = E // units(d)[0]  # experts of one colour: those of a GPU, or of a node past 8 GPUs
    top = max(max(load), cap) * 1.08
    scale = LD_H / top
    base = LD_TOP + LD_H
    bar_w = LD_W / E
    gap = min(4.0, bar_w * 0.18) if E <= 16 else 0.0
    labels = []  # drawn last, over the capacity line
    parts = [f'<line class="w-grid" x1="{LD_X}" y1="{num(base)}" x2="{LD_X + LD_W}" y2="{num(base)}"/>',
             f'<text class="w-fig-tick" x="{num(LD_X - 4)}" y="{num(base + 4)}" text-anchor="end">0</text>']
    for e, n in enumerate(load):
        x = LD_X + e * bar_w + gap / 2
        w = bar_w - gap
        kept = min(n, cap)
        if kept:
            parts.append(f'<rect class="{_colour(e // per_colour)}" x="{num(x)}" y="{num(base - kept * scale)}"'
                         f' width="{num(w)}" height="{num(kept * scale)}"/>')
        if n > cap:
            parts.append(f'<rect class="w-moe-drop" x="{num(x)}" y="{num(base - n * scale)}" width="{num(w)}"'
                         f' height="{num((n - cap) * scale)}"/>')
        if E <= 16:
            labels.append(f'<text class="w-fig-value w-bw-halo" x="{num(x + w / 2)}" y="{num(base - n * scale - 3)}"'
                          f' text-anchor="middle">{loc.integer(n)}</text>')
            parts.append(f'<text class="w-fig-tick" x="{num(x + w / 2)}" y="{num(base + 13)}" text-anchor="middle">E{e}</text>')
    if E > 16:  # group labels: GPUs inside a node, nodes past it
        n_units, kind = units(d)
        group_w = LD_W / n_units
        for u in range(n_units):
            gx = LD_X + u * group_w
            label = loc.t(f"moe.figure.{kind}_short", index=loc.integer(u)) if group_w >= 60 else loc.integer(u)
            parts.append(f'<text class="w-fig-tick" x="{num(gx + group_w / 2)}" y="{num(base + 13)}" text-anchor="middle">{esc(label)}</text>')
            if u:
                parts.append(f'<line class="w-moe-sep" x1="{num(gx)}" y1="{LD_TOP}" x2="{num(gx)}" y2="{num(base + 3)}"/>')
        parts.append(f'<text class="w-fig-tick" x="{num(LD_X - 4)}" y="{num(base - max(load) * scale + 4)}"'
                     f' text-anchor="end">{loc.integer(max(load))}</text>')
    cap_y = base - cap * scale
    parts.append(f'<line class="w-moe-cap" x1="{LD_X}" y1="{num(cap_y)}" x2="{LD_X + LD_W}" y2="{num(cap_y)}"/>')
    parts.append(f'<text class="w-fig-note w-moe-cap-label w-bw-halo" x="{LD_X + LD_W}" y="{num(cap_y - 3)}"'
                 f' text-anchor="end">{esc(loc.t("moe.figure.cap_short", capacity=loc.integer(cap)))}</text>')
    parts += labels
    return svg("w-moe-load", WIDTH, math.ceil(base + 17), "".join(parts), title, desc)


TM_X, TM_MAX = 96.0, 200.0


def _time_svg(d: int, link: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """The experts' compute and the all-to-all time over each link, linear scale, the link
    not chosen faded; a dashed line carries the compute time down."""
    rows = (("expert_compute_time", "w-c3", loc.t("moe.figure.compute")),
            ("all_to_all_time_nvlink", "w-c1", loc.t("moe.figure.link_short_nvlink")),
            ("all_to_all_time_network", "w-c2", loc.t("moe.figure.link_short_network")))
    scale = TM_MAX / max(v[key] for key, _, _ in rows)
    parts = []
    for row, (key, cls, label) in enumerate(rows):
        y = 4 + row * 28
        chosen = row == 0 or key == f"all_to_all_time_{link}"
        end = TM_X + v[key] * scale
        value = loc.t("moe.figure.no_comm") if row and d == 1 else f[key]
        muted = "" if chosen else " w-moe-muted"
        parts.append(f'<g><text class="w-fig-note{muted}" x="{TM_X - 6}" y="{y + 14}" text-anchor="end">{esc(label)}</text>'
                     f'<rect class="{cls}{"" if chosen else " w-tp-other"}" x="{TM_X}" y="{y}" width="{num(v[key] * scale)}" height="20"/>'
                     f'<text class="{"w-fig-value" if chosen else "w-fig-note w-moe-muted"}" x="{num(end + 5)}" y="{y + 14}">{esc(value)}</text></g>')
    compute_x = TM_X + v["expert_compute_time"] * scale
    parts.append(f'<line class="w-tp-ref" x1="{num(compute_x)}" y1="0" x2="{num(compute_x)}" y2="88"/>')
    parts.append(f'<line class="w-grid" x1="{TM_X}" y1="0" x2="{TM_X}" y2="88"/>')
    return svg("w-moe-time", WIDTH, 90, "".join(parts), title, desc)


MEM_X, MEM_W = 58.0, 250.0
MEM_LO, MEM_HI = 1e10, 2e13  # 10 GB .. 20 TB, log scale
MEM_TICKS = (1e10, 1e11, 1e12, 1e13)
MEM_ROW, MEM_TOP = 17.0, 16.0


def _mem_x(value: float) -> float:
    return MEM_X + MEM_W * math.log10(value / MEM_LO) / math.log10(MEM_HI / MEM_LO)


def _memory_svg(model: Any, d: int, v: Mapping[str, float], loc: Locale, title: str, desc: str) -> str:
    """The training state per GPU for every ep option on a log scale: the bars approach the
    rest of the model (dashed, not divided by ep); the GPU's memory is the red line."""
    parts = []
    bottom = MEM_TOP + len(EP_OPTIONS) * MEM_ROW
    for tick in MEM_TICKS:
        x = _mem_x(tick)
        parts.append(f'<line class="w-grid" x1="{num(x)}" y1="{num(MEM_TOP - 2)}" x2="{num(x)}" y2="{num(bottom)}"/>'
                     f'<text class="w-fig-tick" x="{num(x)}" y="{num(bottom + 12)}" text-anchor="middle">'
                     f'{esc(loc.format("bytes", tick))}</text>')
    for row, option in enumerate(EP_OPTIONS):
        ep = int(option)
        y = MEM_TOP + row * MEM_ROW
        current = ep == d
        # the rows not chosen: faded bars, muted but readable text (a faded group would
        # leave its labels below the contrast a reader needs, in dark mode above all)
        bar_cls = "w-c1" if current else "w-c1 w-tp-other"
        label_cls = "w-fig-value" if current else "w-fig-note w-moe-muted"
        parts.append(f'<g><text class="{label_cls}" x="{num(MEM_X - 6)}" y="{num(y + 11)}" text-anchor="end">'
                     f'{esc(loc.t("moe.figure.ep_row", ep=loc.integer(ep)))}</text>')
        if model.experts % ep:
            parts.append(f'<text class="w-fig-note w-moe-muted w-bw-halo" x="{num(MEM_X + 4)}" y="{num(y + 11)}">'
                         f'{esc(loc.t("moe.figure.ep_impossible", experts=loc.integer(model.experts)))}</text></g>')
            continue
        experts, rest = state_by_ep(model, ep)
        total = experts + rest
        end = _mem_x(total)
        parts.append(f'<rect class="{bar_cls}" x="{MEM_X}" y="{num(y + 2)}" width="{num(end - MEM_X)}" height="{num(MEM_ROW - 5)}"/>'
                     f'<text class="{label_cls} w-bw-halo" x="{num(end + 4)}" y="{num(y + 11)}">{esc(loc.format("bytes", total))}</text></g>')
    rest_x = _mem_x(v["rest_state_per_gpu_bytes"])
    gpu_x = _mem_x(v["gpu_memory_bytes"])
    parts.append(f'<line class="w-moe-rest" x1="{num(rest_x)}" y1="{num(MEM_TOP - 4)}" x2="{num(rest_x)}" y2="{num(bottom + 2)}"/>')
    parts.append(f'<line class="w-limit" x1="{num(gpu_x)}" y1="{num(MEM_TOP - 4)}" x2="{num(gpu_x)}" y2="{num(bottom + 2)}"/>')
    gpu_label = esc(loc.t("moe.figure.gpu_line", memory=loc.format("bytes", v["gpu_memory_bytes"])))
    parts.append(line_label(gpu_x, 10, gpu_label, WIDTH, "w-fig-note w-moe-limit-label"))
    return svg("w-moe-mem", WIDTH, math.ceil(bottom + 15), "".join(parts), title, desc)


def figure(model: Any, state: Mapping[str, Any], routes: tuple[tuple[int, ...], ...], load: tuple[int, ...],
           v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    L = lambda key, **kw: loc.t(f"moe.figure.{key}", **kw)  # noqa: E731
    ep, d = int(state["ep"]), int(v["ep_used"])
    E, k, cap = model.experts, model.experts_per_token, int(v["capacity"])
    n_units, kind = units(d)
    counts = moe.dispatch_counts(routes, experts=E, ep=n_units)
    link = state["link"]
    I = loc.integer
    parts = ['<figure class="w-fig w-moe-fig">']

    heading = L("place", model=model.name, experts=I(E), ep=I(d), per_gpu=f["experts_per_gpu"])
    parts.append(f'<figcaption class="w-fig-heading">{esc(heading)}</figcaption>')
    if ep > d:
        parts.append(f'<p class="w-moe-warn">{esc(L("clamp", model=model.name, experts=I(E), ep=I(ep)))}</p>')
    hot = len([n for n in load if n > cap])
    place_desc = L("place_desc", ep=I(d), per_gpu=f["experts_per_gpu"], hot=I(hot), capacity=f["capacity"])
    parts.append(_placement_svg(model, d, load, cap, loc, heading, place_desc))
    legend = [f'<li><span class="w-swatch w-moe-swatch-hot"></span>{esc(L("hot", capacity=f["capacity"]))}</li>']
    if d > GPUS_PER_NODE:
        legend.append(f'<li><span class="w-swatch w-p3d-node-swatch"></span>'
                      f'{esc(L("node", per_node=I(GPUS_PER_NODE), nodes=f["nodes"]))}</li>')
    parts.append(f'<ul class="w-legend">{"".join(legend)}</ul>')
    if E > 16 and d > 1:
        parts.append(f'<p class="w-moe-note">{esc(L("place_note", per_gpu=f["experts_per_gpu"]))}</p>')

    route_heading = L("route", tokens=I(state["tokens"]), k=I(k), seed=I(state["seed"]),
                      skew=loc.number(state["skew"]))
    route_desc = L("route_desc", tokens=I(state["tokens"]), k=I(k), copies=f["routed_copies"],
                   remote=f["batch_remote_copies"], fraction=f["batch_remote_fraction"])
    parts.append(f'<p class="w-fig-heading">{esc(route_heading)}</p>')
    parts.append(_routing_svg(model, d, routes, loc, route_heading, route_desc))
    block = E // BLOCKS
    note = L("route_note_blocks", block=I(block), k=I(k)) if block > 1 else L("route_note", k=I(k))
    parts.append(f'<p class="w-moe-note">{esc(note)}</p>')

    dispatch_heading = L(f"dispatch_{kind}", units=I(n_units))
    if n_units == 1:
        summary = L("dispatch_single", copies=f["routed_copies"])
    else:
        summary = L(f"dispatch_summary_{kind}", remote=f["batch_remote_copies"], copies=f["routed_copies"],
                    fraction=f["batch_remote_fraction"], balanced=loc.percent((n_units - 1) / n_units))
    parts.append(f'<p class="w-fig-heading">{esc(dispatch_heading)}</p>')
    parts.append(_dispatch_svg(counts, kind, loc, dispatch_heading, summary))
    parts.append(f'<p class="w-moe-note">{esc(summary)}</p>')

    load_heading = L("load", capacity=f["capacity"], k=I(k), tokens=I(state["tokens"]), experts=I(E),
                     factor=loc.number(state["capacity_factor"]))
    load_desc = L("load_desc", capacity=f["capacity"], max_load=f["max_load"], dropped=f["dropped"],
                  copies=f["routed_copies"], fraction=f["dropped_fraction"])
    parts.append(f'<p class="w-fig-heading">{esc(load_heading)}</p>')
    parts.append(_load_svg(model, d, load, cap, loc, load_heading, load_desc))
    parts.append(f'<ul class="w-legend"><li><span class="w-swatch w-moe-swatch-cap"></span>{esc(L("cap_line", capacity=f["capacity"]))}</li>'
                 f'<li><span class="w-swatch w-moe-swatch-drop"></span>{esc(L("dropped", dropped=f["dropped"], fraction=f["dropped_fraction"]))}</li></ul>')
    parts.append(f'<p class="w-moe-note">{esc(L(_noted(model, "load_note")))}</p>')

    # Only the book's own machine is illustrative; a preset is a real DGX and is named.
    machine = state["machine"]
    machine_name = machine_label("moe", machine, loc)
    time_heading = (L("time", seq=f["tokens_per_gpu"], ep=I(d), gpu_flops=f["gpu_flops"]) if machine == "book" else
                    L("time_machine", seq=f["tokens_per_gpu"], ep=I(d), gpu_flops=f["gpu_flops"], machine=machine_name))
    time_desc = L("time_desc", compute=f["expert_compute_time"], nvlink=f["all_to_all_time_nvlink"],
                  network=f["all_to_all_time_network"], sent=f["all_to_all_sent_per_gpu_layer_bytes"])
    parts.append(f'<p class="w-fig-heading">{esc(time_heading)}</p>')
    parts.append(_time_svg(d, link, v, f, loc, time_heading, time_desc))
    if d == 1:
        time_note = L("time_note_single")
    elif d > GPUS_PER_NODE:
        time_note = L("time_note_nodes", ep=I(d), nodes=f["nodes"], per_node=I(GPUS_PER_NODE))
    else:
        time_note = L("time_note", sent=f["all_to_all_sent_per_gpu_layer_bytes"], ffn=I(model.moe_ffn))
    parts.append(f'<p class="w-moe-note">{esc(time_note)}</p>')

    mem_heading = (L("memory", gpu=f["gpu_memory_bytes"]) if machine == "book" else
                   L("memory_machine", gpu=f["gpu_memory_bytes"], machine=machine_name))
    mem_desc = L("memory_desc", ep=I(d), experts=f["expert_state_per_gpu_bytes"], rest=f["rest_state_per_gpu_bytes"],
                 state=f["state_per_gpu_bytes"], gpu=f["gpu_memory_bytes"])
    parts.append(f'<p class="w-fig-heading">{esc(mem_heading)}</p>')
    parts.append(_memory_svg(model, d, v, loc, mem_heading, mem_desc))
    parts.append(f'<ul class="w-legend"><li><span class="w-swatch w-c1"></span>{esc(L("mem_bar"))}</li>'
                 f'<li><span class="w-swatch w-moe-swatch-rest"></span>{esc(L("mem_rest", rest=f["rest_state_per_gpu_bytes"]))}</li>'
                 f'<li><span class="w-swatch w-moe-swatch-limit"></span>{esc(L("gpu_line", memory=f["gpu_memory_bytes"]))}</li></ul>')
    if MODEL_NOTES.get(model.key) == "deepseek":
        memory_note = L("memory_note_deepseek", dense=I(model.dense_layers), pp=I(DEEPSEEK_V3_PP),
                        ep=I(DEEPSEEK_V3_EP), nodes=I(math.ceil(DEEPSEEK_V3_EP / GPUS_PER_NODE)))
    else:
        memory_note = L(_noted(model, "memory_note"))
    parts.append(f'<p class="w-moe-note">{esc(memory_note)}</p>')
    parts.append('</figure>')
    return "".join(parts)
