"""Widget `cp`: context parallelism, the sequence split over cp GPUs.

Every layer but attention works token by token, so cp GPUs that each hold s/cp tokens
of one sequence split its activations and its work cp ways (calc.context). Attention
needs the earlier tokens' keys and values: ring attention passes K/V blocks around a
ring of GPUs, cp − 1 times per layer, behind the compute (Liu et al. 2023);
DeepSpeed-Ulysses turns the token split into a head split with all-to-alls (Jacobs et
al. 2023), so cp can be at most the number of K/V heads. Llama 3's balanced split (2·cp
chunks, rank i holds chunks i and 2·cp − 1 − i) gives every rank the same causal work.

The figure draws, from calc: the sequence as chunks coloured by the GPU that holds them;
the ring step by step (one row per step, one column per GPU, each cell naming whose K/V
block the GPU holds, shaded by the causal work it does with it, the busiest GPU of each
step, and each GPU's total); one ring step's compute against its transfer, forward and
backward, and the tokens per GPU against the fewest that hide the transfer; the bytes a
GPU sends per layer with ring and with Ulysses side by side (Ulysses at the largest cp it
allows when the chosen cp exceeds its K/V heads); and the activation memory per GPU for
every cp against the machine's GPU (selective recomputation, micro-batch 1, model states
left to ZeRO/FSDP). The `cp` control starts at 2: one GPU is the memory figure's
reference row, and with one GPU `split` and `link` would change nothing, while every
control changes the figure in every state.

The machine (calc.hardware.MACHINES) sets X, both links and the GPU's memory: by default
the seed's illustrative one (80 GB, 150 TFLOP/s, NVLink 450 GB/s, network 50 GB/s, half
an A100's compute with an H100's links); on a real server the threshold
(h_kv/a) · X/(w·β) follows X/β of that generation, and the memory figure measures
against its GPU.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc import context
from calc.hardware import GPUS_PER_NODE, get_machine
from calc.memory import training_state_bytes
from calc.models import MODELS, RECENT_MODELS, param_count

from ..framework.html import esc, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, NumberChoice
from ._common import MACHINE, machine_label, all_values_table, output_label

NAME = "cp"
LINK_KEYS = ("nvlink", "network")
MICRO_BATCH = 1  # one sequence per micro-batch: a long context fills a GPU by itself
RECOMPUTE = "selective"  # the s × s attention scores are not stored (FlashAttention keeps none)
TP_NODE = GPUS_PER_NODE  # the other lever the chapter weighs: tensor + sequence parallel over one node

# Dense models with grouped-query or full attention: Llama 2 (MODELS) and Llama 3.1
# (RECENT_MODELS, trained to 128K in a long-context stage). Mixtral's experts are the
# `moe` widget's, and DeepSeek-V3's latent attention has no K/V heads to pass around.
CP_MODEL_KEYS = ("llama2-7b", "llama2-70b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b")
CP_MODELS = {key: {**MODELS, **RECENT_MODELS}[key] for key in CP_MODEL_KEYS}
DEFAULT_MODEL = "llama3.1-8b"

SEQ_LENS = tuple(str(2 ** e) for e in range(13, 21))  # 8K … 1M tokens
CPS = ("2", "4", "8", "16", "32")
MEMORY_CPS = (1, 2, 4, 8, 16, 32)  # rows of the memory figure: one GPU, then every choice

CONTROLS = (
    Choice("model", tuple(CP_MODELS), DEFAULT_MODEL, labels={k: m.name for k, m in CP_MODELS.items()}),
    NumberChoice("seq_len", SEQ_LENS, "131072"),
    NumberChoice("cp", CPS, "8", radio=True, labels={c: c for c in CPS}),
    Choice("split", context.SPLITS, "balanced", radio=True),
    Choice("link", LINK_KEYS, "nvlink", radio=True),
    MACHINE,  # X, NVLink, network and M_GPU of one preset; the book's illustrative one by default
)

OUTPUTS: dict[str, str] = {
    "tokens_per_gpu": "integer",
    "chunk_tokens": "integer",
    "kv_block_bytes": "bytes",
    "ring_step_compute_time": "seconds",
    "ring_step_transfer_time": "seconds",
    "ring_step_backward_compute_time": "seconds",
    "ring_step_backward_transfer_time": "seconds",
    "ring_transfer_over_compute": "ratio",
    "transfer_hidden": "yesno",
    "min_block_tokens": "integer",
    "ring_sent_per_gpu_layer_bytes": "bytes",
    "ring_transfer_time_layer": "seconds",
    "ring_exposed_time_layer": "seconds",
    "attention_time_layer": "seconds",
    "attention_imbalance": "ratio",
    "ulysses_max_cp": "integer",
    "ulysses_possible": "yesno",
    "ulysses_cp": "integer",
    "ulysses_sent_per_gpu_layer_bytes": "bytes",
    "ulysses_transfer_time_layer": "seconds",
    "activation_per_gpu_bytes": "bytes",
    "kv_buffer_bytes": "bytes",
    "memory_per_gpu_bytes": "bytes",
    "activation_single_gpu_bytes": "bytes",
    "gpu_memory_bytes": "bytes",
    "fits": "yesno",
    "cp_needed": "integer",
    "link_bytes_per_s": "bytes_per_s",
    "gpu_flops": "flops_per_s",  # X of the chosen machine
    # The model's shape and the other levers, for the chapter's prose and exercises
    "seq_len": "integer",
    "hidden": "integer",
    "layers": "integer",
    "heads": "integer",
    "kv_heads": "integer",
    "kv_hidden": "integer",
    "kv_width_ratio": "ratio",
    "ring_forward_blocks": "integer",
    "ring_blocks_per_layer": "integer",
    "ring_step_exposed_time": "seconds",
    "ulysses_over_ring": "ratio",
    "activation_tp_bytes": "bytes",
    "activation_tp_cp_bytes": "bytes",
    "full_recompute_checkpoint_bytes": "bytes",
    # What cp does not split: the whole training state, (2 + 2 + K)Ψ (ZeRO Sec. 3.1).
    "state_bytes": "bytes",
}


def _shape(model: Any, seq_len: int, cp: int) -> dict[str, int]:
    return dict(hidden=model.hidden, heads=model.heads, kv_heads=model.kv_heads, seq_len=seq_len,
                micro_batch=MICRO_BATCH, cp=cp)


def memory_parts(model: Any, seq_len: int, cp: int) -> tuple[float, float]:
    """Activations of all layers on one GPU and the two K/V blocks in flight (the one
    computed on and the one arriving; none without a ring), in bytes."""
    buffers = 2 * context.kv_block_bytes(**_shape(model, seq_len, cp)) if cp > 1 else 0.0
    return activation_bytes(model, seq_len, cp), buffers


def activation_bytes(model: Any, seq_len: int, cp: int, *, tp: int = 1, recompute: str = RECOMPUTE) -> float:
    """Activations of all layers on one GPU with cp (and tensor + sequence parallel t)."""
    per_layer = context.activation_bytes_per_gpu_layer(hidden=model.hidden, heads=model.heads, seq_len=seq_len,
                                                       micro_batch=MICRO_BATCH, cp=cp, tp=tp,
                                                       sequence_parallel=tp > 1, recompute=recompute)
    return per_layer * model.layers


def cp_needed(model: Any, seq_len: int, memory_bytes: float) -> int:
    """The smallest power of two cp whose activations and K/V blocks fit a GPU of
    ``memory_bytes`` (0 if the sequence cannot be split that finely)."""
    c = 1
    while seq_len % (2 * c) == 0:
        if math.fsum(memory_parts(model, seq_len, c)) <= memory_bytes:
            return c
        c *= 2
    return 0


def ulysses_cp(cp: int, limit: int) -> int:
    """The cp the Ulysses figures use: cp itself when it divides the K/V heads' limit,
    else the largest divisor of the limit below it."""
    return max(d for d in range(1, cp + 1) if limit % d == 0)


def work_totals(cp: int, split: str) -> list[float]:
    """Each rank's attention work over the ring, in blocks of (s/cp)² (calc.context)."""
    work = context.ring_step_work(cp, split)
    return [math.fsum(row[r] for row in work) for r in range(cp)]


