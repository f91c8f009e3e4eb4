"""Plan a run: every (TP, CP, PP, DP, EP, ZeRO stage, micro-batch count) layout of n
GPUs, which ones fit, how long each takes, and why each rejected one fails.

Layouts. t (tensor parallel) is a power of two dividing n; cp (context parallel, the
sequence split over cp GPUs, ``calc.context``) a power of two dividing n/t; p
(pipeline stages) divides n/(t·cp); d = n/(t·cp·p) (Narayanan et al. 2021, "Efficient
Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", Sec. 3: n =
t·p·d; Megatron-Core adds cp as a fourth factor, ``parallel_state.
initialize_model_parallel``). For a mixture-of-experts model, ep (expert parallel) is
a power of two dividing cp·d: the experts of each MoE layer are spread over ep of the
GPUs that hold the same attention weights, so ep does not multiply the GPU count
(Megatron-Core's expert grid: expert-tensor size t by default, ep, expert-data size
n/(t·ep·p); the same function). A dense model has ep = 1 only. Then a ZeRO stage 0–3
(Rajbhandari et al. 2019, Sec. 5) and m micro-batches per pipeline per step, one for
each divisor m of B/d, so that the micro-batch size b = B/(d·m) is a whole number of
sequences (Narayanan et al. 2021, Sec. 3.2: m = B/(d·b)); the cp GPUs of a group share
their sequences. When d does not divide the global batch B there is no such m; the
layout is then listed once per stage, with m = b = 0, and rejected for ``batch``.

Ranks are placed as Megatron-Core places them (order tp-cp-ep-dp-pp: tensor rank
fastest, then context, data, pipeline), 8 GPUs to a node: the t GPUs of a
tensor-parallel group are neighbours inside one node; a context-parallel group spans
t·cp consecutive ranks, an expert-parallel group t·ep (the expert grid has no cp
axis), the data-parallel group (with its cp ranks, which share the gradients) t·cp·d;
each stays inside a node only when that span divides the node; the stages of a
pipeline cross nodes as soon as the job needs more than one node.

Rejections, one reason per layout, the first that applies in this order (``REASONS``):

* ``tp_heads``: t does not divide the attention heads, or the key/value heads
  (Megatron splits attention by heads, Shoeybi et al. 2019, Sec. 3; with grouped-query
  attention each GPU needs whole K/V groups, Megatron-Core asserts
  ``num_query_groups % tensor_model_parallel_size == 0``);
* ``tp_node``: t > GPUs per node (or does not divide it), so a tensor-parallel group
  would cross the network, which Narayanan et al. 2021 (Sec. 3.3, Takeaway #1) rule
  out: its all-reduces sit on the critical path of every layer;
* ``cp_seq``: cp > 1 and 2·cp does not divide s: the balanced causal split gives each
  GPU two of 2·cp equal chunks (Llama 3, Dubey et al. 2024, Sec. 3.3.2);
* ``pp_layers``: more stages than layers (p > L), so some stage would hold none;
* ``ep_experts``: ep does not divide the routed experts E, so the GPUs of an
  expert-parallel group would not hold equal shares (Megatron-Core asserts
  ``num_moe_experts % expert_model_parallel_size == 0``);
* ``ep_sp``: t > 1 and ep > 1 without sequence parallelism, which Megatron-Core
  requires for that combination (its MoE documentation: "When combining EP with TP,
  you must enable Sequence Parallelism"): each tensor-parallel GPU must route its own
  s/t of the tokens;
* ``batch``: d does not divide the global batch, so no whole micro-batch exists;
* ``zero_pp``: ZeRO stage 2 or 3 with p > 1. DeepSpeed's pipeline engine refuses it
  (``deepspeed/runtime/pipe/engine.py``, ``PipelineEngine.__init__``: ``assert
  self.zero_optimization_stage() < 2, "ZeRO-2 and ZeRO-3 are incompatible with
  pipeline parallelism"``): a sharded gradient would have to be reduce-scattered after
  every micro-batch of the pipeline, and sharded weights gathered for each one. This is
  DeepSpeed's rule, not a law: torchtitan composes FSDP2 (ZeRO-3-like) with pipeline
  parallelism and, by default, turns ``reshard_after_forward`` off when PP is on
  (``torchtitan/distributed/fsdp.py``, ``get_fsdp_reshard_after_forward_policy``: "For
  PP, by default do not reshard after forward to avoid per-microbatch all-gathers"), so
  a stage's weights stay gathered across its micro-batches; the planner, which prices
  ZeRO-3 with a gather per micro-batch, keeps DeepSpeed's rule;
* ``memory``: the memory needed (``layout_memory``) is more than the GPU's.

Stages need not hold equal numbers of layers: Llama 3 405B puts its 126 layers on 16
stages by taking one layer off the first and the last (Dubey et al. 2024, Sec. 3.3.2),
DeepSeek-V3 its 61 (DeepSeek-AI 2024, Sec. 4.2) on 16 (Sec. 3.2), and Megatron-Core sets the
first and last stages' layers apart (``decoder_first_pipeline_num_layers``). Every
stage is charged as the busiest, ⌈L/p⌉ layers and that share ⌈L/p⌉/L of the
parameters (exactly L/p and 1/p when p divides L): the busiest stage sets the pace of
the pipeline and the peak of memory.

m < p is not rejected, only charged: 1F1B still runs (Megatron-LM clamps the warm-up
to m forward passes) and the bubble (p−1) slots of a step of m + p − 1 then dominates,
so such a layout sorts low by itself. Rejecting it would hide a legal, merely slow
layout and break "more memory never rejects more layouts". A cp whose blocks are too
short to hide the ring's transfer is, likewise, only charged for it.

Time of one step (``layout_times``), from the per-GPU time of one micro-batch:

* compute T_c = (κ·Ψ_a/(t·p)·b·s/cp + attention)/X (⌈L/p⌉/L for 1/p, here and
  below) with κ = 6 FLOP per parameter per token (Kaplan et al. 2020, Sec. 2.1), or 8
  with full recomputation (Narayanan et al. 2021, Eq. 3/4: one more forward pass); Ψ_a the parameters a token uses (all of them
  for a dense model, ``calc.models.active_param_count`` for an MoE model) over the t·p
  GPUs that share them (layers and embeddings spread evenly); X the sustained FLOP/s
  while computing. ``attention`` is the two attention matmuls that 6Ψ leaves out
  (Narayanan et al. 2021, Eq. 3's s/6h term), causal and balanced over cp
  (``calc.context.attention_flops_per_gpu_layer``, 2·b·s²·h/cp per layer forward),
  split over t by heads, for the ⌈L/p⌉ layers of a stage, 3 times the forward (backward =
  2 × forward), 4 times with selective or full recomputation, which both rerun it;
* tensor parallelism: the all-reduces of ``calc.tensor.sent_per_gpu_layer_bytes`` (4
  per layer, Shoeybi et al. 2019, Fig. 4), 6 with full recomputation (the rerun forward
  repeats its 2), on the s/cp tokens of a GPU, over the intra-node link, for the ⌈L/p⌉
  layers of a stage; they sit on the critical path, nothing hides them; sequence
  parallelism moves the same bytes (Korthikanti et al. 2022, Sec. 4.2.2);
* context parallelism: ring attention (Liu et al. 2023, Sec. 3; ``calc.context.
  ring_step_times``): in each of the cp − 1 ring steps of a layer only the part of the
  K/V transfer that outlasts the block's attention compute is exposed, forward (twice
  with recomputation, which reruns it) and backward, split over t like the heads, over
  the intra-node link when the t·cp GPUs fit in a node, else the inter-node link;
* expert parallelism: the dispatch and combine all-to-alls of every MoE layer
  (``calc.experts.all_to_all_sent_per_gpu_layer_bytes``, balanced routing, GShard Sec.
  3) for the b·s/(cp·t) tokens each GPU routes, forward and backward (the forward's
  again with full recomputation), on the critical path (the expert compute needs the
  dispatched tokens; DeepSeek-V3's DualPipe hides them behind another micro-batch,
  which is not modelled), over the intra-node link when the t·ep GPUs fit in a node;
  the MoE layers spread evenly over the stages;
* pipeline point-to-point: per micro-batch each stage sends its activations
  (s/cp)·b·h·2 bytes forward and their gradient back (``calc.pipeline.activation_
  transfer_bytes``), with Megatron's scatter/gather optimization (Narayanan et al.
  2021, Sec. 4.1): each of the t GPUs sends 1/t over its own network adapter and the
  receivers all-gather the pieces over the intra-node link (not needed with sequence
  parallelism, whose boundary tensor is already split); over the inter-node link as
  soon as the job spans nodes, not hidden (Megatron-LM's 1F1B waits for it);
* a 1F1B step has m + p − 1 slots of one micro-batch each (Narayanan et al. 2021, Sec.
  2.2.1: bubble (p−1)·(T_F + T_B)), so step = (m + p − 1)·(T_c + T_tp + T_cp + T_ep +
  T_pp) + exposed data-parallel time; compute = m·T_c, bubble = (p − 1)·slot, the rest
  is exposed communication;
* data parallelism / ZeRO over the d·cp GPUs that hold the same weights
  (``calc.collectives.ring_bytes_per_rank``, ring algorithm, on the (Ψ − Ψ_e)/(t·p)
  fp16 gradients or weights of the dense part, 2 bytes each, plus the Ψ_e/(t·p·ep) of
  the routed experts over the d·cp/ep expert-data-parallel GPUs), over the intra-node
  link if the group fits in a node, else the inter-node link; every collective hides
  behind the compute it can overlap, only the excess is exposed (T_F = 2/κ and
  T_B = (κ−2)/κ of T_c, the forward and backward shares):
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
uneven expert load, the interleaved schedule, data loading, checkpointing and
failures. These only make a real run slower: a planner estimate is a lower bound on
the time of each layout (the overlaps DeepSeek-V3 builds for its all-to-alls are the
exception named above).

Memory per GPU (``layout_memory``): the training state (``calc.zero.state_per_gpu_
bytes``) of the (Ψ − Ψ_e)/(t·p) dense parameters sharded by ZeRO over d·cp and of the
Ψ_e/(t·p·ep) routed-expert parameters over d·cp/ep (with stage 3 plus full copies of
the weights of the layers being computed, two layers: the current and the prefetched
one), the first stage's activations under 1F1B (min(p, m) micro-batches in flight,
each of ⌈L/p⌉ layers, ``calc.activations.activation_bytes``, divided by cp as in
``calc.context.activation_bytes_per_gpu_layer``; Korthikanti et al. 2022, Sec. 4.2.3)
plus, with full recomputation, the one layer rebuilt during the backward pass
(``calc.activations.rematerialized_bytes``), and ``ALLOWANCE_BYTES`` for the CUDA
context, communication buffers and allocator fragmentation (an assumption, not a
measurement). The embedding and logits are not counted, and an MoE layer's
activations are counted as a dense layer's of the same hidden size (its k routed
experts' inputs and outputs are not modelled separately).
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
from .context import attention_flops_per_gpu_layer, ring_step_times
from .experts import MAX_EXPERTS, all_to_all_sent_per_gpu_layer_bytes
from .hardware import GPUS_PER_NODE
from .memory import GRAD_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES
from .models import ModelConfig, active_param_count, expert_param_count, param_count
from .pipeline import activation_transfer_bytes
from .tensor import ALL_REDUCES_PER_LAYER, sent_per_gpu_layer_bytes
from .zero import ZERO_STAGES, state_per_gpu_bytes

__all__ = [
    "ALLOWANCE_BYTES",
    "FLOPS_PER_PARAM_PER_TOKEN_FULL",
    "Layout",
    "LayoutCensus",
    "MAX_PLAN_BATCH",
    "Plan",
    "REASONS",
    "RunSpec",
    "ZERO3_GATHERED_LAYERS",
    "attention_passes",
    "degrees",
    "dp_collectives",
    "expert_degrees",
    "flops_per_param_per_token",
    "inside_node",
    "layers_in_flight",
    "layout_census",
    "layout_memory",
    "layout_times",
    "microbatch_counts",
    "model_args",
    "plan",
    "reject_reason",
    "run_spec",
    "stage_layers",
]

REASONS = ("tp_heads", "tp_node", "cp_seq", "pp_layers", "ep_experts", "ep_sp", "batch", "zero_pp", "memory")
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
    grad_bytes: float = GRAD_BYTES  # 4 for Megatron-LM's fp32 gradient buffer (calc.precision)
    kv_heads: int = 0  # 0: as many as ``heads`` (no grouped-query attention)
    active_params: float = 0.0  # 0: ``params`` (a dense model)
    expert_params: float = 0.0  # the routed experts' parameters, all layers
    experts: int = 0  # routed experts per MoE layer, 0 for a dense model
    experts_per_token: int = 0
    moe_layers: int = 0

    @property
    def key_value_heads(self) -> int:
        return self.kv_heads or self.heads

    @property
    def used_params(self) -> float:
        """Ψ_a, the parameters one token uses."""
        return self.active_params or self.params

    @property
    def steps(self) -> float:
        """Optimizer steps D/(B·s) (a real number; the last step may be partial)."""
        return self.tokens / (self.global_batch * self.seq_len)

    @property
    def attention_flops_per_token(self) -> float:
        """Training FLOP of the attention matmuls per token, all layers: L · passes ·
        2·s·h (causal, ``calc.context.attention_flops_per_gpu_layer`` per token)."""
        return self.layers * attention_passes(self.recompute) * 2.0 * self.seq_len * self.hidden

    @property
    def param_flops_per_token(self) -> float:
        """Training FLOP of the parameters per token, κ·Ψ_a (``flops_per_param_per_token``)."""
        return flops_per_param_per_token(self.recompute) * self.used_params

    @property
    def flops(self) -> float:
        """Training FLOP (κ·Ψ_a + attention)·D, κ = 6 or 8 (``flops_per_param_per_token``)."""
        return (self.param_flops_per_token + self.attention_flops_per_token) * self.tokens

    @property
    def batch_tokens(self) -> float:
        """Tokens of one global batch, B·s (Narayanan et al. 2021, Sec. 5.1: a run of D
        tokens takes D/(B·s) iterations)."""
        return float(self.global_batch * self.seq_len)

    @property
    def step_flops(self) -> float:
        """Training FLOP of one optimizer step, (κ·Ψ_a + attention)·B·s: ``flops`` over
        ``steps``."""
        return (self.param_flops_per_token + self.attention_flops_per_token) * self.batch_tokens

    @property
    def cluster_flops_per_s(self) -> float:
        """G·X, the FLOP/s of all the GPUs while they compute (the denominator of
        Narayanan et al. 2021, Eq. 4)."""
        return self.gpus * self.flops_per_gpu

    @property
    def ideal_seconds(self) -> float:
        """(κ·Ψ_a + attention)·D / (G·X): the run with no bubble and no communication
        (Narayanan et al. 2021, Eq. 4 when κ = 8, plus the attention term of their Eq. 3,
        causal)."""
        return self.flops / self.cluster_flops_per_s


class Layout(NamedTuple):
    """One layout and its verdict (an immutable tuple: thousands are made per plan, and
    a NamedTuple is several times cheaper to build than a frozen dataclass).

    ``reason`` is "" when it fits, else one of ``REASONS``. ``evaluated`` says whether
    memory and times were computed (only for layouts that pass every check before
    ``memory``); otherwise those fields are 0. Memory in bytes per GPU, times in
    seconds; ``compute_s``, ``bubble_s``, ``*_comm_s`` and ``step_s`` are per step,
    ``comm_s`` = tp + cp + ep + pp + dp (exposed), ``run_s`` for the whole run.
    """

    tp: int
    cp: int
    pp: int
    dp: int
    ep: int
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
    cp_comm_s: float
    ep_comm_s: float
    pp_comm_s: float
    dp_comm_s: float
    comm_s: float
    step_s: float
    run_s: float


@dataclass(frozen=True)
class Plan:
    """Every layout: ``feasible`` sorted by run time (ties: lower ZeRO stage, then
    smaller t, p, cp, ep, m), ``rejected`` in enumeration order (t, cp, p, ep, stage, m
    ascending; ep = 1 for a layout ruled out before ep matters); ``counts`` maps each reason of ``REASONS`` to how many layouts it
    rejects."""

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
    forward). Selective recomputation reruns only the attention matmuls, which 6 per
    parameter leaves out (``attention_passes`` counts them), so it stays 6."""
    mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
    return FLOPS_PER_PARAM_PER_TOKEN_FULL if mode == "full" else FLOPS_PER_PARAM_PER_TOKEN


