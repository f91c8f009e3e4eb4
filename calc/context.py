"""Context parallelism: the sequence split over cp GPUs.

Every layer but attention works token by token, so splitting the s tokens of a
sequence over cp GPUs splits their activations and their work cp ways with no
communication. Attention needs every earlier token's keys and values; two ways to
bring them:

* **Ring attention** (Liu, Zaharia and Abbeel 2023, "Ring Attention with Blockwise
  Transformers for Near-Infinite Context", Sec. 3 and Fig. 2): the GPUs form a ring;
  each keeps its block of queries and passes its block of keys and values (K/V) to the
  next GPU, cp − 1 times per layer, computing attention against the block it holds
  while the next one arrives (blockwise attention with an online softmax, so the
  result is exact). The transfer hides behind the compute when a block holds at least
  about F/B tokens (their Sec. 3: block size c ≥ F/B, F FLOP/s, B bytes/s).
* **DeepSpeed-Ulysses** (Jacobs et al. 2023, "DeepSpeed Ulysses: System Optimizations
  for Enabling Training of Extreme Long Sequence Transformer Models", Sec. 3): an
  all-to-all before attention turns "my s/cp tokens, every head" into "every token, my
  a/cp heads", attention runs locally, and an all-to-all after it turns the output back:
  four tensors (Q, K, V, O) per layer, 4·N·h/P per link in the paper's notation.
  Heads are split, so cp can be at most the number of key/value heads.

A causal mask makes the last tokens' queries attend to the most keys. Cut the sequence
into 2·cp chunks and give rank i chunks i and 2·cp − 1 − i: every rank then does the
same work (Llama 3, Dubey et al. 2024, "The Llama 3 Herd of Models", Sec. 3.3.2; Llama
3 itself all-gathers K/V, the same bytes as the ring without the overlap).

Elements are 16-bit (2 bytes, ``memory.ACTIVATION_BYTES``). FLOP count a multiply-add
as 2, as in Narayanan et al. 2021's appendix: the two attention matmuls of a block of
c queries against c keys cost 2·b·c²·h each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._check import (
    MAX_BATCH,
    MAX_BYTES_PER_S,
    MAX_FLOPS_PER_S,
    MAX_GPUS,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_SEQ_LEN,
    check_choice,
    check_int,
    check_real,
)
from .activations import activation_bytes_per_layer as _activation_bytes_per_layer
from .memory import ACTIVATION_BYTES

__all__ = [
    "CP_METHODS",
    "PASSES",
    "SPLITS",
    "RingStepTimes",
    "activation_bytes_per_gpu_layer",
    "attention_flops_per_gpu_layer",
    "chunk_ranks",
    "kv_block_bytes",
    "min_block_tokens",
    "rank_chunks",
    "ring_holders",
    "ring_sent_per_gpu_layer_bytes",
    "ring_step_times",
    "ring_step_work",
    "sent_per_gpu_layer_bytes",
    "ulysses_max_cp",
    "ulysses_sent_per_gpu_layer_bytes",
]

CP_METHODS = ("ring", "ulysses")
SPLITS = ("balanced", "contiguous")  # Llama 3's two chunks per rank, or one block each
PASSES = ("forward", "backward", "both")

# Backward passes K/V around the ring again and the gradients dK, dV back to their
# owner: twice the forward's bytes (Liu et al. 2023, Sec. 3: the backward pass
# circulates key-value blocks and their gradients). Ulysses' backward runs the four
# all-to-alls' transposes: the same bytes as forward.
_RING_BACKWARD_BLOCKS = 2
_ULYSSES_BACKWARD = 1
# FLOP of the backward pass over the forward, as for every matmul (Narayanan et al.
# 2021, appendix: backward = 2 × forward).
_BACKWARD_OVER_FORWARD = 2


def _cp(cp: int) -> int:
    return check_int("cp", cp, 1, MAX_GPUS)


def _shape(hidden: int, heads: int, kv_heads: int) -> tuple[int, int, int]:
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    a = check_int("heads", heads, 1, MAX_HEADS)
    k = check_int("kv_heads", kv_heads, 1, a)
    if a % k:
        raise ValueError(f"kv_heads must be a divisor of heads ({a}), got {kv_heads}")
    if h % a:
        raise ValueError(f"heads must be a divisor of hidden ({h}), got {heads}")
    return h, a, k


def _layer(hidden: int, heads: int, kv_heads: int, seq_len: int, micro_batch: int, cp: int,
           split: str = "contiguous") -> tuple[int, int, int, int, int, int, int]:
    """(h, a, kv_heads, s, s/cp, b, h_kv) of one layer's call, validated; h_kv = kv_heads·h/a
    is the keys' width."""
    h, a, k = _shape(hidden, heads, kv_heads)
    s, local = _tokens(seq_len, cp, split)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    return h, a, k, s, local, b, k * (h // a)


def _tokens(seq_len: int, cp: int, split: str = "contiguous") -> tuple[int, int]:
    """s and the tokens of one rank, s/cp; s must split into cp (or 2·cp) equal parts."""
    c = _cp(cp)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    parts = 2 * c if check_choice("split", split, SPLITS) == "balanced" and c > 1 else c
    if s % parts:
        raise ValueError(f"seq_len must be a multiple of {parts} ({'2·cp' if parts != c else 'cp'}), got {seq_len}")
    return s, s // c


def rank_chunks(cp: int, split: str = "balanced") -> tuple[tuple[int, ...], ...]:
    """Which chunks of the sequence each rank holds.

    ``"balanced"``: 2·cp chunks, rank i holds chunks i and 2·cp − 1 − i (Llama 3,
    Sec. 3.3.2); cp = 4: (0, 7), (1, 6), (2, 5), (3, 4). ``"contiguous"``: cp chunks,
    rank i holds chunk i (Liu et al. 2023's blocks). With cp = 1 the one rank holds the
    whole sequence, chunk 0.
    """
    c = _cp(cp)
    mode = check_choice("split", split, SPLITS)
    if mode == "contiguous" or c == 1:
        return tuple((i,) for i in range(c))
    return tuple((i, 2 * c - 1 - i) for i in range(c))


def chunk_ranks(cp: int, split: str = "balanced") -> tuple[int, ...]:
    """The rank that holds each chunk, in sequence order (the inverse of ``rank_chunks``)."""
    chunks = rank_chunks(cp, split)
    owner = [0] * len([c for held in chunks for c in held])
    for rank, held in enumerate(chunks):
        for chunk in held:
            owner[chunk] = rank
    return tuple(owner)


def ring_holders(cp: int) -> tuple[tuple[int, ...], ...]:
    """Whose K/V block each rank holds at each step of the ring, ``[step][rank]``.

    At step k rank r computes with the block of rank (r − k) mod cp and passes it to
    rank r + 1 (Liu et al. 2023, Fig. 2): after cp − 1 passes every rank has seen
    every block. cp = 4, step 1: (3, 0, 1, 2).
    """
    c = _cp(cp)
    return tuple(tuple((r - k) % c for r in range(c)) for k in range(c))


def _pair_work(q_chunk: int, kv_chunk: int) -> float:
    """Causal work of a chunk of queries against a chunk of keys of the same length:
    all of it when the keys come first, half on the diagonal, none when they come later."""
    if kv_chunk < q_chunk:
        return 1.0
    return 0.5 if kv_chunk == q_chunk else 0.0


def ring_step_work(cp: int, split: str = "balanced", *, causal: bool = True) -> tuple[tuple[float, ...], ...]:
    """Attention work of each rank at each ring step, ``[step][rank]``, as a fraction of
    a full (unmasked) block of s/cp queries against s/cp keys.

    Without a causal mask every entry is 1. With it, ``"contiguous"`` leaves rank r
    full work on blocks of earlier ranks, half on its own and none on later ones, so the
    last rank does cp − ½ blocks and the first ½; ``"balanced"`` gives every rank
    exactly ½ at every step (two of its four chunk pairs are below the diagonal;
    Llama 3, Sec. 3.3.2). A step lasts as long as its busiest rank.
    """
    c = _cp(cp)
    mode = check_choice("split", split, SPLITS)
    mask = check_choice("causal", causal, (False, True))
    holders = ring_holders(c)
    chunks = rank_chunks(c, mode)
    rows = []
    for k in range(c):
        row = []
        for r in range(c):
            if not mask:
                row.append(1.0)
                continue
            kv = chunks[holders[k][r]]
            pairs = [_pair_work(q, j) for q in chunks[r] for j in kv]
            # a block is len(chunks[r]) query chunks by as many key chunks
            row.append(math.fsum(pairs) / (len(chunks[r]) * len(kv)))
        rows.append(tuple(row))
    return tuple(rows)


def _step_maxima(cp: int, split: str, causal: bool) -> tuple[float, float]:
    """(Σ over steps of the busiest rank's work, the busiest work of any step), in
    blocks, without building ``ring_step_work``'s cp × cp table (the planner asks for
    cp up to thousands). Unmasked: every step 1. Causal and balanced: every rank ½ at
    every step. Causal and contiguous: ½ at step 0 (the diagonal), then 1 (some rank
    holds an earlier block) for each of the cp − 1 others. A test checks these against
    the table."""
    c = _cp(cp)
    mode = check_choice("split", split, SPLITS)
    if not check_choice("causal", causal, (False, True)):
        return float(c), 1.0
    if mode == "balanced" or c == 1:
        return c / 2.0, 0.5
    return 0.5 + (c - 1), 1.0


def kv_block_bytes(
    *, hidden: int, heads: int, kv_heads: int, seq_len: int, micro_batch: int, cp: int
) -> float:
    """Bytes of one rank's keys and values in one layer: 2 · (s/cp) · b · h_kv · 2,

    h_kv = kv_heads · h / a, the keys' width (grouped-query attention, Ainslie et al.
    2023, shares one K/V head among a/kv_heads query heads), 16-bit elements. This is
    what each ring step passes on. Llama 2 7B (h_kv = 4,096), s = 4,096, b = 1,
    cp = 4: 2 · 1,024 · 4,096 · 2 = 16.78e6 bytes.
    """
    _, _, _, _, local, b, kv_width = _layer(hidden, heads, kv_heads, seq_len, micro_batch, cp)
    return 2.0 * local * b * kv_width * ACTIVATION_BYTES


def _pass_factor(direction: str, backward: int) -> int:
    mode = check_choice("direction", direction, PASSES)
    return {"forward": 1, "backward": backward, "both": 1 + backward}[mode]


def ring_sent_per_gpu_layer_bytes(
    *,
    hidden: int,
    heads: int,
    kv_heads: int,
    seq_len: int,
    micro_batch: int,
    cp: int,
    direction: str = "both",
) -> float:
    """K/V bytes each GPU sends per layer with ring attention.

    Forward: cp − 1 blocks, (cp − 1) · ``kv_block_bytes``; backward: the blocks again and
    their gradients dK, dV, 2 · (cp − 1) blocks (Liu et al. 2023, Sec. 3); ``"both"``
    3 · (cp − 1). The gradient count assumes each rank keeps the gradient of its own
    block and the travelling one starts at the next rank, so it reaches its owner in
    cp − 1 hops like the block (examples/context_parallel.py does this); started at the
    owner it would need one hop more, 2·cp − 1 blocks in all. Nearly constant in cp: (cp − 1)/cp · 2·s·b·h_kv·2 forward, so a bigger
    ring does not send less per GPU, it gives each GPU less to hold and to compute.
    """
    block = kv_block_bytes(hidden=hidden, heads=heads, kv_heads=kv_heads, seq_len=seq_len,
                           micro_batch=micro_batch, cp=cp)
    return _pass_factor(direction, _RING_BACKWARD_BLOCKS) * (cp - 1) * block


def ulysses_max_cp(heads: int, kv_heads: int) -> int:
    """The largest cp DeepSpeed-Ulysses can use: the all-to-all gives each GPU whole
    heads, so cp must divide the key/value heads (and with them the query heads):
    gcd(a, kv_heads) = kv_heads (Jacobs et al. 2023, Sec. 3; DeepSpeed later added
    uneven splits). Llama 2 7B: 32; Llama 2 70B (8 K/V heads): 8."""
    a = check_int("heads", heads, 1, MAX_HEADS)
    k = check_int("kv_heads", kv_heads, 1, a)
    return math.gcd(a, k)


def ulysses_sent_per_gpu_layer_bytes(
    *,
    hidden: int,
    heads: int,
    kv_heads: int,
    seq_len: int,
    micro_batch: int,
    cp: int,
    direction: str = "both",
) -> float:
    """Bytes each GPU sends per layer with DeepSpeed-Ulysses.

    Before attention Q, K and V, after it the output O, each go through an all-to-all
    that keeps 1/cp of the local tensor and sends the rest:
    (cp − 1)/cp · (s/cp) · b · (2h + 2h_kv) · 2 bytes forward (Jacobs et al. 2023,
    Sec. 3.2: 4·N·h/P per link with h_kv = h), the same again backward. Falls as 1/cp,
    unlike the ring's. Raises ValueError when cp does not divide the K/V heads.
    """
    h, a, k, _, local, b, kv_width = _layer(hidden, heads, kv_heads, seq_len, micro_batch, cp)
    c = _cp(cp)
    limit = ulysses_max_cp(a, k)
    if limit % c:
        raise ValueError(f"cp must be a divisor of the {k} key/value heads for Ulysses (at most {limit}), got {cp}")
    forward = (c - 1) / c * local * b * (2 * h + 2 * kv_width) * ACTIVATION_BYTES
    return _pass_factor(direction, _ULYSSES_BACKWARD) * forward


def sent_per_gpu_layer_bytes(
    *,
    method: str,
    hidden: int,
    heads: int,
    kv_heads: int,
    seq_len: int,
    micro_batch: int,
    cp: int,
    direction: str = "both",
) -> float:
    """``ring_sent_per_gpu_layer_bytes`` or ``ulysses_sent_per_gpu_layer_bytes`` by ``method``."""
    fn = {"ring": ring_sent_per_gpu_layer_bytes, "ulysses": ulysses_sent_per_gpu_layer_bytes}
    return fn[check_choice("method", method, CP_METHODS)](
        hidden=hidden, heads=heads, kv_heads=kv_heads, seq_len=seq_len,
        micro_batch=micro_batch, cp=cp, direction=direction)


def activation_bytes_per_gpu_layer(
    *,
    hidden: int,
    heads: int,
    seq_len: int,
    micro_batch: int,
    cp: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
) -> float:
    """Activation bytes one layer keeps per GPU with context parallelism: Korthikanti
    et al. 2022's Table 2 (``activations.activation_bytes_per_layer``) divided by cp.

    Every s·b·h term holds s/cp tokens, and the attention scores 5·a·s²·b hold the
    rank's s/cp queries against all s keys, 5·a·(s/cp)·s·b: both fall by exactly cp
    (Liu et al. 2023, Sec. 3: memory per device proportional to the block size). The
    two K/V blocks in flight (``kv_block_bytes`` each) are buffers, not counted here.
    """
    c = _cp(cp)
    _tokens(seq_len, c)
    return _activation_bytes_per_layer(hidden=hidden, heads=heads, seq_len=seq_len,
                                       micro_batch=micro_batch, tp=tp,
                                       sequence_parallel=sequence_parallel, recompute=recompute) / c


def attention_flops_per_gpu_layer(
    *, hidden: int, seq_len: int, micro_batch: int, cp: int, causal: bool = True, split: str = "balanced"
) -> float:
    """Forward FLOP of the two attention matmuls (QKᵀ and scores × V) on the busiest GPU
    of one layer: 4·b·s²·h without parallelism (Narayanan et al. 2021, appendix), over
    cp GPUs the sum over ring steps of the busiest rank's work (``ring_step_work``) times
    a block's 4·b·(s/cp)²·h. Causal and balanced: 4·b·s²·h/(2·cp), half the unmasked
    work, evenly spread. Backward costs twice this.
    """
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    s, local = _tokens(seq_len, cp, split)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    block = 4.0 * b * local * local * h
    return _step_maxima(cp, split, causal)[0] * block


@dataclass(frozen=True)
class RingStepTimes:
    """One ring step of one layer on the busiest GPU: the attention compute on the block
    held and the transfer of the next block, forward and backward, in seconds. The
    transfer is hidden when it is not longer than the compute."""

    forward_compute: float
    forward_transfer: float
    backward_compute: float
    backward_transfer: float

    @property
    def hidden(self) -> bool:
        """True when both passes' transfers fit behind their compute."""
        return self.forward_transfer <= self.forward_compute and self.backward_transfer <= self.backward_compute

    @property
    def exposed(self) -> float:
        """Seconds per step the GPU waits for the link, forward plus backward."""
        return (max(0.0, self.forward_transfer - self.forward_compute)
                + max(0.0, self.backward_transfer - self.backward_compute))


def ring_step_times(
    *,
    hidden: int,
    heads: int,
    kv_heads: int,
    seq_len: int,
    micro_batch: int,
    cp: int,
    flops_per_gpu: float,
    bytes_per_s: float,
    causal: bool = True,
    split: str = "balanced",
) -> RingStepTimes:
    """Compute and transfer of one ring step (Liu et al. 2023, Sec. 3).

    Compute: the busiest rank's work at a step (½ of a block, causal and balanced) ×
    4·b·(s/cp)²·h FLOP at X = ``flops_per_gpu``; transfer: one ``kv_block_bytes`` at
    β = ``bytes_per_s``. Backward: twice the FLOP and twice the bytes (K/V and dK/dV).
    With cp = 1 nothing moves.
    """
    h, a, k, s, local, b, _ = _layer(hidden, heads, kv_heads, seq_len, micro_batch, cp, split)
    x = check_real("flops_per_gpu", flops_per_gpu, 0, MAX_FLOPS_PER_S, lo_inclusive=False)
    beta = check_real("bytes_per_s", bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False)
    busiest = _step_maxima(cp, split, causal)[1]
    compute = busiest * 4.0 * b * local * local * h / x
    transfer = 0.0 if cp == 1 else kv_block_bytes(hidden=h, heads=a, kv_heads=k, seq_len=s,
                                                  micro_batch=b, cp=cp) / beta
    return RingStepTimes(
        forward_compute=compute,
        forward_transfer=transfer,
        backward_compute=_BACKWARD_OVER_FORWARD * compute,
        backward_transfer=_RING_BACKWARD_BLOCKS * transfer,
    )


def min_block_tokens(
    *,
    hidden: int,
    heads: int,
    kv_heads: int,
    flops_per_gpu: float,
    bytes_per_s: float,
    causal: bool = True,
) -> float:
    """The fewest tokens per GPU, s/cp, for which a ring step's transfer hides behind
    its compute: w · 4·b·c²·h / X ≥ 2·c·b·h_kv·2 / β, so

        c ≥ (h_kv / h) · X / (w · β),

    with w the work per step (1 unmasked, ½ causal balanced). Unmasked and without
    grouped-query attention this is Liu et al. 2023's c ≥ F/B (Sec. 3). X = 150e12,
    β = 50e9, causal, h_kv = h: 6,000 tokens.
    """
    h, a, k = _shape(hidden, heads, kv_heads)
    x = check_real("flops_per_gpu", flops_per_gpu, 0, MAX_FLOPS_PER_S, lo_inclusive=False)
    beta = check_real("bytes_per_s", bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False)
    w = 0.5 if check_choice("causal", causal, (False, True)) else 1.0
    kv_width = k * (h // a)
    # bytes per element (2) and the factor 2 of K and V cancel against 4 FLOP per pair
    return kv_width / h * x / (w * beta) * (2.0 * ACTIVATION_BYTES) / 4.0
