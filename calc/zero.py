"""ZeRO: shard the optimizer state, then the gradients, then the parameters over the
N_d data-parallel GPUs (``dp``).

Rajbhandari et al. 2019, "ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models": Sec. 5 and Fig. 1 (memory per GPU of the three stages, Ψ
parameters, K = 12 bytes of optimizer state per parameter for mixed-precision Adam),
Table 1 (per-device memory for 7.5B, 128B, 1T models), Sec. 7 (communication volume).
"""

from __future__ import annotations

from ._check import (
    MAX_BYTES,
    MAX_GPUS,
    MAX_OPTIMIZER_BYTES,
    MAX_PARAMS,
    check_choice,
    check_int,
    check_real,
)
from .collectives import bus_factor
from .hardware import GPUS
from .memory import GRAD_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES, StateBytes

__all__ = [
    "FIGURE1_PARAMS",
    "ZERO_STAGES",
    "bytes_per_param",
    "comm_over_dp",
    "fits",
    "reduction",
    "sent_per_gpu_bytes",
    "sent_per_gpu_elements",
    "state_per_gpu",
    "state_per_gpu_bytes",
]

ZERO_STAGES = (0, 1, 2, 3)  # 0 = plain data parallelism; 1 = P_os, 2 = P_os+g, 3 = P_os+g+p
FIGURE1_PARAMS = 7.5e9  # ZeRO Fig. 1 and Table 1: the 7.5B-parameter model (Ψ) of the worked figure


def _args(params: float, dp: int, zero_stage: int) -> tuple[float, int, int]:
    return (
        check_real("params", params, 0, MAX_PARAMS),
        check_int("dp", dp, 1, MAX_GPUS),
        check_choice("zero_stage", zero_stage, ZERO_STAGES),
    )


def state_per_gpu(
    *,
    params: float,
    dp: int,
    zero_stage: int,
    optimizer_bytes: float = OPTIMIZER_BYTES,
    grad_bytes: float = GRAD_BYTES,
) -> StateBytes:
    """Per-GPU bytes of fp16 weights, gradients and optimizer state.

    ZeRO Sec. 5 / Fig. 1 (Ψ = ``params``, N_d = ``dp``, K = ``optimizer_bytes``, 12 for
    mixed-precision Adam): stage 0 (weights 2Ψ, grads 2Ψ, optimizer KΨ); stage 1
    (2Ψ, 2Ψ, KΨ/N_d); stage 2 (2Ψ, 2Ψ/N_d, KΨ/N_d); stage 3 (2Ψ/N_d, 2Ψ/N_d, KΨ/N_d).
    ``grad_bytes`` is 2 in the paper (fp16 gradients); 4 for the fp32 gradient buffer
    of Megatron-LM's bf16 recipe (``calc.precision.RECIPES``), whose distributed
    optimizer is stage 1 of this count: (2 + 4 + 12/N_d)Ψ.
    """
    p, n, s = _args(params, dp, zero_stage)
    k = check_real("optimizer_bytes", optimizer_bytes, 0, MAX_OPTIMIZER_BYTES)
    g = check_real("grad_bytes", grad_bytes, 0, MAX_OPTIMIZER_BYTES)
    return StateBytes(
        weights=WEIGHT_BYTES * p / (n if s >= 3 else 1),
        grads=g * p / (n if s >= 2 else 1),
        optimizer=k * p / (n if s >= 1 else 1),
    )


def state_per_gpu_bytes(
    *,
    params: float,
    dp: int,
    zero_stage: int,
    optimizer_bytes: float = OPTIMIZER_BYTES,
    grad_bytes: float = GRAD_BYTES,
) -> float:
    """Per-GPU training state in bytes (ZeRO Sec. 5, Fig. 1), N_d = ``dp``:

        stage 0: (2 + 2 + K)Ψ        stage 1: (4 + K/N_d)Ψ
        stage 2: (2 + (2 + K)/N_d)Ψ  stage 3: (2 + 2 + K)Ψ/N_d

    Llama 2 7B, N_d = 8, stage 1: 37.07e9. The paper's 7.5B model on N_d = 64:
    120 GB, 31.4 GB, 16.6 GB, 1.88 GB. ``grad_bytes`` replaces the 2 of the gradients.
    """
    return state_per_gpu(
        params=params, dp=dp, zero_stage=zero_stage, optimizer_bytes=optimizer_bytes, grad_bytes=grad_bytes
    ).total