def attention_passes(recompute: str) -> int:
    """How many forward passes' worth of the attention matmuls one training step costs:
    3 (forward, and a backward of twice its FLOP), 4 when they are recomputed, as both
    selective (Korthikanti et al. 2022, Sec. 5: it recomputes exactly this part) and
    full recomputation do."""
    mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
    return 3 if mode == "none" else 4


def _powers_of_two_dividing(value: int) -> list[int]:
    out, k = [], 1
    while value % k == 0:
        out.append(k)
        k *= 2
    return out


def degrees(gpus: int) -> tuple[tuple[int, int, int, int], ...]:
    """Every (t, cp, p, d) with t a power of two dividing n, cp a power of two dividing
    n/t, p a divisor of n/(t·cp) and d = n/(t·cp·p), in ascending (t, cp, p) order
    (Narayanan et al. 2021, Sec. 3, with Megatron-Core's cp)."""
    n = check_int("gpus", gpus, 1, MAX_GPUS)
    out = []
    for t in _powers_of_two_dividing(n):
        for c in _powers_of_two_dividing(n // t):
            rest = n // (t * c)
            out.extend((t, c, p, rest // p) for p in _divisors(rest))
    return tuple(out)


def expert_degrees(*, cp: int, dp: int, experts: int) -> tuple[int, ...]:
    """The ep to try: (1,) for a dense model (``experts`` = 0), else every power of two
    dividing cp·d (Megatron-Core: the expert grid's n/(t·p) GPUs must split into ep ×
    expert-data) up to E (more GPUs than experts would leave some without one)."""
    c = check_int("cp", cp, 1, MAX_GPUS)
    d = check_int("dp", dp, 1, MAX_GPUS)
    e = check_int("experts", experts, 0, MAX_EXPERTS)
    return (1,) if e == 0 else tuple(x for x in _powers_of_two_dividing(c * d) if x <= e)


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


def layers_in_flight(*, layers: int, pp: int, microbatches: int) -> int:
    """The layers' worth of activations the first stage holds under 1F1B,
    min(p, m)·⌈L/p⌉: min(p, m) micro-batches in flight (Narayanan et al. 2021, Sec.
    2.2.1; Megatron-LM clamps the warm-up to m forward passes), each for the ⌈L/p⌉
    layers of the busiest stage. L layers when p divides L and m ≥ p (Korthikanti et al.
    2022, Sec. 4.2.3: the first stage stores activations of L layers)."""
    l = check_int("layers", layers, 1, MAX_LAYERS)
    p = check_int("pp", pp, 1, l)
    m = check_int("microbatches", microbatches, 1, MAX_PLAN_BATCH)
    return min(p, m) * stage_layers(l, p)


@dataclass(frozen=True)
class LayoutCensus:
    """How ``plan`` counts the layouts of a dense model with context parallelism off
    (cp = ep = 1), term by term.

    ``pairs``: the (t, p) of ``degrees`` (t a power of two dividing G, p dividing G/t);
    ``triples``: the (t, p, m), m over ``microbatch_counts`` (the divisors of B/d), a
    (t, p) whose d does not divide B counted once (its layouts have m = 0);
    ``pipelined``: the triples with p > 1; ``stages``: the ZeRO stages tried;
    ``stages_refused_with_pp``: those refused with p > 1 (2 and 3, the ``zero_pp`` rule).
    """

    pairs: int
    triples: int
    pipelined: int
    stages: int
    stages_refused_with_pp: int

    @property
    def layouts(self) -> int:
        """triples × stages: ``len(plan(...).layouts)`` for such a model."""
        return self.triples * self.stages

    @property
    def zero_pp_candidates(self) -> int:
        """pipelined × stages refused with p > 1: the layouts the ``zero_pp`` rule would
        reject if no earlier rule (heads, node, layers, batch) rejected them first."""
        return self.pipelined * self.stages_refused_with_pp


def layout_census(*, gpus: int, global_batch: int) -> LayoutCensus:
    """The ``LayoutCensus`` of G = ``gpus`` GPUs and B = ``global_batch`` sequences:
    layouts = Σ over (t, p) of max(1, #divisors of B/d) × 4 stages, d = G/(t·p) (the
    enumeration of the module docstring; Narayanan et al. 2021, Sec. 3)."""
    big_b = check_int("global_batch", global_batch, 1, MAX_PLAN_BATCH)
    pairs = triples = pipelined = 0
    for _, c, p, d in degrees(gpus):
        if c > 1:
            continue
        options = max(1, len(microbatch_counts(big_b, d)))
        pairs, triples = pairs + 1, triples + options
        pipelined += options if p > 1 else 0
    return LayoutCensus(pairs=pairs, triples=triples, pipelined=pipelined, stages=len(ZERO_STAGES),
                        stages_refused_with_pp=len([z for z in ZERO_STAGES if z >= 2]))


@dataclass(frozen=True)
class _Shape:
    """The numbers the structural rules look at."""

    heads: int
    kv_heads: int
    layers: int
    seq_len: int
    global_batch: int
    gpus_per_node: int
    experts: int
    sequence_parallel: bool


def reject_reason(
    *,
    tp: int,
    pp: int,
    dp: int,
    zero_stage: int,
    layers: int,
    heads: int,
    seq_len: int = 4096,
    global_batch: int,
    gpus_per_node: int = GPUS_PER_NODE,
    cp: int = 1,
    ep: int = 1,
    kv_heads: int = 0,
    experts: int = 0,
    sequence_parallel: bool = False,
) -> str:
    """The first structural reason (``REASONS`` order, ``memory`` excluded) that rules
    out the layout, or "" (see the module docstring for each rule and its source).
    ``kv_heads`` 0 means as many as ``heads``; ``experts`` 0 a dense model."""
    t = check_int("tp", tp, 1, MAX_GPUS)
    p = check_int("pp", pp, 1, MAX_GPUS)
    d = check_int("dp", dp, 1, MAX_GPUS)
    c = check_int("cp", cp, 1, MAX_GPUS)
    e = check_int("ep", ep, 1, MAX_GPUS)
    z = check_choice("zero_stage", zero_stage, ZERO_STAGES)
    a = check_int("heads", heads, 1, MAX_HEADS)
    shape = _Shape(
        heads=a,
        kv_heads=check_int("kv_heads", kv_heads, 0, a) or a,
        layers=check_int("layers", layers, 1, MAX_LAYERS),
        seq_len=check_int("seq_len", seq_len, 1, MAX_SEQ_LEN),
        global_batch=check_int("global_batch", global_batch, 1, MAX_PLAN_BATCH),
        gpus_per_node=check_int("gpus_per_node", gpus_per_node, 1, 1024),
        experts=check_int("experts", experts, 0, MAX_EXPERTS),
        sequence_parallel=check_choice("sequence_parallel", sequence_parallel, (False, True)),
    )
    return _structural(shape, t, c, p, d, e) or ("zero_pp" if z >= 2 and p > 1 else "")


def _model_reason(x: _Shape, t: int, c: int, p: int) -> str:
    """The rules that look only at t, cp and p."""
    if x.heads % t or x.kv_heads % t:
        return "tp_heads"
    if t > x.gpus_per_node or x.gpus_per_node % t:
        return "tp_node"
    if c > 1 and x.seq_len % (2 * c):
        return "cp_seq"
    if p > x.layers:
        return "pp_layers"
    return ""


def _expert_reason(x: _Shape, t: int, e: int) -> str:
    if x.experts and x.experts % e:
        return "ep_experts"
    if t > 1 and e > 1 and not x.sequence_parallel:
        return "ep_sp"
    return ""


def _structural(x: _Shape, t: int, c: int, p: int, d: int, e: int) -> str:
    return _model_reason(x, t, c, p) or _expert_reason(x, t, e) or ("batch" if x.global_batch % d else "")


def _shape_of(spec: RunSpec) -> _Shape:
    return _Shape(spec.heads, spec.key_value_heads, spec.layers, spec.seq_len, spec.global_batch,
                  spec.gpus_per_node, spec.experts, spec.sequence_parallel)


def layout_memory(
    spec: RunSpec, *, tp: int, pp: int, dp: int, zero_stage: int, microbatches: int, cp: int = 1, ep: int = 1
) -> tuple[float, float, float]:
    """(needed, state, activations) bytes per GPU of one layout (module docstring):

        state  = ZeRO-stage state of (Ψ − Ψ_e)/(t·p) over d·cp and of Ψ_e/(t·p·ep) over
                 d·cp/ep (Rajbhandari et al. 2019, Sec. 5)
                 [+ stage 3: full fp16 copies of 2 layers, minus the shard already held]
        acts   = [activation_bytes(min(p, m)·⌈L/p⌉ layers, h, a, s, b, t, SP, recompute)
                  + rematerialized_bytes(...)] / cp   (Korthikanti et al. 2022, Sec. 4.2.3)
        needed = state + acts + ALLOWANCE_BYTES
    """
    t, c, p, d, e, z, m = _check_layout(spec, tp, cp, pp, dp, ep, zero_stage, microbatches)
    state = _state(spec, t, c, p, d, e, z)
    acts = _activations(_activation_unit(spec, t, c, p), p, m, spec.global_batch // (d * m))
    return state + acts + ALLOWANCE_BYTES, state, acts


def _check_layout(spec: RunSpec, tp: int, cp: int, pp: int, dp: int, ep: int, zero_stage: int,
                  microbatches: int) -> tuple[int, int, int, int, int, int, int]:
    if not isinstance(spec, RunSpec):
        raise ValueError(f"spec must be a RunSpec (from plan's arguments), got {spec!r}")
    t = check_int("tp", tp, 1, spec.gpus)
    c = check_int("cp", cp, 1, spec.gpus)
    p = check_int("pp", pp, 1, spec.layers)
    d = check_int("dp", dp, 1, spec.gpus)
    e = check_int("ep", ep, 1, spec.gpus)
    z = check_choice("zero_stage", zero_stage, ZERO_STAGES)
    m = check_int("microbatches", microbatches, 1, spec.global_batch)
    if (t * c * p * d != spec.gpus or p > spec.layers or spec.global_batch % (d * m) or (c * d) % e
            or (e > 1 and not spec.experts) or (c > 1 and spec.seq_len % (2 * c))):
        raise ValueError(
            f"tp × cp × pp × dp must equal gpus ({spec.gpus}), pp be at most the layers ({spec.layers}), "
            f"dp × microbatches divide global_batch ({spec.global_batch}), ep divide cp × dp "
            f"(and be 1 for a dense model) and 2 × cp divide seq_len ({spec.seq_len}), "
            f"got {t} × {c} × {p} × {d}, ep {e}, with {m} micro-batches"
        )
    return t, c, p, d, e, z, m


def stage_layers(layers: int, pp: int) -> int:
    """Layers on the busiest of p stages, ⌈L/p⌉ (L/p when p divides L)."""
    return -(-layers // pp)


def _share(spec: RunSpec, p: int) -> float:
    """The busiest stage's share of the layers, ⌈L/p⌉/L (1/p when p divides L)."""
    return stage_layers(spec.layers, p) / spec.layers


def _gathered(spec: RunSpec, share: float, p: int, group: int) -> float:
    """ZeRO-3's full fp16 copies of the layers being computed, less the shard held."""
    stage = stage_layers(spec.layers, p)
    return WEIGHT_BYTES * share * min(ZERO3_GATHERED_LAYERS, stage) / stage * (1.0 - 1.0 / group)


def _state(spec: RunSpec, t: int, c: int, p: int, d: int, e: int, z: int) -> float:
    dense = (spec.params - spec.expert_params) * _share(spec, p) / t
    group = d * c
    state = state_per_gpu_bytes(params=dense, dp=group, zero_stage=z, optimizer_bytes=spec.optimizer_bytes,
                                grad_bytes=spec.grad_bytes)
    if z == 3:
        state += _gathered(spec, dense, p, group)
    if spec.expert_params:
        experts, expert_group = spec.expert_params * _share(spec, p) / (t * e), group // e
        state += state_per_gpu_bytes(params=experts, dp=expert_group, zero_stage=z,
                                     optimizer_bytes=spec.optimizer_bytes, grad_bytes=spec.grad_bytes)
        if z == 3:
            state += _gathered(spec, experts, p, expert_group)
    return state


def _activation_unit(spec: RunSpec, t: int, c: int, p: int) -> tuple[float, float]:
    """(bytes one stage's layers store, bytes rebuilt during the backward) per GPU for
    one sequence (b = 1) in flight; both grow as b."""
    kw = dict(seq_len=spec.seq_len, micro_batch=1, hidden=spec.hidden, heads=spec.heads, tp=t,
              sequence_parallel=spec.sequence_parallel, recompute=spec.recompute)
    return activation_bytes(layers=stage_layers(spec.layers, p), **kw) / c, rematerialized_bytes(**kw) / c


def _activations(unit: tuple[float, float], p: int, m: int, b: int) -> float:
    """min(p, m) micro-batches of b sequences in flight (1F1B), plus the rebuilt layer."""
    stored, rebuilt = unit
    return (min(p, m) * stored + rebuilt) * b


def layout_times(
    spec: RunSpec, *, tp: int, pp: int, dp: int, zero_stage: int, microbatches: int, cp: int = 1, ep: int = 1
) -> tuple[float, float, float, float, float, float, float, float]:
    """(compute, bubble, tp_comm, cp_comm, ep_comm, pp_comm, dp_comm, step) seconds per
    step of one layout; the communication terms are the exposed parts (module
    docstring):

        step = (m + p − 1)·(T_c + T_tp + T_cp + T_ep + T_pp) + exposed DP
        compute = m·T_c, bubble = (p − 1)·(T_c + T_tp + T_cp + T_ep + T_pp)
    """
    t, c, p, d, e, z, m = _check_layout(spec, tp, cp, pp, dp, ep, zero_stage, microbatches)
    per = _per_microbatch(_per_sequence(spec, t, c, p, e), spec.global_batch // (d * m))
    k = flops_per_param_per_token(spec.recompute)
    return _times(k, m, p, per, _dp_collectives(spec, t, c, p, d, e, z), _dp_link(spec, t, c, d))


def inside_node(span: int, gpus_per_node: int = GPUS_PER_NODE) -> bool:
    """Whether a group of ``span`` consecutive ranks stays inside one node: it fits in a
    node and tiles it (module docstring: t·cp for a context-parallel group, t·ep for an
    expert-parallel one, t·cp·d for a data-parallel one)."""
    s = check_int("span", span, 1, MAX_GPUS)
    g = check_int("gpus_per_node", gpus_per_node, 1, 1024)
    return s <= g and g % s == 0


def _link(spec: RunSpec, span: int) -> float:
    """The intra-node link when ``span`` consecutive ranks fit in (and tile) a node."""
    inside = span <= spec.gpus_per_node and spec.gpus_per_node % span == 0
    return spec.intra_bytes_per_s if inside else spec.inter_bytes_per_s


def _per_microbatch(unit: tuple[float, float, float, float, float], b: int) -> tuple[float, float, float, float, float]:
    """(T_c, T_tp, T_cp, T_ep, T_pp) seconds of one micro-batch of b sequences on one GPU:
    b times those of one sequence, since every term (FLOP, bytes, and the exposed part
    of a ring step, a difference of two terms that both grow as b) is linear in b."""
    return tuple(b * x for x in unit)  # type: ignore[return-value]


def _per_sequence(spec: RunSpec, t: int, c: int, p: int, e: int) -> tuple[float, float, float, float, float]:
    """(T_c, T_tp, T_cp, T_ep, T_pp) seconds of one micro-batch of one sequence on one GPU."""
    b = 1
    k = flops_per_param_per_token(spec.recompute)
    s, h, stage = spec.seq_len, spec.hidden, stage_layers(spec.layers, p)
    recomputed = spec.recompute != "none"
    attention = attention_flops_per_gpu_layer(hidden=h, seq_len=s, micro_batch=b, cp=c)
    flops = k * spec.used_params * _share(spec, p) / t * b * s / c + attention_passes(spec.recompute) * attention / t * stage
    t_c = flops / spec.flops_per_gpu
    local = s // c  # the tokens of one sequence on one GPU
    t_tp = 0.0
    if t > 1:
        reduces = ALL_REDUCES_PER_LAYER + (_RECOMPUTED_ALL_REDUCES if spec.recompute == "full" else 0)
        sent = sent_per_gpu_layer_bytes(hidden=h, seq_len=local, micro_batch=b, tp=t)
        t_tp = sent * reduces / ALL_REDUCES_PER_LAYER * stage / spec.intra_bytes_per_s
    t_cp = 0.0
    if c > 1:
        ring = ring_step_times(hidden=h, heads=spec.heads, kv_heads=spec.key_value_heads, seq_len=s,
                               micro_batch=b, cp=c, flops_per_gpu=spec.flops_per_gpu,
                               bytes_per_s=_link(spec, t * c))
        forward = max(0.0, ring.forward_transfer - ring.forward_compute)
        backward = max(0.0, ring.backward_transfer - ring.backward_compute)
        t_cp = (c - 1) * ((2 if recomputed else 1) * forward + backward) / t * stage
    t_ep = 0.0
    if e > 1:
        both = all_to_all_sent_per_gpu_layer_bytes(tokens=b * local, hidden=h,
                                                   experts_per_token=spec.experts_per_token, ep=e)
        sent = both * (1.5 if spec.recompute == "full" else 1.0) / t  # the forward's half again
        t_ep = sent * spec.moe_layers * _share(spec, p) / _link(spec, t * e)
    t_pp = 0.0
    if p > 1:
        message = activation_transfer_bytes(hidden=h, seq_len=local, micro_batch=b)
        link = spec.intra_bytes_per_s if spec.gpus <= spec.gpus_per_node else spec.inter_bytes_per_s
        one_way = message / t / link
        if t > 1 and not spec.sequence_parallel:
            one_way += ring_bytes_per_rank("all_gather", message, t) / spec.intra_bytes_per_s
        t_pp = 2.0 * one_way  # activations forward, their gradient back
    return t_c, t_tp, t_cp, t_ep, t_pp


def _dp_link(spec: RunSpec, t: int, c: int, d: int) -> float:
    return _link(spec, t * c * d)


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


def _dp_collectives(spec: RunSpec, t: int, c: int, p: int, d: int, e: int, z: int
                    ) -> tuple[tuple[str, float, str, bool], ...]:
    """The dense part's collectives over d·cp plus the routed experts' over d·cp/ep:
    the same operations at the same moments, so their bytes add (one window hides
    both)."""
    share = _share(spec, p)
    dense = dp_collectives(share_params=(spec.params - spec.expert_params) * share / t, dp=d * c, zero_stage=z)
    if not spec.expert_params:
        return dense
    experts = dp_collectives(share_params=spec.expert_params * share / (t * e), dp=d * c // e, zero_stage=z)
    if not dense:
        return experts
    extra = {(op, when, every): sent for op, sent, when, every in experts}
    return tuple((op, sent + extra.get((op, when, every), 0.0), when, every) for op, sent, when, every in dense)


def _dp_exposed(collectives: tuple[tuple[str, float, str, bool], ...], link: float, m: int,
                t_fwd: float, t_bwd: float) -> float:
    """Σ count × max(0, bytes/link − window) over ``dp_collectives`` (count m for the
    per-micro-batch ones, else 1)."""
    if not collectives:
        return 0.0
    return math.fsum((m if every else 1) * max(0.0, sent / link - (t_fwd if when == "forward" else t_bwd))
                     for _, sent, when, every in collectives)


def _times(k: int, m: int, p: int, per: tuple[float, float, float, float, float],
           collectives: tuple[tuple[str, float, str, bool], ...], link: float
           ) -> tuple[float, float, float, float, float, float, float, float]:
    t_c, t_tp, t_cp, t_ep, t_pp = per
    t_fwd = t_c * 2.0 / k
    t_bwd = t_c - t_fwd
    slot = t_c + t_tp + t_cp + t_ep + t_pp
    dp_s = _dp_exposed(collectives, link, m, t_fwd, t_bwd)
    step = (m + p - 1) * slot + dp_s
    return m * t_c, (p - 1) * slot, m * t_tp, m * t_cp, m * t_ep, m * t_pp, dp_s, step


def model_args(model: ModelConfig) -> dict[str, float | int]:
    """The model arguments of ``plan`` and ``run_spec`` for a ``calc.models`` config: its
    shape and parameter count, and for an MoE model the routed experts (Ψ_e = MoE layers
    × E × ``expert_param_count``) and the parameters a token uses (``active_param_count``)."""
    args: dict[str, float | int] = dict(params=float(param_count(model)), layers=model.layers, hidden=model.hidden,
                                        heads=model.heads, kv_heads=model.kv_heads)
    if model.experts:
        args.update(active_params=float(active_param_count(model)),
                    expert_params=float(model.moe_layers * model.experts * expert_param_count(model)),
                    experts=model.experts, experts_per_token=model.experts_per_token, moe_layers=model.moe_layers)
    return args


def run_spec(
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
    grad_bytes: float = GRAD_BYTES,
    kv_heads: int = 0,
    active_params: float = 0.0,
    expert_params: float = 0.0,
    experts: int = 0,
    experts_per_token: int = 0,
    moe_layers: int = 0,
) -> RunSpec:
    """The validated ``RunSpec`` of ``plan``'s arguments (their meaning is there), for
    ``layout_memory`` and ``layout_times`` on a layout of one's own choosing."""
    psi = check_real("params", params, 0, MAX_PARAMS, lo_inclusive=False)
    l = check_int("layers", layers, 1, MAX_LAYERS)
    a = check_int("heads", heads, 1, MAX_HEADS)
    e = check_int("experts", experts, 0, MAX_EXPERTS)
    moe = (check_real("active_params", active_params, 0, psi),
           check_real("expert_params", expert_params, 0, psi),
           check_int("experts_per_token", experts_per_token, 0, e),
           check_int("moe_layers", moe_layers, 0, l))
    if (e == 0) != (moe[1] == 0 and moe[2] == 0 and moe[3] == 0):
        raise ValueError("experts, expert_params, experts_per_token and moe_layers must all be 0 "
                         f"(a dense model) or all be positive, got {experts}, {expert_params}, "
                         f"{experts_per_token}, {moe_layers}")
    return RunSpec(
        params=psi,
        layers=l,
        hidden=check_int("hidden", hidden, 1, MAX_HIDDEN),
        heads=a,
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
        grad_bytes=check_real("grad_bytes", grad_bytes, 0, MAX_OPTIMIZER_BYTES),
        kv_heads=check_int("kv_heads", kv_heads, 0, a),
        active_params=moe[0],
        expert_params=moe[1],
        experts=e,
        experts_per_token=moe[2],
        moe_layers=moe[3],
    )


def _rejected(t: int, c: int, p: int, d: int, e: int, z: int, m: int, b: int, reason: str) -> Layout:
    return Layout(t, c, p, d, e, z, m, b, False, reason, False,
                  0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


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
    grad_bytes: float = GRAD_BYTES,
    kv_heads: int = 0,
    active_params: float = 0.0,
    expert_params: float = 0.0,
    experts: int = 0,
    experts_per_token: int = 0,
    moe_layers: int = 0,
    context_parallel: bool = False,
) -> Plan:
    """Every layout of ``gpus`` GPUs for a model of Ψ = ``params`` parameters (L
    ``layers``, hidden size h, a ``heads`` and ``kv_heads`` key/value heads, 0 = a,
    sequences of s = ``seq_len`` tokens) trained on D = ``tokens`` tokens in global
    batches of B = ``global_batch`` sequences; GPUs of ``memory_bytes`` sustaining X =
    ``flops_per_gpu`` while they compute; links of ``intra_bytes_per_s`` inside a node
    and ``inter_bytes_per_s`` between nodes (per GPU, one direction); ``recompute``
    one of none, selective, full (Korthikanti et al. 2022); ``sequence_parallel`` as
    Korthikanti et al. 2022, Sec. 4.2.2; ``optimizer_bytes`` K, the optimizer's bytes
    per parameter (12 for mixed-precision Adam, Rajbhandari et al. 2019, Sec. 3.1) and
    ``grad_bytes`` the gradients' (2; 4 with Megatron-LM's fp32 gradient buffer).

    A mixture of experts: ``experts`` E routed experts per MoE layer, ``experts_per_
    token`` k, ``moe_layers`` of the L layers, ``expert_params`` Ψ_e the routed experts'
    parameters (all layers), ``active_params`` Ψ_a those one token uses
    (``calc.models.active_param_count``); all 0 for a dense model.

    ``context_parallel`` lets the search split sequences (cp > 1); off, every layout
    has cp = 1, as in a run that does not use it. It is a choice rather than always on
    because this model flatters cp: the ring's transfer hides behind attention while
    tensor parallelism's all-reduces never hide, so inside a node the search may trade
    t for cp even for 2,048-token sequences, where practitioners keep cp = 1 (Megatron-
    Core's guide recommends cp for long sequences, from about 8K tokens).

    The enumeration, rejection rules, time and memory model are those of the module
    docstring. Per (t, cp, p) the activations of one sequence are computed once, per
    (t, cp, p, ep) the times of one sequence and per stage the state; every term is
    linear in b. A layout ruled out before ep matters (``tp_heads`` to ``pp_layers``)
    is listed once, with ep = 1.

    GPT-3 175B on 1,024 A100 80 GB (300 GB/s NVLink, 25 GB/s InfiniBand HDR per GPU),
    300B tokens, B = 1,536, full recomputation, X = 140 TFLOP/s: the best layout takes
    about 34 days, as Narayanan et al. 2021 estimate (Sec. 5.1, Eq. 4).
    """
    # every argument but the search switch is run_spec's, under the same name
    arguments = dict(locals())
    split = check_choice("context_parallel", arguments.pop("context_parallel"), (False, True))
    spec = run_spec(**arguments)
    steps = spec.steps
    k = flops_per_param_per_token(spec.recompute)
    feasible: list[Layout] = []
    rejected: list[Layout] = []
    counts = dict.fromkeys(REASONS, 0)
    shape = _shape_of(spec)
    big_b = spec.global_batch
    for t, c, p, d in degrees(spec.gpus):
        if c > 1 and not split:
            continue
        ms = microbatch_counts(big_b, d)
        eps = expert_degrees(cp=c, dp=d, experts=spec.experts)
        reason = _model_reason(shape, t, c, p)
        if reason:  # decided before ep matters: listed once, with ep = 1
            for z in ZERO_STAGES:
                for m in ms or (0,):
                    rejected.append(_rejected(t, c, p, d, 1, z, m, big_b // (d * m) if m else 0, reason))
            counts[reason] += len(ZERO_STAGES) * max(1, len(ms))
            continue
        allowed = [z for z in ZERO_STAGES if z < 2 or p == 1]
        link = _dp_link(spec, t, c, d)
        unit = _activation_unit(spec, t, c, p) if ms else (0.0, 0.0)
        acts = {m: _activations(unit, p, m, big_b // (d * m)) for m in ms}
        for e in eps:
            reason = _expert_reason(shape, t, e) or ("batch" if big_b % d else "")
            if reason:
                for z in ZERO_STAGES:
                    for m in ms or (0,):
                        rejected.append(_rejected(t, c, p, d, e, z, m, big_b // (d * m) if m else 0, reason))
                counts[reason] += len(ZERO_STAGES) * max(1, len(ms))
                continue
            states = {z: _state(spec, t, c, p, d, e, z) for z in allowed}
            colls = {z: _dp_collectives(spec, t, c, p, d, e, z) for z in allowed}
            one = _per_sequence(spec, t, c, p, e)
            per_m = {m: _per_microbatch(one, big_b // (d * m)) for m in ms}
            for z in ZERO_STAGES:
                for m in ms:
                    b = big_b // (d * m)
                    if z >= 2 and p > 1:
                        rejected.append(_rejected(t, c, p, d, e, z, m, b, "zero_pp"))
                        counts["zero_pp"] += 1
                        continue
                    state = states[z]
                    need = state + acts[m] + ALLOWANCE_BYTES
                    fits = need <= spec.memory_bytes
                    compute_s, bubble_s, tp_s, cp_s, ep_s, pp_s, dp_s, step = _times(k, m, p, per_m[m], colls[z], link)
                    layout = Layout(t, c, p, d, e, z, m, b, fits, "" if fits else "memory", True,
                                    need, state, acts[m], compute_s, bubble_s, tp_s, cp_s, ep_s, pp_s, dp_s,
                                    tp_s + cp_s + ep_s + pp_s + dp_s, step, step * steps)
                    if fits:
                        feasible.append(layout)
                    else:
                        rejected.append(layout)
                        counts["memory"] += 1
    feasible.sort(key=lambda x: (float(f"{x.run_s:.9e}"), x.zero_stage, x.tp, x.pp, x.cp, x.ep, x.microbatches))
    return Plan(spec, tuple(feasible), tuple(rejected), tuple(counts.items()))
