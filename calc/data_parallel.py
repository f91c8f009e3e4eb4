"""Data parallelism: every GPU holds the whole model and a slice of the batch, and
the gradients are all-reduced once per step. N_d = ``dp`` replicas, here one per GPU.

The seed explainer's step 2 (defaults: global batch 1,024 sequences of 4,096 tokens,
8 GPUs, 150 TFLOP/s per GPU, 50 GB/s network); the ring all-reduce cost follows
nccl-tests PERFORMANCE.md (2(N−1)/N of the message per rank); the compute per step
the 6ND rule (Kaplan et al. 2020, Sec. 2.1).
"""

from __future__ import annotations

from ._check import (
    MAX_BATCH,
    MAX_BYTES_PER_S,
    MAX_FLOPS_PER_S,
    MAX_GPUS,
    MAX_PARAMS,
    MAX_SEQ_LEN,
    check_int,
    check_real,
)
from .collectives import ring_all_reduce_bytes_per_rank
from .compute import FLOPS_PER_PARAM_PER_TOKEN
from .hardware import GPUS, LINKS
from .memory import GRAD_BYTES, OPTIMIZER_BYTES, training_state_bytes

__all__ = [
    "GLOBAL_BATCH_SEQS",
    "SEQ_LEN",
    "central_gpu_bytes",
    "comm_seconds",
    "compute_seconds",
    "gradient_bytes",
    "overlap_min_micro_batch",
    "overlap_min_tokens",
    "sent_per_gpu_bytes",
    "seqs_per_gpu",
    "state_per_gpu_bytes",
    "tokens_per_step",
]

GLOBAL_BATCH_SEQS = 1_024  # seed 000, step 2: "Global batch 1.024 sequence"
SEQ_LEN = 4_096  # seed 000, step 2: "berisi 4.096 token" (Llama 2 context length)
_FLOPS = GPUS["illustrative"].flops_per_s  # 150e12, seed 000 (illustrative)
_NETWORK = LINKS["network"].bytes_per_s  # 50e9, seed 000


def state_per_gpu_bytes(params: float, *, optimizer_bytes: float = OPTIMIZER_BYTES) -> float:
    """Plain data parallelism replicates the whole state: (2 + 2 + K)Ψ = 16Ψ bytes on
    every GPU, K = ``optimizer_bytes`` (ZeRO Sec. 3.1; Rajbhandari et al. 2019, Fig. 1
    "Baseline")."""
    return training_state_bytes(params, optimizer_bytes=optimizer_bytes)


def seqs_per_gpu(dp: int, global_batch: int = GLOBAL_BATCH_SEQS) -> float:
    """Sequences each GPU processes per step: B / N_d (1,024 / 8 = 128)."""
    n = check_int("dp", dp, 1, MAX_GPUS)
    b = check_int("global_batch", global_batch, 1, MAX_BATCH)
    return b / n


def tokens_per_step(*, seq_len: int = SEQ_LEN, global_batch: int = GLOBAL_BATCH_SEQS) -> float:
    """Tokens per optimizer step: B · s (1,024 × 4,096 = 4,194,304)."""
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    b = check_int("global_batch", global_batch, 1, MAX_BATCH)
    return float(b) * s


def compute_seconds(
    *,
    params: float,
    dp: int,
    flops_per_gpu: float = _FLOPS,
    seq_len: int = SEQ_LEN,
    global_batch: int = GLOBAL_BATCH_SEQS,
) -> float:
    """Compute time of one step on each GPU: 6·Ψ·B·s / N_d / F (Kaplan et al. 2020,
    Sec. 2.1). Llama 2 7B on 8 GPUs at 150 TFLOP/s: 141.3 s."""
    p = check_real("params", params, 0, MAX_PARAMS)
    n = check_int("dp", dp, 1, MAX_GPUS)
    f = check_real("flops_per_gpu", flops_per_gpu, 0, MAX_FLOPS_PER_S, lo_inclusive=False)
    tokens = tokens_per_step(seq_len=seq_len, global_batch=global_batch)
    return FLOPS_PER_PARAM_PER_TOKEN * p * tokens / n / f


