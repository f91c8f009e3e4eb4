"""Model presets and parameter counts (Llama 2, GPT-3, Megatron-LM 2021 Eq. 2 and 3)."""

from __future__ import annotations

import math

import pytest

from calc.compute import megatron_training_seconds
from calc.models import (
    DEFAULT_MODEL,
    MODELS,
    ModelConfig,
    get_model,
    layer_param_count,
    megatron_flops_per_iteration,
    megatron_param_count,
    param_count,
)

DAY = 86_400.0


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("llama2-7b", 6_738_415_616),
        ("llama2-13b", 13_015_864_320),
        ("llama2-70b", 68_976_648_192),
    ],
)
def test_llama2_parameter_counts_are_exact(key: str, expected: int) -> None:
    """Llama 2 7B/13B/70B have exactly the published checkpoint sizes (HF config.json:
    untied embeddings, RMSNorm, SwiGLU, no biases, GQA with 8 kv heads for 70B)."""
    assert param_count(MODELS[key]) == expected


def test_llama2_7b_block_has_202m_parameters() -> None:
    """One Llama 2 7B block: 4·4096² + 3·4096·11008 + 2·4096 = 202,383,360."""
    assert layer_param_count(MODELS["llama2-7b"]) == 202_383_360


def test_llama2_70b_uses_grouped_query_attention() -> None:
    """Llama 2 paper Sec. 2.2: GQA for 70B; k and v project to 8 heads of 128."""
    m = MODELS["llama2-70b"]
    assert (m.heads, m.kv_heads, m.head_dim) == (64, 8, 128)
    full_mha = 4 * m.hidden**2 + 3 * m.hidden * m.ffn + 2 * m.hidden
    assert full_mha - layer_param_count(m) == 2 * m.hidden * (m.hidden - 8 * 128)


def test_gpt3_175b_counts_about_175_billion() -> None:
    """GPT-3 (Brown et al. 2020, Table 2.1): 96 layers, d_model 12288, 2048 context,
    tied embeddings, learned positions: 174.6e9 parameters, "175.0B" in the table."""
    m = MODELS["gpt3-175b"]
    assert (m.layers, m.hidden, m.heads, m.seq_len, m.vocab) == (96, 12288, 96, 2048, 50257)
    assert m.ffn == 4 * m.hidden and m.tied_embeddings
    n = param_count(m)
    assert n == 174_604_259_328
    assert n == pytest.approx(175e9, rel=0.005)


def test_gpt3_block_matches_megatron_12h2_plus_13h() -> None:
    """A GPT block has 12h² + 13h parameters (Narayanan et al. 2021, Eq. 2)."""
    h = 12288
    assert layer_param_count(MODELS["gpt3-175b"]) == 12 * h * h + 13 * h


def test_gpt3_count_agrees_with_megatron_eq2() -> None:
    """Eq. 2 with GPT-3's V and s differs from the exact count only by the final
    LayerNorm (2h)."""
    m = MODELS["gpt3-175b"]
    eq2 = megatron_param_count(layers=m.layers, hidden=m.hidden, vocab=m.vocab, seq_len=m.seq_len)
    assert eq2 == pytest.approx(param_count(m) - 2 * m.hidden, rel=1e-12)


def test_every_preset_is_sourced_and_keyed() -> None:
    for key, m in MODELS.items():
        assert isinstance(m, ModelConfig) and m.key == key
        assert m.source and m.name
        assert m.hidden % m.heads == 0 and m.heads % m.kv_heads == 0
    assert DEFAULT_MODEL == "llama2-7b"
    assert get_model("llama2-13b") is MODELS["llama2-13b"]
    with pytest.raises(ValueError, match="model must be one of llama2-7b"):
        get_model("llama3-8b")


def test_param_count_rejects_non_models() -> None:
    with pytest.raises(ValueError, match="model must be a ModelConfig"):
        param_count("llama2-7b")  # type: ignore[arg-type]


# Narayanan et al. 2021, Table 1 (weak scaling, V = 51,200, s = 2,048):
# params (B), heads, hidden, layers, TP, PP, GPUs, batch, TFLOP/s per GPU, PFLOP/s total
MEGATRON_TABLE_1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137, 4.4),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138, 8.8),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142, 18.2),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135, 34.6),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138, 70.8),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140, 143.8),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148, 227.1),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155, 297.4),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163, 410.2),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163, 502.0),
]
V, S = 51_200, 2_048


@pytest.mark.parametrize("row", MEGATRON_TABLE_1, ids=lambda r: f"{r[0]}B")
def test_megatron_table1_parameter_counts_follow_eq2(row: tuple) -> None:
    """Narayanan et al. 2021, Table 1: Eq. 2 reproduces each model's size to the
    table's 0.1B rounding."""
    billions, _, hidden, layers, *_ = row
    assert megatron_param_count(layers=layers, hidden=hidden, vocab=V, seq_len=S) / 1e9 == pytest.approx(
        billions, abs=0.051)


