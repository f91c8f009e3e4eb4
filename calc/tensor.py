"""Tensor parallelism, Megatron-LM style.

Shoeybi et al. 2019, "Megatron-LM: Training Multi-Billion Parameter Language Models
Using Model Parallelism", Sec. 3 and Fig. 3-4: the first MLP matrix is split by
columns (each GPU applies the nonlinearity to its own slice), the second by rows
(each GPU produces a partial sum); attention is split by heads the same way. Per
layer that costs two all-reduces of the s·b·h activations in the forward pass
(after attention, after the MLP) and two in the backward pass (Fig. 4, operators
f and g). Each GPU holds 1/t of the layer's weights and of the training state.

Sequence parallelism (Korthikanti et al. 2022, "Reducing Activation Recomputation in
Large Transformer Models", Sec. 4.2.2, Fig. 5) replaces each all-reduce by an
all-gather and a reduce-scatter of the same tensor, so the bytes stay the same. The
LayerNorms and the biases of the row-parallel matrices are whole on every GPU, and a
fully sharded data-parallel axis (FSDP, ZeRO-3) splits what each GPU holds again,
dimension 0 in chunks (``shard_rows``).
"""

from __future__ import annotations

import math

from ._check import (
    MAX_BATCH,
    MAX_BYTES,
    MAX_BYTES_PER_S,
    MAX_FLOPS_PER_S,
    MAX_GPUS,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_OPTIMIZER_BYTES,
    MAX_PARAMS,
    MAX_SEQ_LEN,
    check_choice,
    check_int,
    check_real,
)
from .collectives import bus_factor
from .compute import FLOPS_PER_PARAM_PER_TOKEN
from .hardware import GPUS, LINKS
from .memory import ACTIVATION_BYTES, GRAD_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES

__all__ = [
    "ALL_REDUCES_PER_LAYER",
    "SP_ALL_GATHERS_PER_LAYER",
    "SP_REDUCE_SCATTERS_PER_LAYER",
    "comm_over_compute",
    "comm_seconds",
    "compute_seconds_per_layer",
    "heads_per_gpu",
    "kv_heads_per_gpu",
    "message_bytes",
    "replicated_params_per_layer",
    "sent_over_message",
    "sent_per_gpu_layer_bytes",
    "shard_rows",
    "split_params_per_layer",
    "state_per_gpu_bytes",
    "weights_per_gpu_layer",
]

ALL_REDUCES_PER_LAYER = 4  # Shoeybi et al. 2019, Sec. 3 / Fig. 4: 2 forward + 2 backward
# Korthikanti et al. 2022, Sec. 4.2.2 / Fig. 5: with sequence parallelism each of the 4
# all-reduces becomes an all-gather (g) and a reduce-scatter (ḡ): 2 + 2 forward, 2 + 2 backward.
SP_ALL_GATHERS_PER_LAYER = 4
SP_REDUCE_SCATTERS_PER_LAYER = 4
_FLOPS = GPUS["illustrative"].flops_per_s  # 150e12, seed 000 (illustrative)
_NVLINK = LINKS["nvlink"].bytes_per_s  # 450e9, seed 000


def _tp(tp: int) -> int:
    return check_int("tp", tp, 1, MAX_GPUS)


def weights_per_gpu_layer(layer_params: float, tp: int) -> float:
    """Parameters of one layer on each GPU: layer params / t (Shoeybi et al. 2019,
    Sec. 3; norms, replicated in practice, are counted as split). Llama 2 7B,
    t = 4: 202,383,360 / 4 = 50.60e6."""
    p = check_real("layer_params", layer_params, 0, MAX_PARAMS)
    return p / _tp(tp)


def state_per_gpu_bytes(
    *, params: float, tp: int, optimizer_bytes: float = OPTIMIZER_BYTES
) -> float:
    """Training state per GPU: (2 + 2 + K)Ψ / t = 16Ψ / t, K = ``optimizer_bytes``
    (ZeRO Sec. 3.1 bytes, split t ways). Llama 2 7B, t = 4: 26.95e9."""
    p = check_real("params", params, 0, MAX_PARAMS)
    k = check_real("optimizer_bytes", optimizer_bytes, 0, MAX_OPTIMIZER_BYTES)
    return (WEIGHT_BYTES + GRAD_BYTES + k) * p / _tp(tp)