def gradient_bytes(params: float) -> float:
    """The fp16 gradient, 2Ψ bytes (ZeRO Sec. 3.1): 13.48e9 for Llama 2 7B."""
    p = check_real("params", params, 0, MAX_PARAMS)
    return GRAD_BYTES * p


def sent_per_gpu_bytes(params: float, dp: int) -> float:
    """Bytes each GPU sends per step in the ring all-reduce of the fp16 gradient:
    2(N_d−1)/N_d × 2Ψ (nccl-tests PERFORMANCE.md). Llama 2 7B, N_d = 8: 23.59e9."""
    n = check_int("dp", dp, 1, MAX_GPUS)
    return ring_all_reduce_bytes_per_rank(gradient_bytes(params), n)


def central_gpu_bytes(params: float, dp: int) -> float:
    """The naive all-reduce through one central GPU: a reduce to it and a broadcast
    from it, so it receives the other (N_d − 1) fp16 gradients and sends the sum back to
    each, (N_d − 1) × 2Ψ bytes each way, growing with N_d (an elementary count of that
    scheme's messages), against the ring's 2(N_d−1)/N_d × 2Ψ per GPU, which Patarasuk
    and Yuan 2009 prove is the lower bound. Llama 2 7B, N_d = 4: 3 × 13.48e9 = 40.44e9."""
    n = check_int("dp", dp, 1, MAX_GPUS)
    return (n - 1) * gradient_bytes(params)


def comm_seconds(*, params: float, dp: int, bytes_per_s: float = _NETWORK) -> float:
    """All-reduce time per step: sent bytes / link bandwidth, no overlap, no latency.
    Llama 2 7B, N_d = 8, 50 GB/s: 0.4718 s."""
    sent = sent_per_gpu_bytes(params, dp)
    bw = check_real("bytes_per_s", bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False)
    return sent / bw


# The last micro-batch's backward pass is the only compute the gradient all-reduce can
# hide behind under gradient accumulation: 4 of the 6 FLOP per parameter per token
# (Kaplan et al. 2020, Sec. 2.1: backward is twice the forward).
_BACKWARD_FLOPS_PER_PARAM_PER_TOKEN = 4


def overlap_min_tokens(*, dp: int, flops_per_gpu: float, bytes_per_s: float) -> float:
    """Tokens per micro-batch above which the ring all-reduce of the gradient hides
    behind the last micro-batch's backward pass.

    2(d−1)/d · 2Ψ/β < 4Ψ·b·s/X  ⇔  b·s > (d−1)/d · X/β, with X the GPU's throughput
    and β its network bandwidth; Ψ cancels (ring bytes: nccl-tests PERFORMANCE.md;
    FLOP: Kaplan et al. 2020, Sec. 2.1). The seed's machine (150 TFLOP/s, 50 GB/s),
    d = 8: 2,625 tokens; a DGX H100 at peak (989 TFLOP/s, 50 GB/s): 17,307.5."""
    n = check_int("dp", dp, 1, MAX_GPUS)
    x = check_real("flops_per_gpu", flops_per_gpu, 0, MAX_FLOPS_PER_S, lo_inclusive=False)
    beta = check_real("bytes_per_s", bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False)
    ring = 2 * (n - 1) / n  # ring all-reduce: sent bytes per byte of gradient
    return ring * GRAD_BYTES * x / (_BACKWARD_FLOPS_PER_PARAM_PER_TOKEN * beta)


def overlap_min_micro_batch(*, dp: int, seq_len: int, flops_per_gpu: float, bytes_per_s: float) -> int:
    """The smallest micro-batch b (sequences of ``seq_len`` tokens) with b·s strictly
    above ``overlap_min_tokens``: ⌊threshold/s⌋ + 1 (1 when d = 1, nothing to hide)."""
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    threshold = overlap_min_tokens(dp=dp, flops_per_gpu=flops_per_gpu, bytes_per_s=bytes_per_s)
    return int(threshold // s) + 1 if threshold > 0 else 1