def link_bandwidths(state: Mapping[str, Any]) -> dict[str, float]:
    """β of each link of the state's machine, bytes/s per GPU and direction."""
    machine = get_machine(state["machine"])
    return {"nvlink": machine.nvlink_bytes_per_s, "network": machine.network_bytes_per_s}


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    model = CP_MODELS[state["model"]]
    s, c, split = int(state["seq_len"]), int(state["cp"]), state["split"]
    gpu = get_machine(state["machine"]).gpu
    beta = link_bandwidths(state)[state["link"]]
    x = gpu.flops_per_s
    shape = _shape(model, s, c)
    block = context.kv_block_bytes(**shape)
    step = context.ring_step_times(**shape, flops_per_gpu=x, bytes_per_s=beta, split=split)
    ring_sent = context.ring_sent_per_gpu_layer_bytes(**shape)
    limit = context.ulysses_max_cp(model.heads, model.kv_heads)
    u_cp = ulysses_cp(c, limit)
    u_sent = context.ulysses_sent_per_gpu_layer_bytes(**_shape(model, s, u_cp))
    attention = context.attention_flops_per_gpu_layer(hidden=model.hidden, seq_len=s, micro_batch=MICRO_BATCH,
                                                      cp=c, split=split)
    totals = work_totals(c, split)
    act, buffers = memory_parts(model, s, c)
    single, _ = memory_parts(model, s, 1)
    memory = act + buffers
    tokens = s // c
    return {
        "tokens_per_gpu": tokens,
        "chunk_tokens": s // len(context.chunk_ranks(c, split)),
        "kv_block_bytes": block,
        "ring_step_compute_time": step.forward_compute,
        "ring_step_transfer_time": step.forward_transfer,
        "ring_step_backward_compute_time": step.backward_compute,
        "ring_step_backward_transfer_time": step.backward_transfer,
        "ring_transfer_over_compute": step.forward_transfer / step.forward_compute,
        "transfer_hidden": 1 if step.hidden else 0,
        # Compute grows as (s/cp)², the transfer as s/cp: they meet at this many tokens per
        # GPU. Balanced, it is calc.context.min_block_tokens (causal, w = ½); contiguous,
        # the busiest rank does whole blocks (w = 1) and the threshold halves.
        "min_block_tokens": tokens * step.forward_transfer / step.forward_compute,
        "ring_sent_per_gpu_layer_bytes": ring_sent,
        "ring_transfer_time_layer": ring_sent / beta,
        "ring_exposed_time_layer": (c - 1) * step.exposed,  # cp − 1 transfers, each beside one step
        "attention_time_layer": (1 + 2) * attention / x,  # forward + backward (2 × forward)
        "attention_imbalance": max(totals) / (math.fsum(totals) / c),
        "ulysses_max_cp": limit,
        "ulysses_possible": 1 if u_cp == c else 0,
        "ulysses_cp": u_cp,
        "ulysses_sent_per_gpu_layer_bytes": u_sent,
        "ulysses_transfer_time_layer": u_sent / beta,
        "activation_per_gpu_bytes": act,
        "kv_buffer_bytes": buffers,
        "memory_per_gpu_bytes": memory,
        "activation_single_gpu_bytes": single,
        "gpu_memory_bytes": gpu.memory_bytes,
        "fits": 1 if memory <= gpu.memory_bytes else 0,
        "cp_needed": cp_needed(model, s, gpu.memory_bytes),
        "link_bytes_per_s": beta,
        "gpu_flops": x,
        "seq_len": s,
        "hidden": model.hidden,
        "layers": model.layers,
        "heads": model.heads,
        "kv_heads": model.kv_heads,
        "kv_hidden": model.kv_heads * model.head_dim,  # K/V width h_kv · d_h, d_h = h/a
        "kv_width_ratio": model.kv_heads / model.heads,  # h_kv/a, the K/V width over h
        "ring_forward_blocks": c - 1,
        "ring_blocks_per_layer": round(ring_sent / block),  # 3 · (cp − 1): K/V forward, K/V and dK/dV backward
        "ring_step_exposed_time": step.exposed,
        "ulysses_over_ring": u_sent / ring_sent,
        "activation_tp_bytes": activation_bytes(model, s, 1, tp=TP_NODE),
        "activation_tp_cp_bytes": activation_bytes(model, s, c, tp=TP_NODE),
        "full_recompute_checkpoint_bytes": activation_bytes(model, s, 1, recompute="full"),
        "state_bytes": training_state_bytes(param_count(model)),
    }


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """Stat cards, the five drawings, the sentence and the table of values."""
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("tokens_per_gpu", "memory_per_gpu_bytes", "transfer_hidden", "attention_imbalance")], loc)
    return (f'{cards}{figure(state, v, f, loc)}<p class="w-sentence">{_sentence(state, v, f, loc)}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


def _link_name(state: Mapping[str, Any], loc: Locale) -> str:
    """The chosen link with its β on the state's machine: "NVLink 450 GB/s"."""
    link = state["link"]
    return loc.t(f"cp.figure.link_{link}", bandwidth=loc.format("bytes_per_s", link_bandwidths(state)[link]))


def _sentence(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    model = CP_MODELS[state["model"]]
    c = int(state["cp"])
    common = dict(cp=loc.integer(c), tokens=f["tokens_per_gpu"], seq=loc.integer(int(state["seq_len"])),
                  layers=loc.integer(model.layers), act=f["activation_per_gpu_bytes"], buffers=f["kv_buffer_bytes"],
                  memory=f["memory_per_gpu_bytes"], gpu=f["gpu_memory_bytes"], single=f["activation_single_gpu_bytes"],
                  needed=f["cp_needed"], block=f["kv_block_bytes"], link=_link_name(state, loc),
                  transfer=f["ring_step_transfer_time"], compute=f["ring_step_compute_time"],
                  min=f["min_block_tokens"], exposed=f["ring_exposed_time_layer"],
                  imbalance=f["attention_imbalance"], attention=f["attention_time_layer"],
                  ring=f["ring_sent_per_gpu_layer_bytes"], ulysses=f["ulysses_sent_per_gpu_layer_bytes"],
                  ulysses_time=f["ulysses_transfer_time_layer"], model=model.name,
                  kv=loc.integer(model.kv_heads), max=f["ulysses_max_cp"])
    if v["fits"]:
        memory = "memory_fits" if v["cp_needed"] == c else "memory_fits_spare"
    else:
        memory = "memory_over" if v["cp_needed"] else "memory_never"
    parts = dict(
        memory=loc.t(f"cp.sentence.{memory}", **common),
        ring=loc.t("cp.sentence.ring_hidden" if v["transfer_hidden"] else "cp.sentence.ring_exposed", **common),
        balance=loc.t(f"cp.sentence.balance_{state['split']}", **common),
        ulysses=loc.t("cp.sentence.ulysses_ok" if v["ulysses_possible"] else "cp.sentence.ulysses_no", **common),
    )
    return loc.h("cp.sentence.joined", **parts)


# -- the figure -------------------------------------------------------------------------
# SVGs 400 units wide (legible on a 375 px phone: 11-unit text is 10.3 px there, and the
# stylesheet sets it at 11 px or more); headings, legends and notes are HTML.
WIDTH = 400
GPU_CLASSES = tuple(f"w-cp-g{i}" for i in range(8))  # one colour per GPU (widgets.css)
WORK_CLASSES = {1.0: "w-cp-full", 0.5: "w-cp-half", 0.0: "w-cp-none"}
NUMBERED = 8  # up to this cp the ring's cells carry numbers; beyond, shading only


def _gpu_class(rank: int, cp: int) -> str:
    """Up to 8 GPUs one colour each; beyond, cp/8 neighbouring GPUs share a colour."""
    return GPU_CLASSES[rank * len(GPU_CLASSES) // max(cp, len(GPU_CLASSES))]


def _work_class(work: float) -> str:
    return WORK_CLASSES.get(work, "w-cp-half")


def _work_text(work: float, loc: Locale) -> str:
    return "½" if work == 0.5 else loc.number(work)


def _seq_svg(s: int, c: int, split: str, loc: Locale, title: str, desc: str) -> str:
    """The sequence as a bar of chunks, each in the colour of the GPU that holds it; the
    GPU's number under each chunk when it fits, token positions at both ends."""
    owners = context.chunk_ranks(c, split)
    left, span, top, height = 4.0, 392.0, 4.0, 22.0
    w = span / len(owners)
    parts = []
    for i, rank in enumerate(owners):
        x = left + i * w
        parts.append(f'<rect class="{_gpu_class(rank, c)} w-cp-chunk" x="{num(x)}" y="{num(top)}" '
                     f'width="{num(w)}" height="{num(height)}"/>')
        if w >= 13:
            parts.append(f'<text class="w-fig-tick" x="{num(x + w / 2)}" y="{num(top + height + 12)}" '
                         f'text-anchor="middle">{rank}</text>')
    parts.append(f'<rect class="w-cp-frame" x="{num(left)}" y="{num(top)}" width="{num(span)}" height="{num(height)}"/>')
    y = top + height + (26 if w >= 13 else 12)
    parts.append(f'<text class="w-fig-tick" x="{num(left)}" y="{num(y)}">{esc(loc.t("cp.figure.seq_start"))}</text>'
                 f'<text class="w-fig-tick" x="{num(left + span)}" y="{num(y)}" text-anchor="end">'
                 f'{esc(loc.t("cp.figure.seq_end", last=loc.integer(s - 1)))}</text>')
    return svg("w-cp-seq", WIDTH, math.ceil(y + 4), "".join(parts), title, desc)


def _ring_layout(c: int) -> tuple[float, float, float, float]:
    """Label column's end, column width, row height, column of the busiest GPU's work."""
    label_end = 56.0
    cell_w = min(44.0, (WIDTH - label_end - 4 - 40) / c)
    row_h = 20.0 if c <= NUMBERED else (14.0 if c <= 16 else 8.0)
    return label_end, cell_w, row_h, label_end + 4 + c * cell_w + 4


def _labelled(index: int, c: int) -> bool:
    """Rows and columns with a label: all up to 8 GPUs, every other one at 16, every
    eighth and the last at 32 (labels need about 15 units at a phone's 13 px)."""
    every = 1 if c <= NUMBERED else (2 if c <= 16 else 8)
    return index % every == 0 or (index == c - 1 and (c - 1) % every > every / 2)


def _ring_svg(c: int, split: str, loc: Locale, title: str, desc: str) -> str:
    """One row per ring step, one column per GPU: whose K/V block it holds, shaded by
    the causal work; the busiest GPU of each step; each GPU's total work as a bar."""
    holders = context.ring_holders(c)
    work = context.ring_step_work(c, split)
    totals = work_totals(c, split)
    label_end, cell_w, row_h, busy_x = _ring_layout(c)
    x0, top = label_end + 4, 32.0
    busy_w = 30.0
    L = lambda key, **kw: loc.t(f"cp.figure.{key}", **kw)  # noqa: E731
    # two header lines: the rows' axis (step ↓), the columns' axis (GPU →) and the busiest
    # column's name, then the GPU numbers over the columns
    parts = [f'<text class="w-fig-note" x="{num(x0 + c * cell_w / 2)}" y="12" text-anchor="middle">{esc(L("gpu_axis"))}</text>'
             f'<text class="w-fig-note" x="{num(busy_x + busy_w)}" y="12" text-anchor="end">{esc(L("busiest"))}</text>'
             f'<text class="w-fig-note" x="1" y="12">{esc(L("step_axis"))}</text>']
    for r in range(c):
        if _labelled(r, c):
            parts.append(f'<text class="w-fig-tick" x="{num(x0 + (r + 0.5) * cell_w)}" y="{num(top - 5)}" '
                         f'text-anchor="middle">{esc(loc.integer(r))}</text>')
    for k in range(c):
        y = top + k * row_h
        if _labelled(k, c):
            parts.append(f'<text class="w-fig-tick" x="{num(label_end)}" y="{num(y + row_h / 2 + 4)}" '
                         f'text-anchor="end">{esc(loc.integer(k))}</text>')
        for r in range(c):
            x = x0 + r * cell_w
            cls = _work_class(work[k][r])
            parts.append(f'<rect class="w-cp-cell {cls}" x="{num(x)}" y="{num(y)}" width="{num(cell_w)}" '
                         f'height="{num(row_h)}"/>')
            if c <= NUMBERED:
                parts.append(f'<text class="w-cp-num {cls}-text" x="{num(x + cell_w / 2)}" y="{num(y + row_h / 2 + 4)}" '
                             f'text-anchor="middle">{holders[k][r]}</text>')
        busiest = max(work[k])
        cls = _work_class(busiest)
        parts.append(f'<rect class="w-cp-cell {cls}" x="{num(busy_x)}" y="{num(y)}" width="{num(busy_w)}" '
                     f'height="{num(row_h)}"/>')
        if c <= NUMBERED:
            parts.append(f'<text class="w-cp-num {cls}-text" x="{num(busy_x + busy_w / 2)}" '
                         f'y="{num(y + row_h / 2 + 4)}" text-anchor="middle">{esc(_work_text(busiest, loc))}</text>')
    # each GPU's total work over the ring, bars from a common baseline
    grid_bottom = top + c * row_h
    bar_max, gap = 26.0, 16.0 if c <= NUMBERED else 6.0
    base = grid_bottom + gap + bar_max
    most = c - 0.5  # the last GPU of a contiguous split: cp − ½ blocks
    for r, total in enumerate(totals):
        h = bar_max * total / most
        x = x0 + r * cell_w
        parts.append(f'<rect class="w-cp-total" x="{num(x + cell_w * 0.15)}" y="{num(base - h)}" '
                     f'width="{num(cell_w * 0.7)}" height="{num(h)}"/>')
        if c <= NUMBERED:
            parts.append(f'<text class="w-fig-value" x="{num(x + cell_w / 2)}" y="{num(base - h - 3)}" '
                         f'text-anchor="middle">{esc(loc.number(total))}</text>')
    parts.append(f'<line class="w-grid" x1="{num(x0)}" y1="{num(base)}" x2="{num(x0 + c * cell_w)}" y2="{num(base)}"/>'
                 f'<text class="w-fig-note" x="{num(label_end)}" y="{num(base - 2)}" text-anchor="end">'
                 f'{esc(L("total"))}</text>')
    return svg("w-cp-ring", WIDTH, math.ceil(base + 4), "".join(parts), title, desc)


STEP_LABEL_END, STEP_BAR_X, STEP_BAR_MAX = 92.0, 96.0, 210.0


def _step_svg(link: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """Forward and backward: one ring step's compute and the transfer of the next K/V
    block, on one linear scale; a dashed line carries each pass's compute down."""
    L = lambda key, **kw: loc.t(f"cp.figure.{key}", **kw)  # noqa: E731
    passes = (("forward", "ring_step_compute_time", "ring_step_transfer_time"),
              ("backward", "ring_step_backward_compute_time", "ring_step_backward_transfer_time"))
    scale = STEP_BAR_MAX / max(v[key] for _, *keys in passes for key in keys)
    transfer_cls = "w-c1" if link == "nvlink" else "w-c2"
    parts, y = [], 0.0
    for name, compute_key, transfer_key in passes:
        wait = v[transfer_key] - v[compute_key]
        heading = L(f"{name}_hidden") if wait <= 0 else L(f"{name}_exposed", wait=loc.format("seconds", wait))
        parts.append(f'<text class="w-fig-value" x="4" y="{num(y + 12)}">{esc(heading)}</text>')
        y += 17
        compute_end = STEP_BAR_X + v[compute_key] * scale
        for key, cls, label in ((compute_key, "w-c3", L("compute")), (transfer_key, transfer_cls, L("transfer"))):
            end = STEP_BAR_X + v[key] * scale
            parts.append(f'<text class="w-fig-note" x="{num(STEP_LABEL_END)}" y="{num(y + 11)}" text-anchor="end">{esc(label)}</text>'
                         f'<rect class="{cls}" x="{num(STEP_BAR_X)}" y="{num(y)}" width="{num(max(v[key] * scale, 0.5))}" height="14"/>'
                         f'<text class="w-fig-value" x="{num(end + 5)}" y="{num(y + 11)}">{esc(f[key])}</text>')
            y += 18
        if wait > 0:
            parts.append(f'<rect class="w-over" x="{num(compute_end)}" y="{num(y - 19)}" '
                         f'width="{num(wait * scale)}" height="16"/>')
        parts.append(f'<line class="w-cp-ref" x1="{num(compute_end)}" y1="{num(y - 38)}" x2="{num(compute_end)}" '
                     f'y2="{num(y - 2)}"/>'
                     f'<line class="w-grid" x1="{num(STEP_BAR_X)}" y1="{num(y - 38)}" x2="{num(STEP_BAR_X)}" y2="{num(y - 2)}"/>')
        y += 6
    return svg("w-cp-step", WIDTH, math.ceil(y - 2), "".join(parts), title, desc)


AXIS_LEFT, AXIS_RIGHT, AXIS_LO, AXIS_HI = 14.0, 360.0, 1, 6  # tokens per GPU, 10 to 1,000,000


def _threshold_svg(link: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """A log axis of tokens per GPU: the zone where the transfer hides (from the
    threshold on), the threshold and the current s/cp."""
    L = lambda key, **kw: loc.t(f"cp.figure.{key}", **kw)  # noqa: E731

    def x_of(tokens: float) -> float:
        e = min(max(math.log10(tokens), AXIS_LO), AXIS_HI)
        return AXIS_LEFT + (AXIS_RIGHT - AXIS_LEFT) * (e - AXIS_LO) / (AXIS_HI - AXIS_LO)

    axis_y = 30.0
    zone = x_of(v["min_block_tokens"])
    now = x_of(v["tokens_per_gpu"])
    cls = "w-cp-zone-nvlink" if link == "nvlink" else "w-cp-zone-network"
    parts = [f'<rect class="w-cp-zone {cls}" x="{num(zone)}" y="{num(axis_y - 10)}" width="{num(AXIS_RIGHT - zone)}" height="20"/>',
             f'<line class="w-cp-axis" x1="{num(AXIS_LEFT)}" y1="{num(axis_y)}" x2="{num(AXIS_RIGHT)}" y2="{num(axis_y)}"/>']
    for e in range(AXIS_LO, AXIS_HI + 1):
        x = x_of(10.0 ** e)
        parts.append(f'<line class="w-cp-axis" x1="{num(x)}" y1="{num(axis_y - 3)}" x2="{num(x)}" y2="{num(axis_y + 3)}"/>'
                     f'<text class="w-fig-tick" x="{num(x)}" y="{num(axis_y + 40)}" text-anchor="middle">'
                     f'{esc(loc.integer(10 ** e))}</text>')
    # the threshold below the axis, the tokens per GPU above it
    parts.append(f'<line class="w-cp-mark" x1="{num(zone)}" y1="{num(axis_y - 10)}" x2="{num(zone)}" y2="{num(axis_y + 14)}"/>'
                 + _anchored(zone, axis_y + 24, esc(L("threshold", min=f["min_block_tokens"])), "w-fig-note"))
    parts.append(f'<path class="w-cp-now" d="M{num(now)} {num(axis_y - 1)}l-5 -8h10z"/>'
                 + _anchored(now, axis_y - 12, esc(L("now", tokens=f["tokens_per_gpu"])), "w-fig-value"))
    return svg("w-cp-threshold", WIDTH, math.ceil(axis_y + 44), "".join(parts), title, desc)


def _anchored(x: float, y: float, text: str, cls: str) -> str:
    """Text centred on x, kept inside the figure near its edges (`text` is escaped)."""
    if x < 70:
        return f'<text class="{cls}" x="{num(max(x - 6, 2))}" y="{num(y)}">{text}</text>'
    if x > WIDTH - 70:
        return f'<text class="{cls}" x="{num(min(x + 6, WIDTH - 2))}" y="{num(y)}" text-anchor="end">{text}</text>'
    return f'<text class="{cls}" x="{num(x)}" y="{num(y)}" text-anchor="middle">{text}</text>'


COMM_LABEL_END, COMM_BAR_X, COMM_BAR_MAX = 92.0, 96.0, 120.0


def _comm_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """Bytes each GPU sends per layer, forward and backward: ring and Ulysses; Ulysses
    drawn hollow, at the cp it allows, when the chosen cp exceeds its K/V heads."""
    L = lambda key, **kw: loc.t(f"cp.figure.{key}", **kw)  # noqa: E731
    rows = (("ring", "w-c1", L("ring_label"), "ring_sent_per_gpu_layer_bytes", "ring_transfer_time_layer"),
            ("ulysses", "w-c4" if v["ulysses_possible"] else "w-cp-na",
             L("ulysses_label") if v["ulysses_possible"] else L("ulysses_label_at", cp=f["ulysses_cp"]),
             "ulysses_sent_per_gpu_layer_bytes", "ulysses_transfer_time_layer"))
    scale = COMM_BAR_MAX / max(v[r[3]] for r in rows)
    parts = []
    for i, (_, cls, label, bytes_key, time_key) in enumerate(rows):
        y = 2 + i * 24
        end = COMM_BAR_X + v[bytes_key] * scale
        parts.append(f'<text class="w-fig-note" x="{num(COMM_LABEL_END)}" y="{num(y + 13)}" text-anchor="end">{esc(label)}</text>'
                     f'<rect class="{cls}" x="{num(COMM_BAR_X)}" y="{num(y)}" width="{num(v[bytes_key] * scale)}" height="18"/>'
                     f'<text class="w-fig-value" x="{num(end + 5)}" y="{num(y + 13)}">'
                     f'{esc(L("comm_value", bytes=f[bytes_key], time=f[time_key]))}</text>')
    height = 2 + 2 * 24
    parts.append(f'<line class="w-grid" x1="{num(COMM_BAR_X)}" y1="0" x2="{num(COMM_BAR_X)}" y2="{num(2 + 2 * 24 - 4)}"/>')
    return svg("w-cp-comm", WIDTH, height, "".join(parts), title, desc)


MEM_LABEL_END, MEM_BAR_X, MEM_BAR_END, MEM_ROW, MEM_TOP = 56.0, 60.0, 312.0, 19.0, 22.0


def _memory_svg(c: int, gpu_memory: float, f: Mapping[str, str], loc: Locale, title: str,
                desc: str, memories: Mapping[int, float]) -> str:
    """Memory per GPU for cp = 1, 2, 4 … 32 on a log scale, the chosen cp framed, the
    GPU's memory (the machine's) as a red line."""
    values = [*memories.values(), gpu_memory]
    lo = math.floor(math.log10(min(values)))
    hi = max(math.ceil(math.log10(max(values)) - 1e-9), lo + 1)

    def x_of(value: float) -> float:
        return MEM_BAR_X + (MEM_BAR_END - MEM_BAR_X) * (math.log10(value) - lo) / (hi - lo)

    bottom = MEM_TOP + len(memories) * MEM_ROW
    parts = []
    every = 1 if hi - lo <= 4 else 2
    for e in range(lo, hi + 1):
        x = x_of(10.0 ** e)
        parts.append(f'<line class="w-grid" x1="{num(x)}" y1="{num(MEM_TOP - 3)}" x2="{num(x)}" y2="{num(bottom)}"/>')
        if (e - lo) % every == 0:
            parts.append(f'<text class="w-fig-tick" x="{num(x)}" y="{num(bottom + 12)}" text-anchor="middle">'
                         f'{esc(loc.bytes(10.0 ** e))}</text>')
    for i, (cp, memory) in enumerate(memories.items()):
        y = MEM_TOP + i * MEM_ROW
        cur = cp == c
        end = x_of(memory)
        fits = memory <= gpu_memory
        bar = ("w-cp-fits" if fits else "w-cp-over") + ("" if cur else " w-cp-dim")
        text = "w-fig-value" if cur else "w-fig-note w-cp-dimtext"
        parts.append(f'<text class="{text}" x="{num(MEM_LABEL_END)}" y="{num(y + 11)}" text-anchor="end">'
                     f'{esc(loc.t("cp.figure.mem_row", cp=loc.integer(cp)))}</text>'
                     f'<rect class="{bar}" x="{num(MEM_BAR_X)}" y="{num(y + 1)}" width="{num(max(end - MEM_BAR_X, 1))}" height="13"/>'
                     f'<text class="{text} w-cp-halo" x="{num(end + 5)}" y="{num(y + 11)}">{esc(loc.bytes(memory))}</text>')
        if cur:
            parts.append(f'<rect class="w-cp-current" x="{num(MEM_BAR_X - 2)}" y="{num(y - 1)}" '
                         f'width="{num(WIDTH - MEM_BAR_X)}" height="17"/>')
    gpu_x = x_of(gpu_memory)
    parts.append(f'<line class="w-limit" x1="{num(gpu_x)}" y1="{num(MEM_TOP - 5)}" x2="{num(gpu_x)}" y2="{num(bottom)}"/>'
                 f'<text class="w-fig-note w-cp-warn" x="{num(gpu_x)}" y="{num(MEM_TOP - 8)}" text-anchor="middle">'
                 f'{esc(loc.t("cp.figure.gpu_line", memory=f["gpu_memory_bytes"]))}</text>')
    return svg("w-cp-mem", WIDTH, math.ceil(bottom + 16), "".join(parts), title, desc)


def _legend_gpus(c: int, loc: Locale) -> str:
    L = lambda key, **kw: loc.t(f"cp.figure.{key}", **kw)  # noqa: E731
    groups = min(c, len(GPU_CLASSES))
    size = c // groups
    items = []
    for g in range(groups):
        text = (L("gpu", index=loc.integer(g)) if size == 1 else
                L("gpu_range", first=loc.integer(g * size), last=loc.integer(g * size + size - 1)))
        items.append(f'<li><span class="w-swatch {GPU_CLASSES[g]}"></span>{esc(text)}</li>')
    return f'<ul class="w-legend w-cp-legend">{"".join(items)}</ul>'


def figure(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    model = CP_MODELS[state["model"]]
    s, c, split, link = int(state["seq_len"]), int(state["cp"]), state["split"], state["link"]
    L = lambda key, **kw: loc.t(f"cp.figure.{key}", **kw)  # noqa: E731
    cp_text, seq_text = loc.integer(c), loc.integer(s)
    owners = context.chunk_ranks(c, split)
    totals = work_totals(c, split)
    link_name = _link_name(state, loc)
    machine = state["machine"]
    # Only the book's own machine is illustrative; a preset is a real DGX and is named.
    on = "" if machine == "book" else "_machine"
    machine_name = machine_label("cp", state["machine"], loc)

    config = L("config", model=model.name, h=loc.integer(model.hidden), a=loc.integer(model.heads),
               kv=loc.integer(model.kv_heads), layers=loc.integer(model.layers))
    seq_heading = L(f"seq_{split}", seq=seq_text, cp=cp_text, chunks=loc.integer(len(owners)),
                    chunk=f["chunk_tokens"], tokens=f["tokens_per_gpu"])
    seq_desc = L("seq_desc", owners=", ".join(loc.integer(r) for r in owners))
    seq_note = L(f"seq_note_{split}")
    if c > len(GPU_CLASSES):
        seq_note += " " + L("seq_note_groups", size=loc.integer(c // len(GPU_CLASSES)))

    ring_heading = L("ring", cp=cp_text)
    ring_desc = L("ring_desc", cp=cp_text, totals=", ".join(loc.number(t) for t in totals),
                  imbalance=f["attention_imbalance"])
    work_legend = "".join(f'<li><span class="w-swatch w-cp-cell {cls}"></span>{esc(L(key))}</li>'
                          for cls, key in (("w-cp-full", "work_full"), ("w-cp-half", "work_half"),
                                           ("w-cp-none", "work_none")))
    ring_note = L("ring_note" if c <= NUMBERED else "ring_note_large", cp=cp_text, imbalance=f["attention_imbalance"])

    step_heading = L(f"step_heading{on}", link=link_name, machine=machine_name)
    step_desc = L("step_desc", fc=f["ring_step_compute_time"], ft=f["ring_step_transfer_time"],
                  bc=f["ring_step_backward_compute_time"], bt=f["ring_step_backward_transfer_time"])
    step_note = L("step_note", block=f["kv_block_bytes"], tokens=f["tokens_per_gpu"],
                  gpu_flops=f["gpu_flops"])
    threshold_heading = L("threshold_heading")
    threshold_desc = L("threshold_desc_hidden" if v["transfer_hidden"] else "threshold_desc_exposed",
                       min=f["min_block_tokens"], tokens=f["tokens_per_gpu"], link=link_name)
    work = max(max(row) for row in context.ring_step_work(c, split))
    threshold_note = L("threshold_note", gpu_flops=f["gpu_flops"],
                       bandwidth=f["link_bytes_per_s"], work=_work_text(work, loc),
                       kv_ratio=loc.sig(model.kv_heads / model.heads))

    comm_heading = L("comm_heading")
    comm_desc = L("comm_desc", ring=f["ring_sent_per_gpu_layer_bytes"], ring_time=f["ring_transfer_time_layer"],
                  ulysses=f["ulysses_sent_per_gpu_layer_bytes"], ulysses_time=f["ulysses_transfer_time_layer"],
                  ulysses_cp=f["ulysses_cp"])
    comm_note = L("comm_note", attention=f["attention_time_layer"], link=link_name)
    ulysses_warning = "" if v["ulysses_possible"] else (
        f'<p class="w-cp-warn">{esc(L("ulysses_impossible", cp=cp_text, kv=loc.integer(model.kv_heads), max=f["ulysses_max_cp"]))}</p>')
    if not v["ulysses_possible"]:
        comm_desc += " " + L("ulysses_impossible", cp=cp_text, kv=loc.integer(model.kv_heads), max=f["ulysses_max_cp"])

    memories = {cp: math.fsum(memory_parts(model, s, cp)) for cp in MEMORY_CPS}
    mem_heading = L(f"mem_heading{on}", layers=loc.integer(model.layers), gpu=f["gpu_memory_bytes"],
                    machine=machine_name)
    mem_desc = L("mem_desc", values="; ".join(L("mem_row", cp=loc.integer(cp)) + " " + loc.bytes(m)
                                                for cp, m in memories.items()),
                 gpu=f["gpu_memory_bytes"], needed=f["cp_needed"])
    mem_note = L("mem_note", buffers=f["kv_buffer_bytes"])

    return (
        f'<figure class="w-fig w-cp-fig">'
        f'<figcaption class="w-fig-heading w-cp-config">{esc(config)}</figcaption>'
        f'<p class="w-fig-heading">{esc(seq_heading)}</p>'
        f'{_seq_svg(s, c, split, loc, seq_heading, seq_desc)}'
        f'{_legend_gpus(c, loc)}'
        f'<p class="w-cp-note">{esc(seq_note)}</p>'
        f'<p class="w-fig-heading">{esc(ring_heading)}</p>'
        f'{_ring_svg(c, split, loc, ring_heading, ring_desc)}'
        f'<ul class="w-legend w-cp-legend">{work_legend}</ul>'
        f'<p class="w-cp-note">{esc(ring_note)}</p>'
        f'<p class="w-fig-heading">{esc(step_heading)}</p>'
        f'{_step_svg(link, v, f, loc, step_heading, step_desc)}'
        f'<p class="w-cp-note">{esc(step_note)}</p>'
        f'<p class="w-fig-heading">{esc(threshold_heading)}</p>'
        f'{_threshold_svg(link, v, f, loc, threshold_heading, threshold_desc)}'
        f'<ul class="w-legend w-cp-legend"><li><span class="w-swatch w-cp-zone-swatch w-cp-zone-{link}"></span>'
        f'{esc(L("zone", min=f["min_block_tokens"]))}</li></ul>'
        f'<p class="w-cp-note">{esc(threshold_note)}</p>'
        f'<p class="w-fig-heading">{esc(comm_heading)}</p>'
        f'{_comm_svg(v, f, loc, comm_heading, comm_desc)}{ulysses_warning}'
        f'<p class="w-cp-note">{esc(comm_note)}</p>'
        f'<p class="w-fig-heading">{esc(mem_heading)}</p>'
        f'{_memory_svg(c, v["gpu_memory_bytes"], f, loc, mem_heading, mem_desc, memories)}'
        f'<p class="w-cp-note">{esc(mem_note)}</p></figure>'
    )
