"""Plan a run: every (TP, PP, DP, ZeRO stage, micro-batch count) layout of n GPUs,
which ones fit, how long each takes, and why each rejected one fails.

Layouts. t (tensor parallel) is a power of two dividing n; p (pipeline stages) divides
n/t; d = n/(t·p) (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training
on GPU Clusters Using Megatron-LM", Sec. 3: n = t·p·d); a ZeRO stage 0–3 over the d
data-parallel replicas (Rajbhandari et al. 2019, Sec. 5); m micro-batches per pipeline
per step, one for each divisor m of B/d, so that the micro-batch size b = B/(d·m) is a
whole number of sequences (Narayanan et al. 2021, Sec. 3.2: m = B/(d·b)). When d does
not divide the global batch B there is no such m; the (t, p, d, stage) layout is then
listed once, with m = b = 0, and rejected for ``batch``.

Ranks are placed as Megatron-LM places them (tensor rank fastest, then data, then
pipeline; Narayanan et al. 2021, Sec. 3), 8 GPUs to a node: the t GPUs of a
tensor-parallel group are neighbours inside one node; a data-parallel group spans
t·d consecutive ranks, so it stays inside a node only when t·d divides the node;
the stages of a pipeline cross nodes as soon as the job needs more than one node.

Rejections, one reason per layout, the first that applies in this order (``REASONS``):

* ``tp_heads``: t does not divide the attention heads (Megatron splits attention by
  heads, Shoeybi et al. 2019, Sec. 3);
* ``tp_node``: t > GPUs per node (or does not divide it), so a tensor-parallel group
  would cross the network, which Narayanan et al. 2021 (Sec. 3.3, Takeaway #1) rule
  out: its all-reduces sit on the critical path of every layer;
* ``pp_layers``: p does not divide the layers (Megatron-LM's non-interleaved schedule
  asks for L divisible by p; this also rejects more stages than layers);
* ``batch``: d does not divide the global batch, so no whole micro-batch exists;
* ``zero_pp``: ZeRO stage 2 or 3 with p > 1. DeepSpeed's pipeline engine refuses it
  (``deepspeed/runtime/pipe/engine.py``, ``PipelineEngine.__init__``: ``assert
  self.zero_optimization_stage() < 2, "ZeRO-2 and ZeRO-3 are incompatible with
  pipeline parallelism"``): a sharded gradient would have to be reduce-scattered after
  every micro-batch of the pipeline, and sharded weights gathered for each one;
* ``memory``: the memory needed (``layout_memory``) is more than the GPU's.

m < p is not rejected, only charged: 1F1B still runs (Megatron-LM clamps the warm-up
to m forward passes) and the bubble (p−1) slots of a step of m + p − 1 then dominates,
so such a layout sorts low by itself. Rejecting it would hide a legal, merely slow
layout and break "more memory never rejects more layouts".

Time of one step (``layout_times``), from the per-GPU time of one micro-batch:

* compute t_c = k·(Ψ/(t·p))·b·s / X with k = 6 FLOP per parameter per token (Kaplan et
  al. 2020, Sec. 2.1), or 8 with full recomputation (Narayanan et al. 2021, Eq. 3/4: one
  more forward pass); Ψ/(t·p) parameters per GPU (layers and embeddings spread evenly),
  X the sustained FLOP/s while computing. Selective recomputation reruns only the
  attention scores, a term 6Ψ already leaves out, so it costs nothing here;
* tensor parallelism: the all-reduces of ``calc.tensor.sent_per_gpu_layer_bytes`` (4
  per layer, Shoeybi et al. 2019, Fig. 4), 6 with full recomputation (the rerun forward
  repeats its 2), over the intra-node link, for the L/p layers of a stage; they sit on
  the critical path, nothing hides them; sequence parallelism moves the same bytes
  (Korthikanti et al. 2022, Sec. 4.2.2);
* pipeline point-to-point: per micro-batch each stage sends its activations
  s·b·h·2 bytes forward and their gradient back (``calc.pipeline.activation_transfer_
  bytes``), with Megatron's scatter/gather optimization (Narayanan et al. 2021, Sec.
  4.1): each of the t GPUs sends 1/t over its own network adapter and the receivers
  all-gather the pieces over the intra-node link (not needed with sequence
  parallelism, whose boundary tensor is already split); over the inter-node link as
  soon as the job spans nodes, not hidden (Megatron-LM's 1F1B waits for it);
* a 1F1B step has m + p − 1 slots of one micro-batch each (Narayanan et al. 2021, Sec.
  2.2.1: bubble (p−1)·(t_f + t_b)), so step = (m + p − 1)·(t_c + t_tp + t_pp) + exposed
  data-parallel time; compute = m·t_c, bubble = (p − 1)·(t_c + t_tp + t_pp), the rest
  is exposed communication;
* data parallelism / ZeRO over d GPUs (``calc.collectives.ring_bytes_per_rank``, ring
  algorithm, on Ψ/(t·p) fp16 gradients or weights, 2 bytes each), over the intra-node
  link if the data-parallel group fits in a node, else the inter-node link; every
  collective hides behind the compute it can overlap, only the excess is exposed
  (t_f = 2/k and t_b = (k−2)/k of t_c, the forward and backward shares):
  stage 0: one gradient all-reduce per step behind the last micro-batch's backward
  (gradients accumulate locally; PyTorch DDP and Megatron-LM reduce after the last
  one); stage 1: a reduce-scatter behind the last backward, then the all-gather of the
  updated weights behind the next step's first forward; stage 2: each GPU keeps only a
  shard of the gradients, so a reduce-scatter after every micro-batch, behind its
  backward, plus the weight all-gather behind a forward; stage 3: for every micro-batch
  an all-gather of the weights behind its forward and an all-gather plus a
  reduce-scatter behind its backward (Rajbhandari et al. 2019, Sec. 7.2.2: 3Ψ per step,
  1.5× plain DP when m = 1). With m = 1 these are exactly ``calc.zero.sent_per_gpu_
  bytes``.

Run time = step × D/(B·s) steps (D training tokens). Not modelled: latency of each
message, imperfect overlap, bandwidth below the link's peak, kernels that run slower
at small micro-batches, the embedding and output layers' imbalance between stages,
the interleaved schedule, data loading, checkpointing and failures. These only make a
real run slower: a planner estimate is a lower bound on the time of each layout.

Memory per GPU (``layout_memory``): the training state of Ψ/(t·p) parameters sharded
by ZeRO over d (``calc.zero.state_per_gpu_bytes``; with stage 3 plus full copies of
the weights of the layers being computed, two layers: the current and the prefetched
one), the first stage's activations under 1F1B (min(p, m) micro-batches in flight,
each of L/p layers, ``calc.activations.activation_bytes``; Korthikanti et al. 2022,
Sec. 4.2.3) plus, with full recomputation, the one layer rebuilt during the backward
pass (``calc.activations.rematerialized_bytes``), and ``ALLOWANCE_BYTES`` for the CUDA
context, communication buffers and allocator fragmentation (an assumption, not a
measurement). The embedding and logits are not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from ._check import (
    MAX_BYTES,
    MAX_BYTES_PER_S,
    MAX_FLOPS_PER_S,
    MAX_GPUS,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_OPTIMIZER_BYTES,
    MAX_PARAMS,
    MAX_SEQ_LEN,
    MAX_TOKENS,
    check_choice,
    check_int,
    check_real,
)
from .activations import RECOMPUTE_MODES, activation_bytes, rematerialized_bytes
from .collectives import ring_bytes_per_rank
from .compute import FLOPS_PER_PARAM_PER_TOKEN
from .hardware import GPUS_PER_NODE
from .memory import OPTIMIZER_BYTES, WEIGHT_BYTES
from .pipeline import activation_transfer_bytes
from .tensor import ALL_REDUCES_PER_LAYER, sent_per_gpu_layer_bytes
from .zero import ZERO_STAGES, state_per_gpu_bytes

__all__ = [
    "ALLOWANCE_BYTES",
    "FLOPS_PER_PARAM_PER_TOKEN_FULL",
    "Layout",
    "MAX_PLAN_BATCH",
    "Plan",
    "REASONS",
    "RunSpec",
    "ZERO3_GATHERED_LAYERS",
    "degrees",
    "dp_collectives",
    "flops_per_param_per_token",
    "layout_memory",
    "layout_times",
    "microbatch_counts",
    "plan",
    "reject_reason",
]

REASONS = ("tp_heads", "tp_node", "pp_layers", "batch", "zero_pp", "memory")
ALLOWANCE_BYTES = 2e9  # CUDA context + NCCL buffers + fragmentation (assumed, stated)
FLOPS_PER_PARAM_PER_TOKEN_FULL = 8  # Narayanan et al. 2021, Eq. 4: 6 + one more forward (2)
ZERO3_GATHERED_LAYERS = 2  # the layer being computed and the one prefetched
MAX_PLAN_BATCH = 1_000_000  # sequences; keeps the divisor enumeration small
_RECOMPUTED_ALL_REDUCES = 2  # full recomputation reruns the forward's 2 all-reduces


@dataclass(frozen=True)
class RunSpec:
    """What the planner is asked about, validated (see ``plan`` for the meaning)."""

    params: float
    layers: int
    hidden: int
    heads: int
    seq_len: int
    tokens: float
    gpus: int
    memory_bytes: float
    flops_per_gpu: float
    intra_bytes_per_s: float
    inter_bytes_per_s: float
    gpus_per_node: int
    global_batch: int
    recompute: str
    sequence_parallel: bool
    optimizer_bytes: float = OPTIMIZER_BYTES

    @property
    def steps(self) -> float:
        """Optimizer steps D/(B·s) (a real number; the last step may be partial)."""
        return self.tokens / (self.global_batch * self.seq_len)

    @property
    def flops(self) -> float:
        """Training FLOP k·Ψ·D, k = 6 or 8 (``flops_per_param_per_token``)."""
        return flops_per_param_per_token(self.recompute) * self.params * self.tokens

    @property
    def ideal_seconds(self) -> float:
        """k·Ψ·D / (n·X): the run with no bubble and no communication (Narayanan et
        al. 2021, Eq. 4 when k = 8)."""
        return self.flops / (self.gpus * self.flops_per_gpu)


class Layout(NamedTuple):
    """One layout and its verdict (an immutable tuple: thousands are made per plan, and
    a NamedTuple is several times cheaper to build than a frozen dataclass).

    ``reason`` is "" when it fits, else one of ``REASONS``. ``evaluated`` says whether
    memory and times were computed (only for layouts that pass every check before
    ``memory``); otherwise those fields are 0. Memory in bytes per GPU, times in
    seconds; ``compute_s``, ``bubble_s``, ``*_comm_s`` and ``step_s`` are per step,
    ``comm_s`` = tp + pp + dp (exposed), ``run_s`` for the whole run.
    """

    tp: int
    pp: int
    dp: int
    zero_stage: int
    microbatches: int
    micro_batch: int
    fits: bool
    reason: str
    evaluated: bool
    memory_bytes: float
    state_bytes: float
    activation_bytes: float
    compute_s: float
    bubble_s: float
    tp_comm_s: float
    pp_comm_s: float
    dp_comm_s: float
    comm_s: float
    step_s: float
    run_s: float


@dataclass(frozen=True)
class Plan:
    """Every layout: ``feasible`` sorted by run time (ties: lower ZeRO stage, then
    smaller t, p, m), ``rejected`` in enumeration order (t, p, stage, m ascending);
    ``counts`` maps each reason of ``REASONS`` to how many layouts it rejects."""

    spec: RunSpec
    feasible: tuple[Layout, ...]
    rejected: tuple[Layout, ...]
    counts: tuple[tuple[str, int], ...]

    @property
    def layouts(self) -> tuple[Layout, ...]:
        """All layouts: the feasible ones (best first), then the rejected ones."""
        return self.feasible + self.rejected

    @property
    def best(self) -> Layout | None:
        """The fastest feasible layout, or None when nothing fits."""
        return self.feasible[0] if self.feasible else None

    def count(self, reason: str) -> int:
        """Layouts rejected for ``reason``."""
        return dict(self.counts)[check_choice("reason", reason, REASONS)]


def flops_per_param_per_token(recompute: str) -> int:
    """FLOP per parameter per token: 6 (Kaplan et al. 2020, Sec. 2.1: 2 forward + 4
    backward), 8 with full recomputation (Narayanan et al. 2021, Eq. 4: one more
    forward). Selective recomputation reruns only the attention scores' s² work, which
    6 per parameter already leaves out, so it stays 6."""
    mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
    return FLOPS_PER_PARAM_PER_TOKEN_FULL if mode == "full" else FLOPS_PER_PARAM_PER_TOKEN


def degrees(gpus: int) -> tuple[tuple[int, int, int], ...]:
    """Every (t, p, d) with t a power of two dividing n, p a divisor of n/t and
    d = n/(t·p), in ascending (t, p) order (Narayanan et al. 2021, Sec. 3)."""
    n = check_int("gpus", gpus, 1, MAX_GPUS)
    out = []
    t = 1
    while n % t == 0:
        rest = n // t
        out.extend((t, p, rest // p) for p in _divisors(rest))
        t *= 2
    return tuple(out)


def microbatch_counts(global_batch: int, dp: int) -> tuple[int, ...]:
    """The micro-batch counts m per pipeline for which b = B/(d·m) is a whole number:
    the divisors of B/d, ascending; () when d does not divide B (Narayanan et al. 2021,
    Sec. 3.2: m = B/(d·b))."""
    b_global = check_int("global_batch", global_batch, 1, MAX_PLAN_BATCH)
    d = check_int("dp", dp, 1, MAX_GPUS)
    if b_global % d:
        return ()
    return _divisors(b_global // d)


def _divisors(value: int) -> tuple[int, ...]:
    small, large = [], []
    k = 1
    while k * k <= value:
        if value % k == 0:
            small.append(k)
            if k * k != value:
                large.append(value // k)
        k += 1
    return tuple(small + large[::-1])


def reject_reason(
    *,
    tp: int,
    pp: int,
    dp: int,
    zero_stage: int,
    layers: int,
    heads: int,
    global_batch: int,
    gpus_per_node: int = GPUS_PER_NODE,
) -> str:
    """The first structural reason (``REASONS`` order, ``memory`` excluded) that rules
    out the layout, or "" (see the module docstring for each rule and its source)."""
    t = check_int("tp", tp, 1, MAX_GPUS)
    p = check_int("pp", pp, 1, MAX_GPUS)
    d = check_int("dp", dp, 1, MAX_GPUS)
    z = check_choice("zero_stage", zero_stage, ZERO_STAGES)
    l = check_int("layers", layers, 1, MAX_LAYERS)
    a = check_int("heads", heads, 1, MAX_HEADS)
    b = check_int("global_batch", global_batch, 1, MAX_PLAN_BATCH)
    g = check_int("gpus_per_node", gpus_per_node, 1, 1024)
    return _structural(t, p, d, a, l, b, g) or ("zero_pp" if z >= 2 and p > 1 else "")


def _structural(t: int, p: int, d: int, a: int, l: int, b: int, g: int) -> str:
    if a % t:
        return "tp_heads"
    if t > g or g % t:
        return "tp_node"
    if l % p:
        return "pp_layers"
    if b % d:
        return "batch"
    return ""


def layout_memory(
    spec: RunSpec, *, tp: int, pp: int, dp: int, zero_stage: int, microbatches: int
) -> tuple[float, float, float]:
    """(needed, state, activations) bytes per GPU of one layout (module docstring):

        state  = ZeRO-stage state of Ψ/(t·p) over d (Rajbhandari et al. 2019, Sec. 5)
                 [+ stage 3: full fp16 copies of 2 layers, minus the shard already held]
        acts   = activation_bytes(min(p, m)·L/p layers, h, a, s, b, t, SP, recompute)
                 + rematerialized_bytes(...)   (Korthikanti et al. 2022, Sec. 4.2.3)
        needed = state + acts + ALLOWANCE_BYTES
    """
    t, p, d, z, m = _check_layout(spec, tp, pp, dp, zero_stage, microbatches)
    return _memory(spec, t, p, d, z, m, spec.global_batch // (d * m))


def _check_layout(spec: RunSpec, tp: int, pp: int, dp: int, zero_stage: int, microbatches: int) -> tuple[int, int, int, int, int]:
    if not isinstance(spec, RunSpec):
        raise ValueError(f"spec must be a RunSpec (from plan's arguments), got {spec!r}")
    t = check_int("tp", tp, 1, spec.gpus)
    p = check_int("pp", pp, 1, spec.layers)
    d = check_int("dp", dp, 1, spec.gpus)
    z = check_choice("zero_stage", zero_stage, ZERO_STAGES)
    m = check_int("microbatches", microbatches, 1, spec.global_batch)
    if t * p * d != spec.gpus or spec.layers % p or spec.global_batch % (d * m):
        raise ValueError(
            f"tp × pp × dp must equal gpus ({spec.gpus}), pp divide the layers ({spec.layers}) "
            f"and dp × microbatches divide global_batch ({spec.global_batch}), "
            f"got {t} × {p} × {d} with {m} micro-batches"
        )
    return t, p, d, z, m


def _state(spec: RunSpec, t: int, p: int, d: int, z: int) -> float:
    share = spec.params / (t * p)
    state = state_per_gpu_bytes(params=share, dp=d, zero_stage=z, optimizer_bytes=spec.optimizer_bytes)
    if z == 3:
        stage_layers = spec.layers // p
        gathered = min(ZERO3_GATHERED_LAYERS, stage_layers) / stage_layers
        state += WEIGHT_BYTES * share * gathered * (1.0 - 1.0 / d)
    return state


def _activations(spec: RunSpec, t: int, p: int, m: int, b: int) -> float:
    kw = dict(seq_len=spec.seq_len, micro_batch=b, hidden=spec.hidden, heads=spec.heads, tp=t,
              sequence_parallel=spec.sequence_parallel, recompute=spec.recompute)
    stored = activation_bytes(layers=min(p, m) * (spec.layers // p), **kw)
    return stored + rematerialized_bytes(**kw)


def _memory(spec: RunSpec, t: int, p: int, d: int, z: int, m: int, b: int) -> tuple[float, float, float]:
    state = _state(spec, t, p, d, z)
    acts = _activations(spec, t, p, m, b)
    return state + acts + ALLOWANCE_BYTES, state, acts


def layout_times(
    spec: RunSpec, *, tp: int, pp: int, dp: int, zero_stage: int, microbatches: int
) -> tuple[float, float, float, float, float, float]:
    """(compute, bubble, tp_comm, pp_comm, dp_comm, step) seconds per step of one
    layout; the communication terms are the exposed parts (module docstring):

        step = (m + p − 1)·(t_c + t_tp + t_pp) + exposed DP
        compute = m·t_c, bubble = (p − 1)·(t_c + t_tp + t_pp)
    """
    t, p, d, z, m = _check_layout(spec, tp, pp, dp, zero_stage, microbatches)
    per = _per_microbatch(spec, t, p, spec.global_batch // (d * m))
    k = flops_per_param_per_token(spec.recompute)
    collectives = dp_collectives(share_params=spec.params / (t * p), dp=d, zero_stage=z)
    return _times(k, m, p, per, collectives, _dp_link(spec, t, d))


def _per_microbatch(spec: RunSpec, t: int, p: int, b: int) -> tuple[float, float, float]:
    """(t_c, t_tp, t_pp) seconds of one micro-batch of b sequences on one GPU."""
    k = flops_per_param_per_token(spec.recompute)
    t_c = k * spec.params / (t * p) * b * spec.seq_len / spec.flops_per_gpu
    t_tp = 0.0
    if t > 1:
        reduces = ALL_REDUCES_PER_LAYER + (_RECOMPUTED_ALL_REDUCES if spec.recompute == "full" else 0)
        sent = sent_per_gpu_layer_bytes(hidden=spec.hidden, seq_len=spec.seq_len, micro_batch=b, tp=t)
        per_layer = sent * reduces / ALL_REDUCES_PER_LAYER
        t_tp = per_layer * (spec.layers // p) / spec.intra_bytes_per_s
    t_pp = 0.0
    if p > 1:
        message = activation_transfer_bytes(hidden=spec.hidden, seq_len=spec.seq_len, micro_batch=b)
        link = spec.intra_bytes_per_s if spec.gpus <= spec.gpus_per_node else spec.inter_bytes_per_s
        one_way = message / t / link
        if t > 1 and not spec.sequence_parallel:
            one_way += ring_bytes_per_rank("all_gather", message, t) / spec.intra_bytes_per_s
        t_pp = 2.0 * one_way  # activations forward, their gradient back
    return t_c, t_tp, t_pp


def _dp_link(spec: RunSpec, t: int, d: int) -> float:
    group = t * d
    inside = group <= spec.gpus_per_node and spec.gpus_per_node % group == 0
    return spec.intra_bytes_per_s if inside else spec.inter_bytes_per_s


def dp_collectives(*, share_params: float, dp: int, zero_stage: int) -> tuple[tuple[str, float, str, bool], ...]:
    """The data-parallel collectives of one step as (op, bytes each GPU sends, the
    compute pass that hides it, whether it runs for every micro-batch rather than once
    per step), ring algorithm (``calc.collectives.ring_bytes_per_rank``) on Ψ' =
    ``share_params`` fp16 values:

        stage 0: all-reduce of the gradients         behind "backward"  once
        stage 1: reduce-scatter of the gradients     behind "backward"  once
                 all-gather of the updated weights   behind "forward"   once
        stage 2: reduce-scatter of the gradients     behind "backward"  every micro-batch
                 all-gather of the updated weights   behind "forward"   once
        stage 3: all-gather of the weights           behind "forward"   every micro-batch
                 all-gather + reduce-scatter         behind "backward"  every micro-batch

    (Rajbhandari et al. 2019, Sec. 5 and 7; module docstring). With one micro-batch the
    bytes add up to ``calc.zero.sent_per_gpu_bytes``: 2Ψ'·2(d−1)/d for stages 0–2, 1.5×
    that for stage 3. Empty when d = 1.
    """
    share = check_real("share_params", share_params, 0, MAX_PARAMS)
    d = check_int("dp", dp, 1, MAX_GPUS)
    z = check_choice("zero_stage", zero_stage, ZERO_STAGES)
    if d == 1:
        return ()
    grad_bytes = WEIGHT_BYTES * share
    one = ring_bytes_per_rank("reduce_scatter", grad_bytes, d)  # = one all-gather
    if z == 0:
        return (("all_reduce", ring_bytes_per_rank("all_reduce", grad_bytes, d), "backward", False),)
    if z == 1:
        return (("reduce_scatter", one, "backward", False), ("all_gather", one, "forward", False))
    if z == 2:
        return (("reduce_scatter", one, "backward", True), ("all_gather", one, "forward", False))
    return (("all_gather", one, "forward", True), ("all_gather+reduce_scatter", 2.0 * one, "backward", True))


def _dp_exposed(collectives: tuple[tuple[str, float, str, bool], ...], link: float, m: int,
                t_fwd: float, t_bwd: float) -> float:
    """Σ count × max(0, bytes/link − window) over ``dp_collectives`` (count m for the
    per-micro-batch ones, else 1)."""
    if not collectives:
        return 0.0
    return math.fsum((m if every else 1) * max(0.0, sent / link - (t_fwd if when == "forward" else t_bwd))
                     for _, sent, when, every in collectives)


def _times(k: int, m: int, p: int, per: tuple[float, float, float],
           collectives: tuple[tuple[str, float, str, bool], ...], link: float
           ) -> tuple[float, float, float, float, float, float]:
    t_c, t_tp, t_pp = per
    t_fwd = t_c * 2.0 / k
    t_bwd = t_c - t_fwd
    slot = t_c + t_tp + t_pp
    dp_s = _dp_exposed(collectives, link, m, t_fwd, t_bwd)
    step = (m + p - 1) * slot + dp_s
    return m * t_c, (p - 1) * slot, m * t_tp, m * t_pp, dp_s, step


def _spec(
    params: float, layers: int, hidden: int, heads: int, seq_len: int, tokens: float,
    gpus: int, memory_bytes: float, flops_per_gpu: float, intra_bytes_per_s: float,
    inter_bytes_per_s: float, gpus_per_node: int, global_batch: int, recompute: str,
    sequence_parallel: bool, optimizer_bytes: float,
) -> RunSpec:
    return RunSpec(
        params=check_real("params", params, 0, MAX_PARAMS, lo_inclusive=False),
        layers=check_int("layers", layers, 1, MAX_LAYERS),
        hidden=check_int("hidden", hidden, 1, MAX_HIDDEN),
        heads=check_int("heads", heads, 1, MAX_HEADS),
        seq_len=check_int("seq_len", seq_len, 1, MAX_SEQ_LEN),
        tokens=check_real("tokens", tokens, 0, MAX_TOKENS),
        gpus=check_int("gpus", gpus, 1, MAX_GPUS),
        memory_bytes=check_real("memory_bytes", memory_bytes, 0, MAX_BYTES, lo_inclusive=False),
        flops_per_gpu=check_real("flops_per_gpu", flops_per_gpu, 0, MAX_FLOPS_PER_S, lo_inclusive=False),
        intra_bytes_per_s=check_real("intra_bytes_per_s", intra_bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False),
        inter_bytes_per_s=check_real("inter_bytes_per_s", inter_bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False),
        gpus_per_node=check_int("gpus_per_node", gpus_per_node, 1, 1024),
        global_batch=check_int("global_batch", global_batch, 1, MAX_PLAN_BATCH),
        recompute=check_choice("recompute", recompute, RECOMPUTE_MODES),
        sequence_parallel=check_choice("sequence_parallel", sequence_parallel, (False, True)),
        optimizer_bytes=check_real("optimizer_bytes", optimizer_bytes, 0, MAX_OPTIMIZER_BYTES),
    )


def _rejected(t: int, p: int, d: int, z: int, m: int, b: int, reason: str) -> Layout:
    return Layout(t, p, d, z, m, b, False, reason, False,
                  0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def plan(
    *,
    params: float,
    layers: int,
    hidden: int,
    heads: int,
    seq_len: int,
    tokens: float,
    gpus: int,
    memory_bytes: float,
    flops_per_gpu: float,
    intra_bytes_per_s: float,
    inter_bytes_per_s: float,
    gpus_per_node: int = GPUS_PER_NODE,
    global_batch: int = 1024,
    recompute: str = "full",
    sequence_parallel: bool = False,
    optimizer_bytes: float = OPTIMIZER_BYTES,
) -> Plan:
    """Every layout of ``gpus`` GPUs for a model of Ψ = ``params`` parameters (L
    ``layers``, hidden size h, a ``heads``, sequences of s = ``seq_len`` tokens) trained
    on D = ``tokens`` tokens in global batches of B = ``global_batch`` sequences; GPUs of
    ``memory_bytes`` sustaining X = ``flops_per_gpu`` while they compute; links of
    ``intra_bytes_per_s`` inside a node and ``inter_bytes_per_s`` between nodes (per
    GPU, one direction); ``recompute`` one of none, selective, full (Korthikanti et al.
    2022); ``sequence_parallel`` as Korthikanti et al. 2022, Sec. 4.2.2;
    ``optimizer_bytes`` K, the optimizer's bytes per parameter (12 for mixed-precision
    Adam, Rajbhandari et al. 2019, Sec. 3.1).

    The enumeration, rejection rules, time and memory model are those of the module
    docstring. Per (t, p) the terms that do not depend on the ZeRO stage or m are
    computed once, per (t, p, b) the activation and per-micro-batch times.

    GPT-3 175B on 1,024 A100 80 GB (300 GB/s NVLink, 25 GB/s InfiniBand HDR per GPU),
    300B tokens, B = 1,536, full recomputation, X = 140 TFLOP/s: the best layout takes
    about 34 days, as Narayanan et al. 2021 estimate (Sec. 5.1, Eq. 4).
    """
    spec = _spec(params, layers, hidden, heads, seq_len, tokens, gpus, memory_bytes, flops_per_gpu,
                 intra_bytes_per_s, inter_bytes_per_s, gpus_per_node, global_batch, recompute,
                 sequence_parallel, optimizer_bytes)
    steps = spec.steps
    k = flops_per_param_per_token(spec.recompute)
    feasible: list[Layout] = []
    rejected: list[Layout] = []
    counts = dict.fromkeys(REASONS, 0)
    g, l, a, big_b = spec.gpus_per_node, spec.layers, spec.heads, spec.global_batch
    for t, p, d in degrees(spec.gpus):
        ms = microbatch_counts(big_b, d)
        reason = _structural(t, p, d, a, l, big_b, g)
        if reason:
            for z in ZERO_STAGES:
                for m in ms or (0,):
                    rejected.append(_rejected(t, p, d, z, m, big_b // (d * m) if m else 0, reason))
            counts[reason] += len(ZERO_STAGES) * max(1, len(ms))
            continue
        allowed = [z for z in ZERO_STAGES if z < 2 or p == 1]
        states = {z: _state(spec, t, p, d, z) for z in allowed}
        colls = {z: dp_collectives(share_params=spec.params / (t * p), dp=d, zero_stage=z) for z in allowed}
        link = _dp_link(spec, t, d)
        per_m = {m: (_activations(spec, t, p, m, big_b // (d * m)),
                     _per_microbatch(spec, t, p, big_b // (d * m))) for m in ms}
        for z in ZERO_STAGES:
            for m in ms:
                b = big_b // (d * m)
                if z >= 2 and p > 1:
                    rejected.append(_rejected(t, p, d, z, m, b, "zero_pp"))
                    counts["zero_pp"] += 1
                    continue
                acts, per = per_m[m]
                state = states[z]
                need = state + acts + ALLOWANCE_BYTES
                fits = need <= spec.memory_bytes
                compute_s, bubble_s, tp_s, pp_s, dp_s, step = _times(k, m, p, per, colls[z], link)
                layout = Layout(t, p, d, z, m, b, fits, "" if fits else "memory", True,
                                need, state, acts, compute_s, bubble_s, tp_s, pp_s, dp_s,
                                tp_s + pp_s + dp_s, step, step * steps)
                if fits:
                    feasible.append(layout)
                else:
                    rejected.append(layout)
                    counts["memory"] += 1
    feasible.sort(key=lambda x: (float(f"{x.run_s:.9e}"), x.zero_stage, x.tp, x.pp, x.microbatches))
    return Plan(spec, tuple(feasible), tuple(rejected), tuple(counts.items()))
