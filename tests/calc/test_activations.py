"""Activation memory per layer, Korthikanti et al. 2022, Sec. 4-5 and Table 2."""

from __future__ import annotations

import itertools

import pytest

from calc.activations import RECOMPUTE_MODES, activation_bytes, activation_bytes_per_layer
from calc.models import MODELS

# (s, b, h, a) grid, including the paper's GPT-3 and MT-NLG shapes
SHAPES = [(2048, 1, 12288, 96), (2048, 1, 20480, 128), (4096, 2, 4096, 32), (512, 8, 1024, 16)]
TPS = [1, 2, 4, 8]


@pytest.mark.parametrize(("s", "b", "h", "a"), SHAPES)
def test_no_parallelism_is_34sbh_plus_5as2b(s: int, b: int, h: int, a: int) -> None:
    """Eq. 1: sbh(34 + 5as/h). The parts (Sec. 4.1): attention 11sbh + 5as²b, MLP
    19sbh, two LayerNorms 4sbh."""
    sbh = s * b * h
    parts = (11 * sbh + 5 * a * s * s * b) + 19 * sbh + 4 * sbh
    assert activation_bytes_per_layer(s, b, h, a) == pytest.approx(parts, rel=1e-12)
    assert activation_bytes_per_layer(s, b, h, a) == pytest.approx(sbh * (34 + 5 * a * s / h))


@pytest.mark.parametrize(("shape", "t"), list(itertools.product(SHAPES, TPS)))
def test_table2_rows(shape: tuple[int, int, int, int], t: int) -> None:
    """Korthikanti et al. 2022, Table 2, every row:
    tensor parallel sbh(10 + 24/t + 5as/(ht)); + sequence parallel sbh/t(34 + 5as/h);
    tensor parallel + selective recomputation sbh(10 + 24/t);
    + sequence parallel + selective 34sbh/t; full recomputation 2sbh."""
    s, b, h, a = shape
    sbh = s * b * h
    f = activation_bytes_per_layer
    assert f(s, b, h, a, t) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert f(s, b, h, a, t, True) == pytest.approx(sbh / t * (34 + 5 * a * s / h))
    assert f(s, b, h, a, t, False, "selective") == pytest.approx(sbh * (10 + 24 / t))
    assert f(s, b, h, a, t, True, "selective") == pytest.approx(34 * sbh / t)
    assert f(s, b, h, a, t, False, "full") == pytest.approx(2 * sbh)
    assert f(s, b, h, a, t, True, "full") == pytest.approx(2 * sbh)


@pytest.mark.parametrize(("shape", "t"), list(itertools.product(SHAPES, TPS)))
def test_each_technique_only_lowers_memory(shape: tuple[int, int, int, int], t: int) -> None:
    """Sequence parallelism and recomputation never add memory; with t = 1 sequence
    parallelism changes nothing."""
    s, b, h, a = shape
    for mode in RECOMPUTE_MODES:
        assert activation_bytes_per_layer(s, b, h, a, t, True, mode) <= activation_bytes_per_layer(
            s, b, h, a, t, False, mode
        )
    for sp in (False, True):
        none, sel, full = (activation_bytes_per_layer(s, b, h, a, t, sp, m) for m in RECOMPUTE_MODES)
        assert full <= sel <= none
    assert activation_bytes_per_layer(s, b, h, a, 1, True) == activation_bytes_per_layer(s, b, h, a)


def test_selective_recomputation_saves_70_percent_for_gpt3() -> None:
    """Sec. 5: for GPT-3, 5as/h = 80 and selective recomputation cuts activation memory
    by 70% (34 of 114 left); for MT-NLG (5as/h = 64) by 65%."""
    gpt3 = MODELS["gpt3-175b"]
    s, h, a = gpt3.seq_len, gpt3.hidden, gpt3.heads
    assert 5 * a * s / h == 80
    kept = activation_bytes_per_layer(s, 1, h, a, recompute="selective") / activation_bytes_per_layer(s, 1, h, a)
    assert 1 - kept == pytest.approx(0.70, abs=0.005)
    kept = activation_bytes_per_layer(2048, 1, 20480, 128, recompute="selective") / activation_bytes_per_layer(
        2048, 1, 20480, 128
    )
    assert 1 - kept == pytest.approx(0.65, abs=0.005)


def test_one_llama2_7b_sequence_needs_104_gb_of_activations() -> None:
    """CONTEXT `why.act_seq_bytes`: 32 layers × 4096·4096·(34 + 5·32·4096/4096)
    = 104.2e9 bytes, and 18.3e9 with selective recomputation (34·s·h per layer)."""
    m = MODELS["llama2-7b"]
    total = activation_bytes(m.seq_len, 1, m.hidden, m.heads, m.layers)
    assert total == pytest.approx(104.15e9, rel=1e-3)
    selective = activation_bytes(m.seq_len, 1, m.hidden, m.heads, m.layers, recompute="selective")
    assert selective == pytest.approx(34 * 4096 * 4096 * 32, rel=1e-12)


def test_activation_memory_grows_with_micro_batch_linearly() -> None:
    one = activation_bytes_per_layer(2048, 1, 4096, 32)
    assert activation_bytes_per_layer(2048, 4, 4096, 32) == pytest.approx(4 * one)
