"""3D parallelism: tensor (t) × pipeline (p) × data (d) parallel GPUs.

Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM" (PTD-P), Sec. 3: G = t·p·d GPUs (the paper writes n), tensor
parallelism inside a node, pipeline stages across nodes, data parallelism on top;
with global batch B and micro-batch b each pipeline runs m = B/(d·b) micro-batches
(Sec. 3.2), bubble (p−1)/(m+p−1) of the step time (Sec. 2.2.1,
``bubble_fraction_of_time`` as in
``calc.pipeline``). Optionally ZeRO over the data-parallel group
(Rajbhandari et al. 2019, Sec. 5) on each GPU's 1/(t·p) share of the model.
Seed 000, step 6 defaults: 8 TP × 4 PP × 8 DP with ZeRO-1, Llama 2 7B, 2T tokens.
"""

from __future__ import annotations

import math

from ._check import (
    MAX_BATCH,
    MAX_FLOPS_PER_S,
    MAX_GPUS,
    MAX_PARAMS,
    MAX_TOKENS,
    check_choice,
    check_int,
    check_real,
)
from .compute import FLOPS_PER_PARAM_PER_TOKEN
from .data_parallel import GLOBAL_BATCH_SEQS
from .hardware import GPUS, GPUS_PER_NODE
from .memory import GRAD_BYTES, OPTIMIZER_BYTES
from .pipeline import _bubble_fraction_of_time
from .zero import ZERO_STAGES, state_per_gpu_bytes as _zero_state

__all__ = [
    "bubble_fraction_of_time",
    "bubble_stretch",
    "gpus",
    "ideal_train_seconds",
    "microbatches_per_pipeline",
    "model_parallel_size",
    "nodes",
    "state_per_gpu_bytes",
    "train_seconds",
]

_FLOPS = GPUS["illustrative"].flops_per_s  # 150e12, seed 000 (illustrative)


def _tpd(tp: int, pp: int, dp: int) -> tuple[int, int, int]:
    t = check_int("tp", tp, 1, MAX_GPUS)
    p = check_int("pp", pp, 1, MAX_GPUS)
    d = check_int("dp", dp, 1, MAX_GPUS)
    if t * p * d > MAX_GPUS:
        raise ValueError(
            f"tp × pp × dp must be at most {MAX_GPUS} GPUs, got {t} × {p} × {d} = {t * p * d}"
        )
    return t, p, d


def gpus(*, tp: int, pp: int, dp: int) -> int:
    """G = t · p · d (Narayanan et al. 2021, Sec. 3, who write n). 8 × 4 × 8 = 256."""
    t, p, d = _tpd(tp, pp, dp)
    return t * p * d


def model_parallel_size(*, tp: int, pp: int) -> int:
    """t · p, the GPUs that hold one copy of the model (one pipeline of tensor-parallel
    groups); each holds Ψ/(t·p) parameters (Narayanan et al. 2021, Sec. 3: the
    "model-parallel size"). 8 × 4 = 32."""
    t = check_int("tp", tp, 1, MAX_GPUS)
    p = check_int("pp", pp, 1, MAX_GPUS)
    if t * p > MAX_GPUS:
        raise ValueError(f"tp × pp must be at most {MAX_GPUS} GPUs, got {t} × {p} = {t * p}")
    return t * p


def nodes(*, tp: int, pp: int, dp: int, gpus_per_node: int = GPUS_PER_NODE) -> int:
    """Servers needed: ceil(G / GPUs per node), 8 GPUs per node by default.
    256 GPUs: 32 nodes."""
    g = check_int("gpus_per_node", gpus_per_node, 1, 1024)
    return math.ceil(gpus(tp=tp, pp=pp, dp=dp) / g)


def state_per_gpu_bytes(
    *,
    params: float,
    tp: int,
    pp: int,
    dp: int,
    zero_stage: int = 0,
    optimizer_bytes: float = OPTIMIZER_BYTES,
    grad_bytes: float = GRAD_BYTES,
) -> float:
    """Training state per GPU. Each GPU holds Ψ/(t·p) parameters; without ZeRO that is
    (2 + 2 + K)Ψ/(t·p) = 16Ψ/(t·p) bytes (K = ``optimizer_bytes``, 12); with ZeRO stage
    k over the d data-parallel replicas, the ZeRO formula (Rajbhandari et al. 2019,
    Sec. 5) applied to Ψ/(t·p), e.g. stage 1: (4 + K/d)·Ψ/(t·p). Llama 2 7B,
    8 × 4 × 8, ZeRO-1: 1.158e9. ``grad_bytes`` replaces the gradients' 2 bytes (4 for
    Megatron-LM's fp32 gradient buffer, ``calc.precision``)."""
    ps = check_real("params", params, 0, MAX_PARAMS)
    t, p, d = _tpd(tp, pp, dp)
    k = check_choice("zero_stage", zero_stage, ZERO_STAGES)
    return _zero_state(params=ps / (t * p), dp=d, zero_stage=k, optimizer_bytes=optimizer_bytes,
                       grad_bytes=grad_bytes)


