"""Activation memory of a transformer layer.

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models", Sec. 4 and Table 2. Counting 16-bit activations (2 bytes per element) and
1-byte dropout masks, one layer stores, in bytes, with h hidden size, a attention
heads, s sequence length, b micro-batch size, t tensor-parallel size:

* attention block 11·s·b·h + 5·a·s²·b, MLP block 19·s·b·h, two LayerNorms 4·s·b·h,
  so with no parallelism (Sec. 4.1, Eq. 1):  s·b·h·(34 + 5·a·s/h);
* tensor parallel (Sec. 4.2.1):               s·b·h·(10 + 24/t + 5·a·s/(h·t));
* tensor + sequence parallel (Sec. 4.2.2):    s·b·h/t·(34 + 5·a·s/h);
* selective recomputation (Sec. 5) drops the 5·a·s/h attention term:
  s·b·h·(10 + 24/t) without, 34·s·b·h/t with sequence parallelism;
* full recomputation stores only the layer input: 2·s·b·h (Table 2, "sbh(2)").

The MLP term assumes the paper's 4h GELU MLP; Llama's SwiGLU MLP differs slightly,
and FlashAttention removes the s² term altogether (neither is modelled here).

``activation_terms_per_layer`` lists the terms of Sec. 4.1 one by one (what each stores
and its bytes), the breakdown behind Eq. 1.

Beyond Table 2: the peak with full recomputation (the checkpoints plus the one layer
being rematerialized, Chen et al. 2016), the attention-score bytes that selective
recomputation drops, and the extra compute each recomputation mode costs (Korthikanti
et al. 2022, Appendix A; Narayanan et al. 2021, Appendix).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._check import (
    MAX_BATCH,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_SEQ_LEN,
    MAX_VOCAB,
    check_choice,
    check_int,
)

__all__ = [
    "RECOMPUTE_MODES",
    "ActivationTerm",
    "LongerSequence",
    "activation_bytes",
    "activation_bytes_per_layer",
    "activation_terms_per_layer",
    "attention_score_bytes_per_layer",
    "attention_score_factor",
    "longer_sequence",
    "peak_activation_bytes",
    "recompute_overhead",
    "rematerialized_bytes",
    "sbh_coefficient",
    "selective_overhead_eq8",
]

RECOMPUTE_MODES = ("none", "selective", "full")


def activation_bytes_per_layer(
    *,
    hidden: int,
    heads: int,
    seq_len: int,
    micro_batch: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
) -> float:
    """Activation bytes one transformer layer keeps for the backward pass, per GPU.

    Korthikanti et al. 2022, Table 2 (h = ``hidden``, a = ``heads``, s = ``seq_len``,
    b = ``micro_batch``, t = ``tp``):

    ======================  =====================================
    recompute / parallel    bytes per layer
    ======================  =====================================
    none, t = 1             s·b·h·(34 + 5·a·s/h)        (Eq. 1)
    none, TP                s·b·h·(10 + 24/t + 5·a·s/(h·t))
    none, TP + SP           s·b·h/t·(34 + 5·a·s/h)
    selective, TP           s·b·h·(10 + 24/t)
    selective, TP + SP      34·s·b·h/t
    full                    2·s·b·h
    ======================  =====================================

    With t = 1 sequence parallelism changes nothing. Llama 2 7B, one 4,096-token
    sequence, no recomputation: 4096·4096·(34 + 5·32·4096/4096) = 3.255e9 bytes.
    """
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    a = check_int("heads", heads, 1, MAX_HEADS)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    t = check_int("tp", tp, 1, MAX_HIDDEN)
    sp = check_choice("sequence_parallel", sequence_parallel, (False, True))
    mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
    sbh = float(s) * b * h
    attention_scores = 5.0 * a * s / h
    if mode == "full":
        return 2.0 * sbh
    if mode == "selective":
        return sbh * 34.0 / t if sp else sbh * (10.0 + 24.0 / t)
    if sp:
        return sbh / t * (34.0 + attention_scores)
    return sbh * (10.0 + 24.0 / t + attention_scores / t)


def sbh_coefficient(
    *,
    hidden: int,
    heads: int,
    seq_len: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
) -> float:
    """One layer's activation bytes per GPU over s·b·h: the bracket of Korthikanti et al.
    2022, Table 2 (h = ``hidden``, a = ``heads``, s = ``seq_len``, t = ``tp``), which does
    not depend on b: 34 + 5as/h (Eq. 1), 10 + 24/t + 5as/(ht), (34 + 5as/h)/t,
    10 + 24/t, 34/t, 2.

    Llama 2 7B at 4,096 tokens: 34 + 160 = 194. GPT-3 175B (h 12,288, a 96) at 2,048
    tokens and t = 8: 10 + 24/8 + 80/8 = 23; with sequence parallelism and selective
    recomputation 34/8 = 4.25 (the paper's Sec. 5 example).
    """
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    per_layer = activation_bytes_per_layer(hidden=h, heads=heads, seq_len=s, micro_batch=1, tp=tp,
                                           sequence_parallel=sequence_parallel, recompute=recompute)
    return per_layer / (float(s) * h)


@dataclass(frozen=True)
class ActivationTerm:
    """One term of Korthikanti et al. 2022, Sec. 4.1: a tensor (or, for Q and K, a pair)
    that one layer stores for the backward pass.

    ``key`` names it (``"qkv_input"``, ``"softmax_output"``, ...); ``block`` is
    ``"attention"``, ``"mlp"`` or ``"layernorm"``; ``formula`` is its size as the paper
    writes it (``"2sbh"``, ``"as²b"``); ``bytes`` is that size for the given shape;
    ``attention_scores`` is True for the three s × s terms (softmax output, its dropout
    mask, the dropout output), which selective recomputation drops (Sec. 5).
    """

    key: str
    block: str
    formula: str
    bytes: float
    attention_scores: bool


# Korthikanti et al. 2022, Sec. 4.1, in the paper's order: (key, block, coefficient of
# s·b·h, coefficient of a·s²·b). 16-bit activations are 2 bytes per element, a dropout
# mask 1 byte per element.
_TERMS = (
    ("qkv_input", "attention", 2, 0),  # input of the QKV projection: 2sbh
    ("query_key", "attention", 4, 0),  # Q and K, inputs of QKᵀ: 4sbh
    ("softmax_output", "attention", 0, 2),  # softmax output, s × s per head: 2as²b
    ("softmax_dropout_mask", "attention", 0, 1),  # mask of the dropout after softmax: as²b
    ("softmax_dropout_output", "attention", 0, 2),  # that dropout's output, input of ·V: 2as²b
    ("value", "attention", 2, 0),  # V: 2sbh
    ("projection_input", "attention", 2, 0),  # input of the output projection: 2sbh
    ("projection_dropout_mask", "attention", 1, 0),  # mask of the dropout after it: sbh
    ("fc1_input", "mlp", 2, 0),  # input of the first linear: 2sbh
    ("gelu_input", "mlp", 8, 0),  # input of GELU, 4h wide: 8sbh
    ("fc2_input", "mlp", 8, 0),  # input of the second linear: 8sbh
    ("mlp_dropout_mask", "mlp", 1, 0),  # mask of the MLP's dropout: sbh
    ("attention_layernorm_input", "layernorm", 2, 0),  # the layer's input: 2sbh
    ("mlp_layernorm_input", "layernorm", 2, 0),  # input of the second LayerNorm: 2sbh
)


def _formula(sbh: int, as2b: int) -> str:
    """The paper's notation of a size: 2sbh, sbh, 2as²b, as²b."""
    if as2b:
        return f"{as2b if as2b > 1 else ''}as²b"
    return f"{sbh if sbh > 1 else ''}sbh"


def activation_terms_per_layer(
    *,
    hidden: int,
    heads: int,
    seq_len: int,
    micro_batch: int,
    recompute: str = "none",
) -> tuple[ActivationTerm, ...]:
    """The terms one transformer layer stores for the backward pass, one by one, without
    tensor parallelism (Korthikanti et al. 2022, Sec. 4.1), in bytes:

    * attention block, 11·s·b·h + 5·a·s²·b: QKV input 2sbh, Q and K 4sbh, softmax output
      2as²b, its dropout mask as²b, the dropout output 2as²b, V 2sbh, the projection's
      input 2sbh, the dropout mask after it sbh;
    * MLP block, 19·s·b·h: fc1 input 2sbh, GELU input 8sbh, fc2 input 8sbh, dropout mask
      sbh;
    * the two LayerNorms' inputs, 2sbh each (4sbh).

    ``recompute`` keeps the terms a mode stores: ``"none"`` all fourteen (they sum to
    Eq. 1, s·b·h·(34 + 5·a·s/h)); ``"selective"`` all but the three attention-score
    terms, which are rerun in the backward pass (Sec. 5; 34·s·b·h); ``"full"`` only the
    first LayerNorm's input, which is the layer's input (Table 2, 2·s·b·h). The sum of
    ``bytes`` equals ``activation_bytes_per_layer`` with t = 1 in every mode. Llama 2 7B,
    one 4,096-token sequence: the softmax output is 2·32·4096² = 1.074e9 bytes.
    """
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    a = check_int("heads", heads, 1, MAX_HEADS)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
    sbh, as2b = float(s) * b * h, float(a) * s * s * b
    terms = tuple(ActivationTerm(key, block, _formula(c_sbh, c_as2b), c_sbh * sbh + c_as2b * as2b, c_as2b > 0)
                  for key, block, c_sbh, c_as2b in _TERMS)
    if mode == "selective":
        return tuple(term for term in terms if not term.attention_scores)
    if mode == "full":
        return tuple(term for term in terms if term.key == "attention_layernorm_input")
    return terms


def activation_bytes(
    *,
    layers: int,
    hidden: int,
    heads: int,
    seq_len: int,
    micro_batch: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
) -> float:
    """Activation bytes of ``layers`` layers: L × ``activation_bytes_per_layer``.

    Korthikanti et al. 2022, Sec. 4.2.3: with 1F1B pipelining the first stage holds p
    micro-batches of L/p layers, i.e. L layers' worth, so this is also the first
    stage's activation memory (embeddings, output layer and loss not included).
    """
    l = check_int("layers", layers, 1, MAX_LAYERS)
    return l * activation_bytes_per_layer(
        hidden=hidden, heads=heads, seq_len=seq_len, micro_batch=micro_batch, tp=tp,
        sequence_parallel=sequence_parallel, recompute=recompute,
    )


def attention_score_factor(*, hidden: int, heads: int, seq_len: int) -> float:
    """5·a·s/h, the attention-score term of Eq. 1 next to the 34 of the rest of the layer
    (Korthikanti et al. 2022, Sec. 4.1 and 5). GPT-3 (a 96, s 2,048, h 12,288): 80;
    MT-NLG (128, 2,048, 20,480): 64; Llama 2 7B at 4,096 tokens: 160."""
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    a = check_int("heads", heads, 1, MAX_HEADS)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    return 5.0 * a * s / h


def attention_score_bytes_per_layer(
    *, hidden: int, heads: int, seq_len: int, micro_batch: int, tp: int = 1
) -> float:
    """Bytes of the attention scores one layer stores without recomputation, per GPU:
    5·a·s²·b/t (Korthikanti et al. 2022, Sec. 4.1: softmax output 2as²b, its dropout
    mask as²b, the dropout output 2as²b; split over t by tensor parallelism, Sec.
    4.2.1). This is the 5as/h term of Table 2, the part selective recomputation drops
    (Sec. 5). Llama 2 7B, one 4,096-token sequence: 5·32·4096² = 2.684e9 bytes."""
    check_int("hidden", hidden, 1, MAX_HIDDEN)
    a = check_int("heads", heads, 1, MAX_HEADS)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    t = check_int("tp", tp, 1, MAX_HIDDEN)
    return 5.0 * a * float(s) * s * b / t


def rematerialized_bytes(
    *,
    hidden: int,
    heads: int,
    seq_len: int,
    micro_batch: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
) -> float:
    """Activation bytes rebuilt during the backward pass on top of what is stored.

    Full recomputation checkpoints each layer's input and, when the backward pass
    reaches a layer, reruns its forward pass, which stores that layer's activations
    again until its backward is done: the peak is the checkpoints plus one segment
    (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost", Sec. 4: memory
    of the checkpoints plus the largest segment recomputed; here a segment is one
    layer, as in Korthikanti et al. 2022, Sec. 5). So for ``recompute="full"`` this is
    one layer without recomputation, with the same ``tp`` and ``sequence_parallel``;
    for the other modes nothing is rebuilt at layer scale (selective recomputation
    rebuilds only one attention block's scores), so 0.
    """
    mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
    one_layer = activation_bytes_per_layer(
        hidden=hidden, heads=heads, seq_len=seq_len, micro_batch=micro_batch, tp=tp,
        sequence_parallel=sequence_parallel, recompute="none",
    )
    return one_layer if mode == "full" else 0.0


def peak_activation_bytes(
    *,
    layers: int,
    hidden: int,
    heads: int,
    seq_len: int,
    micro_batch: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
) -> float:
    """Peak activation bytes of the first pipeline stage (or of one GPU without a
    pipeline): ``activation_bytes`` (L layers' worth, Korthikanti et al. 2022, Sec.
    4.2.3, Eq. 5 and 6) plus ``rematerialized_bytes`` (one layer rebuilt during the
    backward pass with full recomputation). Llama 2 7B, one 4,096-token sequence, full
    recomputation, t = 1: 32·2·4096² + 3.255e9 = 4.329e9 bytes."""
    shape = dict(hidden=hidden, heads=heads, seq_len=seq_len, micro_batch=micro_batch, tp=tp,
                 sequence_parallel=sequence_parallel, recompute=recompute)
    stored = activation_bytes(layers=layers, **shape)
    return stored + rematerialized_bytes(**shape)


def _flops_terms(layers: int, hidden: int, vocab: int, seq_len: int) -> tuple[float, float]:
    """(s/(6h), 1 + s/(6h) + v/(12hL)): the attention term and the bracket of the
    model FLOPs per iteration, 72·B·L·s·h²·(1 + s/(6h) + v/(12hL)) (Korthikanti et al.
    2022, Appendix A, Eq. 7; Narayanan et al. 2021, Appendix, Eq. 3 without
    recomputation)."""
    l = check_int("layers", layers, 1, MAX_LAYERS)
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    v = check_int("vocab", vocab, 1, MAX_VOCAB)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    attention = s / (6.0 * h)
    return attention, 1.0 + attention + v / (12.0 * h * l)


def recompute_overhead(
    *, layers: int, hidden: int, vocab: int, seq_len: int, recompute: str = "none"
) -> float:
    """Extra compute of recomputation, as a fraction of the model FLOPs of Eq. 7
    (Korthikanti et al. 2022, Appendix A), counting only matrix multiplies:

    * ``none``: 0.
    * ``selective``: the forward pass of the attention-score matmuls is run again,
      QKᵀ (2·B·s²·h) and attention over V (2·B·s²·h) per layer (Appendix A's own
      list), so 4·B·L·s²·h / (72·B·L·s·h²·(…)) = (s/(18h)) / (1 + s/(6h) + v/(12hL)).
      GPT-3 175B (s 2,048, h 12,288, 96 layers): 0.9%. The paper's Eq. 8 adds
      12·B·s²·h per layer instead, three times this count; its 2.7% and 1.6% come from
      Eq. 8 (see ``selective_overhead_eq8``). Softmax and dropout are memory-bound, so
      the measured time costs more than either count: 7% for one 22B layer, 4% with
      sequence parallelism (Table 4), about 2% for 530B and 1T (Sec. 6.2).
    * ``full``: one extra forward pass of every layer, 24·B·s·h² + 4·B·s²·h each, so
      (1/3)·(1 + s/(6h)) / (1 + s/(6h) + v/(12hL)) ≈ 33% (the logits are not
      recomputed): Narayanan et al. 2021's Eq. 3 with recomputation (leading 96) over
      the one without (72), minus 1. Korthikanti et al. measured 30–40% (Sec. 1, 5)
      and 39% for one 22B layer (Table 4).

    ``vocab`` is v, the vocabulary size; Llama's SwiGLU MLP is counted as GPT's 4h MLP.
    """
    mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
    attention, bracket = _flops_terms(layers, hidden, vocab, seq_len)
    if mode == "none":
        return 0.0
    if mode == "selective":
        return attention / 3.0 / bracket
    return (1.0 + attention) / 3.0 / bracket


def selective_overhead_eq8(*, layers: int, hidden: int, vocab: int, seq_len: int) -> float:
    """Hardware FLOPs over model FLOPs minus 1 as Korthikanti et al. 2022 compute it
    for selective recomputation, Eq. 8 over Eq. 7 (Appendix A):

        72BLsh²(1 + s/(3h) + v/(12hL)) / 72BLsh²(1 + s/(6h) + v/(12hL)) − 1
        = (s/(6h)) / (1 + s/(6h) + v/(12hL))   (≈ s/(6h), Eq. 9).

    With v = 51,200 (Sec. 6) this gives the paper's 2.7% for GPT-3 and 1.6% for MT-NLG
    (Sec. 5) and its HFU/MFU ratios of Table 5. It is three times the forward FLOPs
    the recomputation actually reruns (``recompute_overhead``, "selective").
    """
    attention, bracket = _flops_terms(layers, hidden, vocab, seq_len)
    return attention / bracket


@dataclass(frozen=True)
class LongerSequence:
    """What stretching the sequence from s to k·s does to one layer's activations
    without recomputation (Korthikanti et al. 2022, Eq. 1, A = s·b·h·(34 + 5as/h)).

    ``score_factor`` is 5as/h at s, ``longer_score_factor`` 5a(ks)/h at k·s;
    ``growth_same_b`` is A(k·s, b)/A(s, b) = k·(34 + 5aks/h)/(34 + 5as/h), the same
    sequences per micro-batch; ``growth_same_tokens`` is A(k·s, b/k)/A(s, b)
    = (34 + 5aks/h)/(34 + 5as/h), the same tokens s·b per micro-batch. With selective
    recomputation (no 5as/h term) they would be k and 1.
    """

    score_factor: float
    longer_score_factor: float
    growth_same_b: float
    growth_same_tokens: float


def longer_sequence(*, hidden: int, heads: int, seq_len: int, factor: int = 2) -> LongerSequence:
    """One layer's activation bytes at ``factor``·s against s (Korthikanti et al. 2022,
    Eq. 1; see ``LongerSequence``). Llama 2 7B (h 4,096, a 32) from 4,096 to 8,192
    tokens: 5as/h 160 → 320, growth 2·354/194 = 3.65 at the same b, 354/194 = 1.82 at
    the same tokens per micro-batch."""
    k = check_int("factor", factor, 1, MAX_SEQ_LEN)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    check_int("seq_len", s * k, 1, MAX_SEQ_LEN)
    before = attention_score_factor(hidden=hidden, heads=heads, seq_len=s)
    after = attention_score_factor(hidden=hidden, heads=heads, seq_len=s * k)
    same_tokens = (34.0 + after) / (34.0 + before)
    return LongerSequence(score_factor=before, longer_score_factor=after,
                          growth_same_b=k * same_tokens, growth_same_tokens=same_tokens)