def sent_per_gpu_layer_bytes(
    *, hidden: int, seq_len: int, micro_batch: int = 1, tp: int, sequence_parallel: bool = False
) -> float:
    """Bytes each GPU sends per layer, forward and backward, for b sequences:

        4 all-reduces × 2(t−1)/t × s·b·h × 2 bytes

    (Shoeybi et al. 2019 Fig. 4; ring cost from nccl-tests PERFORMANCE.md).
    Llama 2 7B (s = h = 4096), t = 4, b = 1: 201.3e6.

    With ``sequence_parallel`` (Korthikanti et al. 2022, Sec. 4.2.2): 4 all-gathers and
    4 reduce-scatters of the whole s·b·h tensor, each (t−1)/t of it per GPU,

        (4 + 4) × (t−1)/t × s·b·h × 2 bytes,

    the same bytes ("the communication bandwidth used for tensor parallelism and tensor
    together with sequence parallelism are the same").
    """
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    t = _tp(tp)
    sp = check_choice("sequence_parallel", sequence_parallel, (False, True))
    message = float(s) * b * h * ACTIVATION_BYTES
    if sp:
        return math.fsum([
            SP_ALL_GATHERS_PER_LAYER * bus_factor("all_gather", t) * message,
            SP_REDUCE_SCATTERS_PER_LAYER * bus_factor("reduce_scatter", t) * message,
        ])
    return ALL_REDUCES_PER_LAYER * bus_factor("all_reduce", t) * message


def message_bytes(*, hidden: int, seq_len: int, micro_batch: int = 1) -> float:
    """Bytes of the tensor every tensor-parallel collective moves: one activation of
    s·b·h numbers in 16 bits,

        S = 2·s·b·h

    (Shoeybi et al. 2019, Sec. 3: the all-reduces of f and g act on the block's s×b×h
    input or output). Llama 2 7B (s = h = 4096), b = 1: 33.55e6."""
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    return float(s) * b * h * ACTIVATION_BYTES


def sent_over_message(*, tp: int, sequence_parallel: bool = False) -> float:
    """Bytes each GPU sends per layer, forward and backward, in units of one message
    S = 2sbh: ``sent_per_gpu_layer_bytes`` / ``message_bytes``,

        4 × 2(t−1)/t

    (4 all-reduces, Shoeybi et al. 2019 Fig. 4; ring factor 2(n−1)/n, nccl-tests
    PERFORMANCE.md). Sequence parallelism gives the same, (4 + 4) × (t−1)/t
    (Korthikanti et al. 2022, Sec. 4.2.2). t = 2: 4; t = 8: 7."""
    t = _tp(tp)
    sp = check_choice("sequence_parallel", sequence_parallel, (False, True))
    if sp:
        return math.fsum([SP_ALL_GATHERS_PER_LAYER * bus_factor("all_gather", t),
                          SP_REDUCE_SCATTERS_PER_LAYER * bus_factor("reduce_scatter", t)])
    return ALL_REDUCES_PER_LAYER * bus_factor("all_reduce", t)


def heads_per_gpu(*, heads: int, tp: int) -> float:
    """Attention heads (query heads) each tensor-parallel GPU computes: a/t (Shoeybi
    et al. 2019, Sec. 3: the Q, K, V projections are split by heads, so Megatron-LM
    requires t to divide a). Llama 2 70B, a = 64, t = 8: 8."""
    a = check_int("heads", heads, 1, MAX_HEADS)
    return a / _tp(tp)


def kv_heads_per_gpu(*, kv_heads: int, tp: int) -> float:
    """Key/value heads (grouped-query attention groups) on each tensor-parallel GPU:
    h_kv/t. The K and V projections are split by KV head like the queries, so the split
    is even only while t divides h_kv; below 1 (t > h_kv) each KV head would have to be
    copied to t/h_kv GPUs (Ainslie et al. 2023, GQA; Llama 2 70B has
    h_kv = 8, Touvron et al. 2023 Sec. 2.2). Llama 2 70B, t = 8: 1."""
    k = check_int("kv_heads", kv_heads, 1, MAX_HEADS)
    return k / _tp(tp)


