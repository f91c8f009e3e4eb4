"""Mixture of experts (MoE) and expert parallelism.

An MoE layer replaces the one MLP of a transformer block by E expert MLPs and a
router that sends each token to the k experts with the highest scores (Shazeer et al.
2017, "Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts
Layer", Sec. 2; top-2 in GShard, Lepikhin et al. 2020, Sec. 2.2; top-1 in Switch
Transformer, Fedus et al. 2021, Sec. 2.1). Parameters grow with E, the work per token
only with k: "total" against "active" parameters.

Expert parallelism (GShard Sec. 2.2 and 3; Switch Sec. 2.2 and Fig. 3) puts E/ep
experts on each of ep GPUs. Tokens stay on the GPU that holds them for attention; an
all-to-all sends each token to the GPUs of its experts (dispatch) and a second one
brings the results back (combine), twice more in the backward pass.

An expert takes at most C = ⌈k·T/E · capacity_factor⌉ tokens of a batch of T
(Switch Sec. 2.2, "expert capacity = tokens per batch / number of experts × capacity
factor", with k copies of each token for top-k as in GShard's 2N/E); the tokens beyond
it are dropped (they skip the layer through the residual connection). Megatron-Core
computes the same ``ceil`` (``moe_utils.get_capacity``).

Experts here are SwiGLU MLPs as in Mixtral and DeepSeek-V3 (gate, up and down
matrices, 3·h·f parameters, no biases; Shazeer 2020, "GLU Variants Improve
Transformer"). Elements moved are 16-bit (``memory.ACTIVATION_BYTES``); a
multiply-add is 2 FLOP.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ._check import (
    MAX_BATCH,
    MAX_BYTES_PER_S,
    MAX_FLOPS_PER_S,
    MAX_GPUS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_OPTIMIZER_BYTES,
    check_choice,
    check_int,
    check_real,
)
from .memory import ACTIVATION_BYTES, GRAD_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES

__all__ = [
    "ALL_TO_ALLS_PER_PASS",
    "MATRICES_PER_EXPERT",
    "MAX_EXPERTS",
    "MAX_ROUTED_TOKENS",
    "PASSES",
    "MoeLayerTimes",
    "all_to_all_sent_per_gpu_layer_bytes",
    "capacity",
    "dispatch_counts",
    "dropped_tokens",
    "expert_flops_per_gpu_layer",
    "expert_load",
    "expert_params",
    "expert_state_per_gpu_bytes",
    "experts_per_gpu",
    "moe_layer_params",
    "moe_layer_times",
    "active_moe_layer_params",
    "route_tokens",
    "routed_sent_per_gpu_bytes",
]

MAX_EXPERTS = 4_096  # DeepSeek-V3 has 256 routed experts per layer; fine-grained MoEs go further
MAX_ROUTED_TOKENS = 65_536  # tokens a simulated routing handles (the widget's batch is far smaller)
PASSES = ("forward", "backward", "both")
# SwiGLU expert: gate and up (h -> f) and down (f -> h), no biases (Mixtral, DeepSeek-V3).
MATRICES_PER_EXPERT = 3
# Dispatch and combine per pass (GShard Sec. 3); the backward pass runs the
# transpose of each, the same bytes.
ALL_TO_ALLS_PER_PASS = 2
_BACKWARD_OVER_FORWARD = 2  # FLOP of a matmul's backward over its forward (Narayanan et al. 2021)


def _experts(experts: int, experts_per_token: int) -> tuple[int, int]:
    e = check_int("experts", experts, 1, MAX_EXPERTS)
    return e, check_int("experts_per_token", experts_per_token, 1, e)


def _ep(ep: int, experts: int) -> int:
    d = check_int("ep", ep, 1, MAX_GPUS)
    if experts % d:
        raise ValueError(f"ep must be a divisor of the {experts} experts, got {ep}")
    return d


def expert_params(*, hidden: int, moe_ffn: int) -> int:
    """Parameters of one SwiGLU expert: 3·h·f (gate, up, down). Mixtral 8x7B
    (h 4,096, f 14,336): 176,160,768; DeepSeek-V3 (h 7,168, f 2,048): 44,040,192."""
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    f = check_int("moe_ffn", moe_ffn, 1, MAX_HIDDEN)
    return MATRICES_PER_EXPERT * h * f


def moe_layer_params(*, hidden: int, moe_ffn: int, experts: int, shared_experts: int = 0) -> int:
    """Parameters of one MoE MLP: (E + shared) experts and the router's h·E matrix
    (Shazeer et al. 2017 Sec. 2.1, a linear gate without bias, as in Mixtral; shared
    experts see every token, DeepSeekMoE, Dai et al. 2024, Sec. 3.2)."""
    e = check_int("experts", experts, 1, MAX_EXPERTS)
    shared = check_int("shared_experts", shared_experts, 0, MAX_EXPERTS)
    return (e + shared) * expert_params(hidden=hidden, moe_ffn=moe_ffn) + hidden * e


def active_moe_layer_params(
    *, hidden: int, moe_ffn: int, experts: int, experts_per_token: int, shared_experts: int = 0
) -> int:
    """Parameters one token uses in an MoE MLP: its k routed experts, the shared ones
    and the router: (k + shared)·3·h·f + h·E."""
    e, k = _experts(experts, experts_per_token)
    shared = check_int("shared_experts", shared_experts, 0, MAX_EXPERTS)
    return (k + shared) * expert_params(hidden=hidden, moe_ffn=moe_ffn) + hidden * e


def experts_per_gpu(experts: int, ep: int) -> int:
    """E/ep routed experts on each GPU of the expert-parallel group (GShard Sec. 3)."""
    e = check_int("experts", experts, 1, MAX_EXPERTS)
    return e // _ep(ep, e)


def expert_state_per_gpu_bytes(
    *,
    hidden: int,
    moe_ffn: int,
    experts: int,
    moe_layers: int,
    ep: int,
    optimizer_bytes: float = OPTIMIZER_BYTES,
) -> float:
    """Training state of the routed experts one GPU holds: layers · E/ep · 3·h·f
    parameters at 2 + 2 + K bytes each (ZeRO Sec. 3.1, K = 12). Mixtral 8x7B (32 MoE
    layers, 8 experts) with ep = 8: 32 · 1 · 176,160,768 · 16 = 90.19e9 bytes."""
    layers = check_int("moe_layers", moe_layers, 0, MAX_LAYERS)
    k = check_real("optimizer_bytes", optimizer_bytes, 0, MAX_OPTIMIZER_BYTES)
    per_gpu = experts_per_gpu(experts, ep)
    return float(layers * per_gpu * expert_params(hidden=hidden, moe_ffn=moe_ffn)) * (WEIGHT_BYTES + GRAD_BYTES + k)


def capacity(*, tokens: int, experts: int, experts_per_token: int, capacity_factor: float) -> int:
    """Expert capacity C = ⌈k·T/E · capacity_factor⌉ token slots per expert (Switch
    Sec. 2.2; GShard's 2N/E for k = 2; Megatron-Core ``get_capacity``). 4,096 tokens,
    8 experts, top-2, factor 1.25: 1,280."""
    t = check_int("tokens", tokens, 1, MAX_BATCH)
    e, k = _experts(experts, experts_per_token)
    cf = check_real("capacity_factor", capacity_factor, 0, 1_000, lo_inclusive=False)
    return math.ceil(k * t / e * cf)


def route_tokens(
    *, tokens: int, experts: int, experts_per_token: int, seed: int, skew: float = 0.0
) -> tuple[tuple[int, ...], ...]:
    """A deterministic top-k routing of ``tokens`` tokens: for each, the k experts with
    the highest scores, best first (Shazeer et al. 2017, Sec. 2.1, top-k gating).

    The scores stand in for a trained router's logits: u + skew · (E − 1 − e)/(E − 1)
    with u uniform in [0, 1) from ``random.Random(seed)`` (Mersenne Twister, the same
    stream on every Python), so ``skew`` > 0 makes the low-numbered experts popular,
    the imbalance that load-balancing losses fight (Switch Sec. 2.2). Ties go to the
    lower expert number.
    """
    t = check_int("tokens", tokens, 1, MAX_ROUTED_TOKENS)
    e, k = _experts(experts, experts_per_token)
    rng = random.Random(check_int("seed", seed, 0, 2**32 - 1))
    bias = check_real("skew", skew, 0, 100)
    slope = [bias * (e - 1 - j) / (e - 1) if e > 1 else 0.0 for j in range(e)]
    routes = []
    for _ in range(t):
        scores = [rng.random() + slope[j] for j in range(e)]
        best = sorted(range(e), key=lambda j: (-scores[j], j))[:k]
        routes.append(tuple(best))
    return tuple(routes)


def _routes(routes: object, experts: int) -> tuple[tuple[int, ...], ...]:
    if not isinstance(routes, (list, tuple)) or len(routes) > MAX_ROUTED_TOKENS:
        raise ValueError(f"routes must be a list of at most {MAX_ROUTED_TOKENS} tokens' expert lists")
    out = []
    for i, chosen in enumerate(routes):
        if not isinstance(chosen, (list, tuple)) or not chosen:
            raise ValueError(f"routes[{i}] must be a non-empty list of expert numbers")
        experts_of_token = tuple(check_int(f"routes[{i}]", j, 0, experts - 1) for j in chosen)
        if len(set(experts_of_token)) != len(experts_of_token):
            raise ValueError(f"routes[{i}] must be distinct experts (top-k picks each once), got {list(chosen)}")
        out.append(experts_of_token)
    return tuple(out)


def expert_load(routes: object, experts: int) -> tuple[int, ...]:
    """Token copies each expert receives: how many tokens list it among their k."""
    e = check_int("experts", experts, 1, MAX_EXPERTS)
    load = [0] * e
    for chosen in _routes(routes, e):
        for j in chosen:
            load[j] += 1
    return tuple(load)


def dropped_tokens(load: object, capacity: int) -> int:
    """Token copies beyond each expert's capacity: Σ max(0, load − C) (Switch Sec. 2.2:
    overflowed tokens are not processed by the expert and pass on through the residual)."""
    c = check_int("capacity", capacity, 0, MAX_BATCH)
    if not isinstance(load, (list, tuple)):
        raise ValueError("load must be a list of token counts per expert")
    counts = [check_int(f"load[{i}]", n, 0, MAX_BATCH) for i, n in enumerate(load)]
    over = 0
    for n in counts:
        over += max(0, n - c)
    return over


def dispatch_counts(routes: object, *, experts: int, ep: int) -> tuple[tuple[int, ...], ...]:
    """Token copies each GPU sends each GPU in the dispatch all-to-all, ``[src][dst]``.

    The T routed tokens are split evenly over the ep GPUs in order (GPU g holds tokens
    g·T/ep … (g+1)·T/ep − 1) and GPU g holds experts g·E/ep … (g+1)·E/ep − 1 (GShard
    Sec. 3); a token goes once to each of its k experts, also when two sit on the same
    GPU (as ``all_to_all_single`` with one row per token copy does). The diagonal stays
    on the GPU. The combine all-to-all sends the transpose back.
    """
    e = check_int("experts", experts, 1, MAX_EXPERTS)
    d = _ep(ep, e)
    chosen = _routes(routes, e)
    if len(chosen) % d:
        raise ValueError(f"ep must be a divisor of the {len(chosen)} routed tokens, got {ep}")
    per_gpu_tokens, per_gpu_experts = len(chosen) // d, e // d
    counts = [[0] * d for _ in range(d)]
    for i, experts_of_token in enumerate(chosen):
        for j in experts_of_token:
            counts[i // per_gpu_tokens][j // per_gpu_experts] += 1
    return tuple(tuple(row) for row in counts)


def routed_sent_per_gpu_bytes(counts: object, *, hidden: int, bytes_per_element: int = ACTIVATION_BYTES) -> tuple[float, ...]:
    """Bytes each GPU sends in one dispatch all-to-all: the token copies it sends other
    GPUs (``dispatch_counts``, off the diagonal) × h × element bytes."""
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    e = check_int("bytes_per_element", bytes_per_element, 1, 8)
    if not isinstance(counts, (list, tuple)):
        raise ValueError("counts must be a square list of lists of token counts")
    if any(not isinstance(r, (list, tuple)) or len(r) != len(counts) for r in counts):
        raise ValueError("counts must be a square list of lists of token counts")
    rows = [list(r) for r in counts]
    sent = []
    for src, row in enumerate(rows):
        copies = 0
        for dst, n in enumerate(row):
            copies += check_int("counts", n, 0, MAX_BATCH) if dst != src else 0
        sent.append(float(copies * h * e))
    return tuple(sent)


def all_to_all_sent_per_gpu_layer_bytes(
    *, tokens: int, hidden: int, experts_per_token: int, ep: int, direction: str = "both"
) -> float:
    """Bytes each GPU sends per MoE layer when routing is balanced: its T tokens go to
    k experts each, (ep − 1)/ep of them on other GPUs, h elements of 2 bytes:

        dispatch = combine = T · k · h · 2 · (ep − 1)/ep,

    two all-to-alls forward and their two transposes backward (GShard Sec. 3).
    T = ``tokens`` is the tokens of one GPU (micro-batch × sequence). Mixtral 8x7B,
    4,096 tokens, top-2, ep = 8: 58.72e6 bytes per all-to-all, 117.4e6 forward.
    """
    t = check_int("tokens", tokens, 1, MAX_BATCH)
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    k = check_int("experts_per_token", experts_per_token, 1, MAX_EXPERTS)
    d = check_int("ep", ep, 1, MAX_GPUS)
    passes = {"forward": 1, "backward": 1, "both": 2}[check_choice("direction", direction, PASSES)]
    one = float(t) * k * h * ACTIVATION_BYTES * (d - 1) / d
    return passes * ALL_TO_ALLS_PER_PASS * one


def expert_flops_per_gpu_layer(*, tokens: int, hidden: int, moe_ffn: int, experts_per_token: int) -> float:
    """Forward FLOP of the routed experts on one GPU per MoE layer with balanced
    routing: the GPU's experts receive, on average, T·k token copies (T tokens per GPU),
    each 2·3·h·f FLOP through a SwiGLU expert."""
    t = check_int("tokens", tokens, 1, MAX_BATCH)
    k = check_int("experts_per_token", experts_per_token, 1, MAX_EXPERTS)
    return 2.0 * t * k * expert_params(hidden=hidden, moe_ffn=moe_ffn)


@dataclass(frozen=True)
class MoeLayerTimes:
    """One MoE layer on one GPU, forward plus backward, in seconds: the routed experts'
    compute and the four all-to-alls on the link between the expert-parallel GPUs."""

    compute: float
    all_to_all: float

    @property
    def comm_over_compute(self) -> float:
        return self.all_to_all / self.compute


def moe_layer_times(
    *,
    tokens: int,
    hidden: int,
    moe_ffn: int,
    experts_per_token: int,
    ep: int,
    flops_per_gpu: float,
    bytes_per_s: float,
) -> MoeLayerTimes:
    """Expert compute, forward and backward (3 × the forward FLOP, backward = 2 ×
    forward), at X = ``flops_per_gpu`` against the dispatch and combine bytes of both
    passes at β = ``bytes_per_s``. Their ratio,

        all_to_all / compute = (4·T·k·h·2·(ep − 1)/ep / β) / (18·T·k·h·f / X)
                             = 4/9 · (ep − 1)/ep · X / (f·β),

    depends on neither T, k nor h: only on the expert's width f and on X/β (why wide
    experts amortize the all-to-all, and why ep stays inside a node where it can).
    """
    x = check_real("flops_per_gpu", flops_per_gpu, 0, MAX_FLOPS_PER_S, lo_inclusive=False)
    beta = check_real("bytes_per_s", bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False)
    forward = expert_flops_per_gpu_layer(tokens=tokens, hidden=hidden, moe_ffn=moe_ffn,
                                         experts_per_token=experts_per_token)
    sent = all_to_all_sent_per_gpu_layer_bytes(tokens=tokens, hidden=hidden,
                                               experts_per_token=experts_per_token, ep=ep)
    return MoeLayerTimes(compute=(1 + _BACKWARD_OVER_FORWARD) * forward / x, all_to_all=sent / beta)