@pytest.mark.parametrize("row", MEGATRON_TABLE_1, ids=lambda r: f"{r[0]}B")
def test_megatron_table1_gpu_counts_and_throughput_are_consistent(row: tuple) -> None:
    """Table 1: GPUs = TP × PP × DP with whole DP, and per-GPU TFLOP/s × GPUs equals the
    aggregate PFLOP/s to the table's rounding (per-GPU figure rounded to 1 TFLOP/s)."""
    _, heads, hidden, _, tp, pp, n_gpus, batch, tflops, pflops = row
    assert n_gpus % (tp * pp) == 0 and batch % (n_gpus // (tp * pp)) == 0
    assert hidden % heads == 0 and heads % tp == 0
    assert pflops * 1e3 / n_gpus == pytest.approx(tflops, abs=0.5 + 0.05e3 / n_gpus)


@pytest.mark.parametrize("row", MEGATRON_TABLE_1, ids=lambda r: f"{r[0]}B")
def test_megatron_eq3_is_four_passes_of_the_layers_plus_the_logits(row: tuple) -> None:
    """Eq. 3, F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)), expands to 4 × (24Bslh² +
    4Bs²lh) (recomputation adds a forward pass) + 6BshV (logits); without
    recomputation 3 × the layers + the same logits. For the largest models F is close
    to 8·B·s·P, the basis of Eq. 4."""
    _, _, h, l, _, _, _, b, _, _ = row
    layers = 24 * b * S * l * h * h + 4 * b * S * S * l * h
    logits = 6 * b * S * h * V
    shape = dict(layers=l, hidden=h, vocab=V, seq_len=S)
    with_recompute = megatron_flops_per_iteration(**shape, global_batch=b)
    assert with_recompute == pytest.approx(4 * layers + logits, rel=1e-12)
    assert megatron_flops_per_iteration(**shape, global_batch=b, recompute="none") == pytest.approx(
        3 * layers + logits, rel=1e-12
    )
    p = megatron_param_count(**shape)
    if h >= 8192:
        assert with_recompute == pytest.approx(8 * b * S * p, rel=0.04)


def test_megatron_eq4_gpt3_trains_in_34_days() -> None:
    """Narayanan et al. 2021, Sec. 5.1 / Eq. 4: GPT-3 (175B) on 300B tokens with 1,024
    A100s at 140 TFLOP/s per GPU takes 8TP/(nX) = 34 days."""
    seconds = megatron_training_seconds(params=175e9, tokens=300e9, gpus=1024, flops_per_gpu=140e12)
    assert seconds / DAY == pytest.approx(34, abs=0.5)


def test_megatron_eq4_trillion_parameter_model_trains_in_84_days() -> None:
    """Same section: the 1T model on 450B tokens, 3,072 GPUs at 163 TFLOP/s: 84 days."""
    seconds = megatron_training_seconds(params=1008e9, tokens=450e9, gpus=3072, flops_per_gpu=163e12)
    assert seconds / DAY == pytest.approx(84, abs=0.5)


def test_megatron_eq2_and_eq3_expand_as_written() -> None:
    """Eq. 2: P = 12lh² + 13lh + (V + s)h."""
    l, h = 96, 12288
    assert megatron_param_count(layers=l, hidden=h, vocab=V, seq_len=S) == pytest.approx(
        12 * l * h * h + 13 * l * h + (V + S) * h, rel=1e-12
    )
    assert math.isfinite(megatron_flops_per_iteration(layers=1, hidden=1, vocab=1, seq_len=1, global_batch=1))


def test_parameter_counts_are_whole_numbers() -> None:
    """Eq. 2 expanded, 12lh² + 13lh + (V + s)h, is an int like the exact counts."""
    l, h = 96, 12288
    eq2 = megatron_param_count(layers=l, hidden=h, vocab=V, seq_len=S)
    assert type(eq2) is int and eq2 == 12 * l * h * h + 13 * l * h + (V + S) * h
    assert all(type(param_count(m)) is int for m in MODELS.values())


def test_recompute_is_a_mode_as_in_activations() -> None:
    """The same three modes as ``calc.activations.RECOMPUTE_MODES``; a bool is refused."""
    shape = dict(layers=96, hidden=12288, vocab=V, seq_len=S, global_batch=1536)
    none, selective, full = (megatron_flops_per_iteration(**shape, recompute=r)
                             for r in ("none", "selective", "full"))
    assert none < selective < full
    with pytest.raises(ValueError, match="^recompute must be one of none, selective, full"):
        megatron_flops_per_iteration(**shape, recompute=True)  # type: ignore[arg-type]
