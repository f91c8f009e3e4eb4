"""Activation memory of a transformer layer.

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models", Sec. 4 and Table 2. Counting 16-bit activations (2 bytes per element) and
1-byte dropout masks, one layer stores, in bytes, with s sequence length, b
micro-batch size, h hidden size, a attention heads, t tensor-parallel size:

* attention block 11·s·b·h + 5·a·s²·b, MLP block 19·s·b·h, two LayerNorms 4·s·b·h,
  so with no parallelism (Sec. 4.1, Eq. 1):  s·b·h·(34 + 5·a·s/h);
* tensor parallel (Sec. 4.2.1):               s·b·h·(10 + 24/t + 5·a·s/(h·t));
* tensor + sequence parallel (Sec. 4.2.2):    s·b·h/t·(34 + 5·a·s/h);
* selective recomputation (Sec. 5) drops the 5·a·s/h attention term:
  s·b·h·(10 + 24/t) without, 34·s·b·h/t with sequence parallelism;
* full recomputation stores only the layer input: 2·s·b·h (Table 2, "sbh(2)").

The MLP term assumes the paper's 4h GELU MLP; Llama's SwiGLU MLP differs slightly,
and FlashAttention removes the s² term altogether (neither is modelled here).
"""

from __future__ import annotations

from ._check import (
    MAX_BATCH,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_SEQ_LEN,
    check_choice,
    check_int,
)

__all__ = ["RECOMPUTE_MODES", "activation_bytes", "activation_bytes_per_layer"]

RECOMPUTE_MODES = ("none", "selective", "full")


def activation_bytes_per_layer(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
) -> float:
    """Activation bytes one transformer layer keeps for the backward pass, per GPU.

    Korthikanti et al. 2022, Table 2 (s = ``seq_len``, b = ``micro_batch``,
    h = ``hidden``, a = ``heads``, t = ``tp``):

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
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    a = check_int("heads", heads, 1, MAX_HEADS)
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


def activation_bytes(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    layers: int,
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
        seq_len, micro_batch, hidden, heads, tp, sequence_parallel, recompute
    )