def split_params_per_layer(hidden: int) -> int:
    """Parameters of one GPT layer (4h MLP, biases) that tensor parallelism splits t
    ways (Shoeybi et al. 2019, Sec. 3, Fig. 3): the QKV, output-projection and two MLP
    weights, 3h² + h² + 4h² + 4h², and the biases of the column-parallel QKV and first
    MLP matrix, 3h + 4h:

        12h² + 7h.

    With ``replicated_params_per_layer`` it adds up to the layer's 12h² + 13h
    (Narayanan et al. 2021, Eq. 2). h = 64: 49,600."""
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    return 12 * h * h + 7 * h


def replicated_params_per_layer(hidden: int) -> int:
    """Parameters of one GPT layer that every tensor-parallel GPU holds whole: the two
    LayerNorms' weights and biases, 4h, and the biases of the row-parallel output
    projection and second MLP matrix, 2h, which are added once, after the partial sums
    are all-reduced (Shoeybi et al. 2019, Sec. 3):

        6h.

    ``weights_per_gpu_layer`` counts them as split; exactly, a GPU holds
    split_params_per_layer / t + 6h. h = 64: 384."""
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    return 6 * h


def shard_rows(*, rows: int, dp: int, dp_rank: int = 0) -> int:
    """Rows of dimension 0 of one parameter that data-parallel rank i = ``dp_rank``
    holds under full sharding: PyTorch's FSDP2 (``fully_shard``, ZeRO-3's P_os+g+p,
    Rajbhandari et al. 2019 Sec. 5.3) cuts dimension 0 like ``torch.chunk`` into N_d
    chunks of c = ceil(rows / N_d) rows, so rank i holds

        min(c, max(0, rows − i·c))

    rows, and pads every rank's storage to c rows (Zhao et al. 2023, "PyTorch FSDP",
    Sec. 3.2.1: the shards are padded to one size). Rank 0 always holds a whole chunk:
    its rows are the padded rows of every rank. Under tensor parallelism ``rows`` is
    dimension 0 of the GPU's tensor-parallel part. 127 rows over N_d = 2: rank 0 64,
    rank 1 63 (storage 64)."""
    r = check_int("rows", rows, 1, MAX_PARAMS)
    n = check_int("dp", dp, 1, MAX_GPUS)
    i = check_int("dp_rank", dp_rank, 0, n - 1)
    chunk = -(-r // n)  # ceil in integers
    return min(chunk, max(0, r - i * chunk))


def comm_seconds(sent_bytes: float, bytes_per_s: float = _NVLINK) -> float:
    """Communication time: bytes / link bandwidth (no overlap, no latency).
    201.3e6 bytes over NVLink at 450e9 B/s: 4.474e-4 s."""
    b = check_real("sent_bytes", sent_bytes, 0, MAX_BYTES)
    bw = check_real("bytes_per_s", bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False)
    return b / bw


def compute_seconds_per_layer(
    *,
    layer_params: float,
    seq_len: int,
    micro_batch: int = 1,
    tp: int,
    flops_per_gpu: float = _FLOPS,
) -> float:
    """Forward + backward compute of one layer on one GPU for b sequences:
    6 · (layer params / t) · s · b / X (Kaplan et al. 2020 Sec. 2.1, split t ways).
    Llama 2 7B, t = 4, s = 4096, 150 TFLOP/s: 8.289e-3 s."""
    w = weights_per_gpu_layer(layer_params, tp)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    f = check_real("flops_per_gpu", flops_per_gpu, 0, MAX_FLOPS_PER_S, lo_inclusive=False)
    return FLOPS_PER_PARAM_PER_TOKEN * w * s * b / f


def comm_over_compute(
    *,
    layer_params: float,
    hidden: int,
    seq_len: int,
    tp: int,
    bytes_per_s: float = _NVLINK,
    flops_per_gpu: float = _FLOPS,
) -> float:
    """Ratio of a layer's all-reduce time to its compute time on one GPU (the
    micro-batch size cancels). Llama 2 7B, t = 4, NVLink: 0.054; 0 for t = 1."""
    sent = sent_per_gpu_layer_bytes(hidden=hidden, seq_len=seq_len, tp=tp)
    comm = comm_seconds(sent, bytes_per_s)
    compute = compute_seconds_per_layer(
        layer_params=layer_params, seq_len=seq_len, tp=tp, flops_per_gpu=flops_per_gpu
    )
    return comm / compute if compute > 0 else 0.0