def bytes_per_param(
    *, dp: int, zero_stage: int, optimizer_bytes: float = OPTIMIZER_BYTES, grad_bytes: float = GRAD_BYTES
) -> float:
    """Per-GPU training state in bytes per parameter, the coefficient of Ψ in ZeRO
    Sec. 5 / Fig. 1 (N_d = ``dp``, K = ``optimizer_bytes``):

        stage 0: 2 + 2 + K      stage 1: 4 + K/N_d
        stage 2: 2 + (2 + K)/N_d  stage 3: (2 + 2 + K)/N_d

    N_d = 8, K = 12: 16, 5.5, 3.75, 2. ``grad_bytes`` replaces the gradients' 2."""
    k = check_real("optimizer_bytes", optimizer_bytes, 0, MAX_OPTIMIZER_BYTES)
    g = check_real("grad_bytes", grad_bytes, 0, MAX_OPTIMIZER_BYTES)
    return state_per_gpu_bytes(params=1.0, dp=dp, zero_stage=zero_stage, optimizer_bytes=k, grad_bytes=g)


def reduction(
    *, dp: int, zero_stage: int, optimizer_bytes: float = OPTIMIZER_BYTES, grad_bytes: float = GRAD_BYTES
) -> float:
    """Memory reduction over plain DP: (2 + 2 + K)Ψ / state_per_gpu_bytes (ZeRO Fig. 1:
    4× for stage 1, 8× for stage 2 and N_d× for stage 3 as N_d grows, K = 12).
    N_d = 8, stage 1: 16/5.5 = 2.909. ``grad_bytes`` replaces the gradients' 2."""
    k = check_real("optimizer_bytes", optimizer_bytes, 0, MAX_OPTIMIZER_BYTES)
    g = check_real("grad_bytes", grad_bytes, 0, MAX_OPTIMIZER_BYTES)
    return (WEIGHT_BYTES + g + k) / bytes_per_param(dp=dp, zero_stage=zero_stage, optimizer_bytes=k, grad_bytes=g)


def sent_per_gpu_elements(*, params: float, dp: int, zero_stage: int) -> float:
    """Elements each GPU sends per step (ZeRO Sec. 7.2, 7.3), ring algorithm.

    Stages 0–2: the gradient all-reduce, i.e. a reduce-scatter plus an all-gather,
    2Ψ elements moved, each rank sending (N_d−1)/N_d of them: 2(N_d−1)/N_d·Ψ.
    Stage 3: parameters all-gathered in the forward and again in the backward pass
    plus a gradient reduce-scatter, 3Ψ: 3(N_d−1)/N_d·Ψ, i.e. 1.5× plain DP.
    """
    p, n, s = _args(params, dp, zero_stage)
    moved = 3.0 if s == 3 else 2.0
    return moved * bus_factor("all_gather", n) * p


def sent_per_gpu_bytes(*, params: float, dp: int, zero_stage: int) -> float:
    """Bytes each GPU sends per step: fp16 elements × 2 bytes (ZeRO Sec. 7).
    Llama 2 7B, N_d = 8: 23.59e9 for stages 0–2 (= the DP all-reduce), 35.38e9 for
    stage 3."""
    return WEIGHT_BYTES * sent_per_gpu_elements(params=params, dp=dp, zero_stage=zero_stage)


def comm_over_dp(zero_stage: int) -> float:
    """Communication relative to plain data parallelism: 1 for stages 0–2, 1.5 for
    stage 3 (ZeRO Sec. 7.2.2: "3Ψ ... 1.5x compared to the baseline DP")."""
    s = check_choice("zero_stage", zero_stage, ZERO_STAGES)
    return 1.5 if s == 3 else 1.0


def fits(
    *,
    params: float,
    dp: int,
    zero_stage: int,
    memory_bytes: float = GPUS["illustrative"].memory_bytes,
    optimizer_bytes: float = OPTIMIZER_BYTES,
) -> bool:
    """Whether the training state alone fits in one GPU's memory (activations,
    buffers and fragmentation not counted)."""
    m = check_real("memory_bytes", memory_bytes, 0, MAX_BYTES, lo_inclusive=False)
    state = state_per_gpu_bytes(
        params=params, dp=dp, zero_stage=zero_stage, optimizer_bytes=optimizer_bytes
    )
    return state <= m
