"""Training compute: the 6ND rule.

Kaplan et al. 2020, "Scaling Laws for Neural Language Models", Sec. 2.1: a forward
pass costs about 2N FLOP per token and the backward pass twice that, so training on
D tokens costs C ≈ 6·N·D FLOP (embeddings and attention's context term neglected).
"""

from __future__ import annotations

from ._check import (
    MAX_FLOPS,
    MAX_FLOPS_PER_S,
    MAX_GPUS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_PARAMS,
    MAX_TOKENS,
    check_int,
    check_real,
)

__all__ = [
    "FLOPS_PER_PARAM_PER_TOKEN",
    "megatron_training_seconds",
    "non_embedding_params",
    "training_flops",
    "training_seconds",
]

FLOPS_PER_PARAM_PER_TOKEN = 6  # Kaplan et al. 2020 Sec. 2.1: 2 forward + 4 backward


def training_flops(params: float, tokens: float) -> float:
    """C = 6·N·D FLOP (Kaplan et al. 2020, Sec. 2.1). Llama 2 7B, 2T tokens: 8.09e22."""
    n = check_real("params", params, 0, MAX_PARAMS)
    d = check_real("tokens", tokens, 0, MAX_TOKENS)
    return FLOPS_PER_PARAM_PER_TOKEN * n * d


def non_embedding_params(layers: int, hidden: int) -> int:
    """N, the parameter count of the 6ND rule as Kaplan et al. 2020 define it (Sec. 2.1,
    Eq. 2.1 and Table 1): the layers' weight matrices only, embeddings, biases and
    LayerNorms left out,

        N ≈ 2·d_model·n_layer·(2·d_attn + d_ff) = 12·l·h²

    with d_attn = h and d_ff = 4h (l = ``layers``, h = ``hidden``). With this N, 6·N·D
    is exactly the 72·B·s·l·h² in front of Narayanan et al. 2021's Eq. 3 without
    recomputation (D = B·s), so a training step's FLOP over 6ND is Eq. 3's bracket
    1 + s/(6h) + V/(12·l·h). GPT-3 175B: 173,946,175,488.
    """
    l = check_int("layers", layers, 1, MAX_LAYERS)
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    return 12 * l * h * h


def training_seconds(*, flops: float, gpus: int, flops_per_gpu: float) -> float:
    """T = C / (n · X), C = ``flops``, n = ``gpus`` (the run's total GPU count), X =
    ``flops_per_gpu``: perfect scaling, no communication or bubble."""
    c = check_real("flops", flops, 0, MAX_FLOPS)
    g = check_int("gpus", gpus, 1, MAX_GPUS)
    f = check_real("flops_per_gpu", flops_per_gpu, 0, MAX_FLOPS_PER_S, lo_inclusive=False)
    return c / (g * f)


def megatron_training_seconds(
    *, params: float, tokens: float, gpus: int, flops_per_gpu: float
) -> float:
    """End-to-end training time with activation recomputation, Narayanan et al. 2021,
    Eq. 4: T ≈ 8·T_tokens·P / (n·X), X the achieved FLOP/s per GPU (Eq. 3 with
    6h ≫ s and 16lh ≫ V: 8 FLOP per parameter per token, 2 of them recomputation).
    GPT-3 175B, 300B tokens, 1,024 GPUs at 140 TFLOP/s: about 34 days."""
    n = check_real("params", params, 0, MAX_PARAMS)
    d = check_real("tokens", tokens, 0, MAX_TOKENS)
    g = check_int("gpus", gpus, 1, MAX_GPUS)
    f = check_real("flops_per_gpu", flops_per_gpu, 0, MAX_FLOPS_PER_S, lo_inclusive=False)
    return 8.0 * d * n / (g * f)
