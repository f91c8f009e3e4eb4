"""Megatron's FLOP count term by term (Narayanan et al. 2021, Appendix) and Kaplan's
non-embedding N (Kaplan et al. 2020, Eq. 2.1): the formulas examples/flops.py checks."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from calc.compute import non_embedding_params, training_flops
from calc.models import (
    MEGATRON_MODELS,
    MODELS,
    MegatronForwardFlops,
    ModelConfig,
    megatron_flops_per_iteration,
    megatron_forward_flops,
    param_count,
)

TINY = dict(layers=2, hidden=64, vocab=128, seq_len=32, global_batch=8)  # the lab's GPT


def test_the_forward_pass_is_the_appendixs_list_of_matmuls() -> None:
    """Per layer: QKV 6Bsh², QKᵀ 2Bs²h, attention over V 2Bs²h, projection 2Bsh², MLP
    16Bsh², summing to 24Bsh² + 4Bs²h; the logits 2BshV once (GPT-3 175B, B 1536)."""
    m = MODELS["gpt3-175b"]
    l, h, v, s, b = m.layers, m.hidden, m.vocab, m.seq_len, 1536
    f = megatron_forward_flops(layers=l, hidden=h, vocab=v, seq_len=s, global_batch=b)
    assert (f.qkv, f.scores, f.context, f.proj) == (l * 6 * b * s * h * h, l * 2 * b * s * s * h,
                                                   l * 2 * b * s * s * h, l * 2 * b * s * h * h)
    assert f.fc1 + f.fc2 == l * 16 * b * s * h * h and f.fc1 == f.fc2
    assert f.transformer == l * (24 * b * s * h * h + 4 * b * s * s * h)
    assert f.logits == 2 * b * s * h * v
    assert f.total == f.linear + f.attention + f.logits
    assert all(type(x) is int for x in (f.qkv, f.scores, f.context, f.proj, f.fc1, f.fc2, f.logits))


def test_the_docstrings_tiny_gpt() -> None:
    f = megatron_forward_flops(**TINY)
    assert (f.linear, f.attention, f.logits) == (50_331_648, 4_194_304, 4_194_304)
    assert isinstance(f, MegatronForwardFlops)
    with pytest.raises(AttributeError):
        f.qkv = 0  # type: ignore[misc]  # frozen


@pytest.mark.parametrize("model", [MODELS["gpt3-175b"], MEGATRON_MODELS["megatron-1t"]], ids=lambda m: m.key)
def test_eq3_is_three_forward_passes_plus_what_is_rerun(model: ModelConfig) -> None:
    """none = 3 × forward; full adds the layers' forward (the 96 of Eq. 3), selective the
    two attention-score matmuls; each equals the closed form of Eq. 3 to rounding."""
    shape = dict(layers=model.layers, hidden=model.hidden, vocab=model.vocab, seq_len=model.seq_len)
    b = 1536
    f = megatron_forward_flops(**shape, global_batch=b)
    none, selective, full = (megatron_flops_per_iteration(**shape, global_batch=b, recompute=r)
                             for r in ("none", "selective", "full"))
    assert none == float(3 * f.total)
    assert full == float(3 * f.total + f.transformer)
    assert selective == float(3 * f.total + f.attention)
    l, h, v, s = model.layers, model.hidden, model.vocab, model.seq_len
    assert full == pytest.approx(96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)), rel=1e-12)
    assert none == pytest.approx(72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h)), rel=1e-12)
    assert selective == pytest.approx(72 * b * s * l * h * h * (1 + s / (6 * h) + s / (18 * h) + v / (12 * l * h)),
                                      rel=1e-12)


def test_small_counts_are_exact_where_the_closed_form_rounds() -> None:
    """72·(…) in floating point gives 176,160,767.99999997 for the lab's GPT; the count
    is a whole number, as FlopCounterMode's is."""
    l, h, v, s, b = 2, 64, 128, 32, 8
    closed = 72.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h))
    assert closed != 176_160_768
    assert megatron_flops_per_iteration(**TINY, recompute="none") == 176_160_768
    assert megatron_flops_per_iteration(**TINY, recompute="full") == 230_686_720
    assert megatron_flops_per_iteration(**TINY, recompute="selective") == 180_355_072


def test_kaplans_n_is_the_layers_weight_matrices() -> None:
    """Kaplan et al. 2020, Eq. 2.1: N = 12·l·h². GPT-3 175B: 173.9B; the rest of its
    174.6B are the embedding, the positions, the biases and the LayerNorms."""
    m = MODELS["gpt3-175b"]
    n = non_embedding_params(m.layers, m.hidden)
    assert n == 173_946_175_488 and type(n) is int
    assert param_count(m) - n == m.vocab * m.hidden + m.seq_len * m.hidden + 13 * m.layers * m.hidden + 2 * m.hidden


@pytest.mark.parametrize("seq_len", [32, 256, 2048])
def test_step_over_6nd_is_eq3s_bracket_with_kaplans_n(seq_len: int) -> None:
    """6·(12lh²)·B·s is Eq. 3's 72·B·s·l·h², so the step over 6ND is 1 + s/(6h) + V/(12lh):
    7/6 for the lab's GPT at s = 32, 7/4 at s = 256."""
    shape = {**TINY, "seq_len": seq_len}
    step = megatron_flops_per_iteration(**shape, recompute="none")
    six_nd = training_flops(non_embedding_params(TINY["layers"], TINY["hidden"]), TINY["global_batch"] * seq_len)
    bracket = 1 + seq_len / (6 * 64) + 128 / (12 * 2 * 64)
    assert step / six_nd == pytest.approx(bracket, rel=1e-12)
    assert math.isclose(step / six_nd, {32: 7 / 6, 256: 7 / 4}.get(seq_len, bracket), rel_tol=1e-12)


@pytest.mark.parametrize(("fn", "kwargs"), [
    (megatron_forward_flops, dict(layers=96, hidden=12288, vocab=51200, seq_len=2048, global_batch=1536)),
    (non_embedding_params, dict(layers=96, hidden=12288)),
])
def test_bad_arguments_are_named(fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    """As tests/calc/test_validation.py does for the other functions."""
    fn(**kwargs)
    for arg in kwargs:
        for bad in (math.nan, math.inf, True, "8", None, -1, 1e40, 0.5):
            with pytest.raises(ValueError) as info:
                fn(**{**kwargs, arg: bad})
            assert str(info.value).startswith(f"{arg} must be"), str(info.value)
