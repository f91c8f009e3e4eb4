"""The per-term breakdown of one layer's activations (Korthikanti et al. 2022, Sec. 4.1),
which the lab examples/activations.py measures tensor by tensor."""

from __future__ import annotations

import dataclasses
import math

import pytest

from calc.activations import (
    RECOMPUTE_MODES,
    ActivationTerm,
    activation_bytes_per_layer,
    activation_terms_per_layer,
    attention_score_bytes_per_layer,
)

# (s, b, h, a): GPT-3 175B and MT-NLG as in the paper, Llama 2 7B, and the lab's tiny layer
SHAPES = [(2048, 1, 12288, 96), (2048, 1, 20480, 128), (4096, 1, 4096, 32), (32, 2, 64, 4)]


def terms(s: int, b: int, h: int, a: int, mode: str = "none") -> tuple[ActivationTerm, ...]:
    return activation_terms_per_layer(hidden=h, heads=a, seq_len=s, micro_batch=b, recompute=mode)


def total(found: tuple[ActivationTerm, ...]) -> float:
    return math.fsum(t.bytes for t in found)


@pytest.mark.parametrize(("s", "b", "h", "a"), SHAPES)
@pytest.mark.parametrize("mode", RECOMPUTE_MODES)
def test_the_terms_sum_to_table_2_with_t_1(s: int, b: int, h: int, a: int, mode: str) -> None:
    expected = activation_bytes_per_layer(hidden=h, heads=a, seq_len=s, micro_batch=b, tp=1, recompute=mode)
    assert total(terms(s, b, h, a, mode)) == expected


@pytest.mark.parametrize(("s", "b", "h", "a"), SHAPES)
def test_the_blocks_are_the_papers_11sbh_5as2b_19sbh_and_4sbh(s: int, b: int, h: int, a: int) -> None:
    """Sec. 4.1: attention block 11sbh + 5as²b, MLP 19sbh, LayerNorms 4sbh."""
    sbh, as2b = s * b * h, a * s * s * b
    by_block = {block: total(tuple(t for t in terms(s, b, h, a) if t.block == block))
                for block in ("attention", "mlp", "layernorm")}
    assert by_block == {"attention": 11 * sbh + 5 * as2b, "mlp": 19 * sbh, "layernorm": 4 * sbh}


@pytest.mark.parametrize(("s", "b", "h", "a"), SHAPES)
def test_selective_recomputation_drops_exactly_the_attention_scores(s: int, b: int, h: int, a: int) -> None:
    everything = terms(s, b, h, a)
    kept = terms(s, b, h, a, "selective")
    dropped = [t for t in everything if t not in kept]
    assert [t.key for t in dropped] == ["softmax_output", "softmax_dropout_mask", "softmax_dropout_output"]
    assert all(t.attention_scores for t in dropped) and not any(t.attention_scores for t in kept)
    scores = attention_score_bytes_per_layer(hidden=h, heads=a, seq_len=s, micro_batch=b)
    assert total(tuple(dropped)) == scores == 5 * a * s * s * b
    # Q, K and V stay: they are the inputs the recomputed part starts from.
    assert {"query_key", "value"} <= {t.key for t in kept}


@pytest.mark.parametrize(("s", "b", "h", "a"), SHAPES)
def test_full_recomputation_keeps_only_the_layer_input(s: int, b: int, h: int, a: int) -> None:
    [kept] = terms(s, b, h, a, "full")
    assert (kept.key, kept.formula, kept.bytes) == ("attention_layernorm_input", "2sbh", 2 * s * b * h)


def test_the_papers_formulas_and_order() -> None:
    found = terms(32, 2, 64, 4)
    assert [(t.key, t.formula) for t in found] == [
        ("qkv_input", "2sbh"), ("query_key", "4sbh"), ("softmax_output", "2as²b"),
        ("softmax_dropout_mask", "as²b"), ("softmax_dropout_output", "2as²b"), ("value", "2sbh"),
        ("projection_input", "2sbh"), ("projection_dropout_mask", "sbh"), ("fc1_input", "2sbh"),
        ("gelu_input", "8sbh"), ("fc2_input", "8sbh"), ("mlp_dropout_mask", "sbh"),
        ("attention_layernorm_input", "2sbh"), ("mlp_layernorm_input", "2sbh"),
    ]
    assert dataclasses.is_dataclass(ActivationTerm) and ActivationTerm.__dataclass_params__.frozen


def test_llama2_7b_softmax_output_and_gpt3s_70_percent() -> None:
    """Llama 2 7B, one 4,096-token sequence: the softmax output alone is 2·32·4096² =
    1.074 GB, twice the 34sbh of the rest of the layer. GPT-3 175B (Sec. 5): selective
    recomputation removes 5as/h = 80 of the 114 sbh per layer, "70%" of the activations."""
    llama = {t.key: t.bytes for t in terms(4096, 1, 4096, 32)}
    assert llama["softmax_output"] == pytest.approx(1.074e9, rel=1e-3)
    gpt3 = terms(2048, 1, 12288, 96)
    saved = 1 - total(terms(2048, 1, 12288, 96, "selective")) / total(gpt3)
    assert saved == pytest.approx(80 / 114) and round(saved, 2) == 0.70


@pytest.mark.parametrize(("name", "value"), [("hidden", 0), ("heads", 1.5), ("seq_len", -1),
                                             ("micro_batch", True), ("recompute", "partial")])
def test_bad_arguments_name_themselves(name: str, value: object) -> None:
    args = dict(hidden=64, heads=4, seq_len=32, micro_batch=2, recompute="none")
    with pytest.raises(ValueError, match=name):
        activation_terms_per_layer(**{**args, name: value})