def microbatches_per_pipeline(
    *, dp: int, global_batch: int = GLOBAL_BATCH_SEQS, micro_batch: int = 1
) -> float:
    """m = B / (d · b) (Narayanan et al. 2021, Sec. 3.2). 1,024 / 8 = 128. A real
    number when d·b does not divide B (the formulas then use it as is)."""
    d = check_int("dp", dp, 1, MAX_GPUS)
    b_global = check_int("global_batch", global_batch, 1, MAX_BATCH)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    if d * b > b_global:
        raise ValueError(
            f"dp × micro_batch must be at most global_batch ({b_global}), "
            f"got {d} × {b} = {d * b}"
        )
    return b_global / (d * b)


def bubble_fraction_of_time(
    *, pp: int, dp: int, global_batch: int = GLOBAL_BATCH_SEQS, micro_batch: int = 1
) -> float:
    """Pipeline bubble as a fraction of the step time, (p−1)/(m+p−1) with m = B/(d·b)
    (Narayanan et al. 2021, Sec. 2.2.1 and 3.2; ``calc.pipeline.bubble_fraction_of_time``
    with this m). p = 4, d = 8: 3/131 = 0.0229."""
    p = check_int("pp", pp, 1, MAX_GPUS)
    m = microbatches_per_pipeline(dp=dp, global_batch=global_batch, micro_batch=micro_batch)
    return _bubble_fraction_of_time(p, m)


def ideal_train_seconds(
    *,
    params: float,
    tokens: float,
    tp: int,
    pp: int,
    dp: int,
    flops_per_gpu: float = _FLOPS,
) -> float:
    """Training time without bubble and communication, T = 6·Ψ·D / (G · X), G = t·p·d
    (Kaplan et al. 2020 Sec. 2.1: 6 FLOP per parameter per token). Llama 2 7B, 2T
    tokens, 8 × 4 × 8 at 150 TFLOP/s: 2.106e6 s (24.4 days)."""
    ps = check_real("params", params, 0, MAX_PARAMS)
    dt = check_real("tokens", tokens, 0, MAX_TOKENS)
    f = check_real("flops_per_gpu", flops_per_gpu, 0, MAX_FLOPS_PER_S, lo_inclusive=False)
    n = gpus(tp=tp, pp=pp, dp=dp)
    return FLOPS_PER_PARAM_PER_TOKEN * ps * dt / (n * f)


def bubble_stretch(
    *, pp: int, dp: int, global_batch: int = GLOBAL_BATCH_SEQS, micro_batch: int = 1
) -> float:
    """How much the bubble lengthens a step, 1/(1 − bubble) = (m + p − 1)/m
    (Narayanan et al. 2021, Sec. 2.2.1; bubble from ``bubble_fraction_of_time``).
    p = 4, d = 16 (m = 64): 67/64 = 1.047."""
    return 1.0 / (1.0 - bubble_fraction_of_time(pp=pp, dp=dp, global_batch=global_batch, micro_batch=micro_batch))


def train_seconds(
    *,
    params: float,
    tokens: float,
    tp: int,
    pp: int,
    dp: int,
    flops_per_gpu: float = _FLOPS,
    global_batch: int = GLOBAL_BATCH_SEQS,
    micro_batch: int = 1,
) -> float:
    """Training time with the bubble, without communication:

        T = 6·Ψ·D / (G · X) / (1 − bubble)

    (``ideal_train_seconds``; bubble from ``bubble_fraction_of_time``). Llama 2 7B,
    2T tokens, 8 × 4 × 8 at 150 TFLOP/s: 2.156e6 s (24.9 days).
    """
    ideal = ideal_train_seconds(params=params, tokens=tokens, tp=tp, pp=pp, dp=dp, flops_per_gpu=flops_per_gpu)
    idle = bubble_fraction_of_time(pp=pp, dp=dp, global_batch=global_batch, micro_batch=micro_batch)
    return ideal / (1.0 - idle)
