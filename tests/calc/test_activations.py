"""Activation memory per layer, Korthikanti et al. 2022, Sec. 4-5 and Table 2."""

from __future__ import annotations

import itertools

import pytest

from calc.activations import (
    RECOMPUTE_MODES,
    activation_bytes,
    activation_bytes_per_layer,
    attention_score_bytes_per_layer,
    attention_score_factor,
    peak_activation_bytes,
    recompute_overhead,
    rematerialized_bytes,
    selective_overhead_eq8,
)
from calc.models import MODELS, megatron_flops_per_iteration

# (s, b, h, a) grid, including the paper's GPT-3 and MT-NLG shapes
SHAPES = [(2048, 1, 12288, 96), (2048, 1, 20480, 128), (4096, 2, 4096, 32), (512, 8, 1024, 16)]
TPS = [1, 2, 4, 8]


def shape_kw(s: int, b: int, h: int, a: int) -> dict[str, int]:
    """calc's keyword arguments for (s, b, h, a), in the symbol table's order."""
    return dict(hidden=h, heads=a, seq_len=s, micro_batch=b)


def per_layer(s: int, b: int, h: int, a: int, t: int = 1, sp: bool = False, mode: str = "none") -> float:
    return activation_bytes_per_layer(**shape_kw(s, b, h, a), tp=t, sequence_parallel=sp, recompute=mode)


@pytest.mark.parametrize(("s", "b", "h", "a"), SHAPES)
def test_no_parallelism_is_34sbh_plus_5as2b(s: int, b: int, h: int, a: int) -> None:
    """Eq. 1: sbh(34 + 5as/h). The parts (Sec. 4.1): attention 11sbh + 5as²b, MLP
    19sbh, two LayerNorms 4sbh."""
    sbh = s * b * h
    parts = (11 * sbh + 5 * a * s * s * b) + 19 * sbh + 4 * sbh
    assert per_layer(s, b, h, a) == pytest.approx(parts, rel=1e-12)
    assert per_layer(s, b, h, a) == pytest.approx(sbh * (34 + 5 * a * s / h))


@pytest.mark.parametrize(("shape", "t"), list(itertools.product(SHAPES, TPS)))
def test_table2_rows(shape: tuple[int, int, int, int], t: int) -> None:
    """Korthikanti et al. 2022, Table 2, every row:
    tensor parallel sbh(10 + 24/t + 5as/(ht)); + sequence parallel sbh/t(34 + 5as/h);
    tensor parallel + selective recomputation sbh(10 + 24/t);
    + sequence parallel + selective 34sbh/t; full recomputation 2sbh."""
    s, b, h, a = shape
    sbh = s * b * h
    f = per_layer
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
        assert per_layer(s, b, h, a, t, True, mode) <= per_layer(s, b, h, a, t, False, mode)
    for sp in (False, True):
        none, sel, full = (per_layer(s, b, h, a, t, sp, m) for m in RECOMPUTE_MODES)
        assert full <= sel <= none
    assert per_layer(s, b, h, a, 1, True) == per_layer(s, b, h, a)


def test_selective_recomputation_saves_70_percent_for_gpt3() -> None:
    """Sec. 5: for GPT-3, 5as/h = 80 and selective recomputation cuts activation memory
    by 70% (34 of 114 left); for MT-NLG (5as/h = 64) by 65%."""
    gpt3 = MODELS["gpt3-175b"]
    s, h, a = gpt3.seq_len, gpt3.hidden, gpt3.heads
    assert 5 * a * s / h == 80
    kept = per_layer(s, 1, h, a, mode="selective") / per_layer(s, 1, h, a)
    assert 1 - kept == pytest.approx(0.70, abs=0.005)
    kept = per_layer(2048, 1, 20480, 128, mode="selective") / per_layer(2048, 1, 20480, 128)
    assert 1 - kept == pytest.approx(0.65, abs=0.005)


def test_one_llama2_7b_sequence_needs_104_gb_of_activations() -> None:
    """CONTEXT `why.act_seq_bytes`: 32 layers × 4096·4096·(34 + 5·32·4096/4096)
    = 104.2e9 bytes, and 18.3e9 with selective recomputation (34·s·h per layer)."""
    m = MODELS["llama2-7b"]
    one_sequence = dict(layers=m.layers, hidden=m.hidden, heads=m.heads, seq_len=m.seq_len, micro_batch=1)
    total = activation_bytes(**one_sequence)
    assert total == pytest.approx(104.15e9, rel=1e-3)
    selective = activation_bytes(**one_sequence, recompute="selective")
    assert selective == pytest.approx(34 * 4096 * 4096 * 32, rel=1e-12)


def test_activation_memory_grows_with_micro_batch_linearly() -> None:
    one = per_layer(2048, 1, 4096, 32)
    assert per_layer(2048, 4, 4096, 32) == pytest.approx(4 * one)


# -- beyond Table 2: the score term, full recomputation's peak, the cost of recomputing --

@pytest.mark.parametrize(("shape", "t"), list(itertools.product(SHAPES, TPS)))
def test_attention_scores_are_what_selective_recomputation_drops(shape: tuple[int, int, int, int], t: int) -> None:
    """Sec. 4.1: softmax output 2as²b + dropout mask as²b + dropout output 2as²b = 5as²b,
    split over t (Sec. 4.2.1); Table 2's 'none' rows minus their 'selective' rows."""
    s, b, h, a = shape
    scores = attention_score_bytes_per_layer(**shape_kw(s, b, h, a), tp=t)
    assert scores == pytest.approx(5 * a * s * s * b / t)
    for sp in (False, True):
        kept = per_layer(s, b, h, a, t, sp, "none") - per_layer(s, b, h, a, t, sp, "selective")
        assert kept == pytest.approx(scores)


def test_llama2_7b_scores_are_most_of_a_layer_at_4096_tokens() -> None:
    """5as/h = 160 against 34: the scores are 160/194 = 82% of the layer."""
    scores = attention_score_bytes_per_layer(**shape_kw(4096, 1, 4096, 32))
    assert scores == pytest.approx(2.684e9, rel=1e-3)
    assert scores / per_layer(4096, 1, 4096, 32) == pytest.approx(160 / 194)


@pytest.mark.parametrize(("shape", "t"), list(itertools.product(SHAPES, TPS)))
def test_full_recomputation_peak_is_the_checkpoints_plus_one_layer(shape: tuple[int, int, int, int], t: int) -> None:
    """Chen et al. 2016, Sec. 4: checkpoints (2sbh per layer, Table 2) plus the one
    layer being rematerialized; the other modes rebuild nothing at layer scale."""
    kw = shape_kw(*shape)
    s, b, h = kw["seq_len"], kw["micro_batch"], kw["hidden"]
    for sp in (False, True):
        split = dict(tp=t, sequence_parallel=sp)
        one = per_layer(*shape, t, sp)
        assert rematerialized_bytes(**kw, **split, recompute="full") == one
        assert peak_activation_bytes(layers=32, **kw, **split, recompute="full") == pytest.approx(32 * 2 * s * b * h + one)
        for mode in ("none", "selective"):
            assert rematerialized_bytes(**kw, **split, recompute=mode) == 0
            assert peak_activation_bytes(layers=32, **kw, **split, recompute=mode) == activation_bytes(
                layers=32, **kw, **split, recompute=mode)
        peaks = [peak_activation_bytes(layers=32, **kw, **split, recompute=m) for m in RECOMPUTE_MODES]
        assert peaks[2] <= peaks[1] <= peaks[0]


def test_llama2_7b_full_recomputation_peak() -> None:
    """32 layers × 2·4096·4096 + one layer 3.255e9 = 4.329e9 bytes, 24× less than
    storing everything (104.2e9)."""
    assert peak_activation_bytes(layers=32, **shape_kw(4096, 1, 4096, 32), recompute="full") == pytest.approx(
        4.3285e9, rel=1e-4)


def test_selective_recomputation_costs_2_7_and_1_6_percent_by_the_papers_eq8() -> None:
    """Sec. 5: 'The recomputation of these activations introduces only 2.7% and 1.6%
    FLOPs overhead' for GPT-3 and MT-NLG, from Eq. 8 over Eq. 7 with v = 51,200 (Sec. 6)."""
    assert selective_overhead_eq8(layers=96, hidden=12288, vocab=51200, seq_len=2048) == pytest.approx(0.027, abs=0.0005)
    assert selective_overhead_eq8(layers=105, hidden=20480, vocab=51200, seq_len=2048) == pytest.approx(0.016, abs=0.0005)


def test_eq8_reproduces_the_papers_hfu_over_mfu() -> None:
    """Table 5: HFU/MFU = 43.7/41.5 (22B), 52.8/51.4 (175B), 57.0/56.0 (530B), 57.0/56.3
    (1T); Table 3 shapes, s = 2048, v = 51,200 (the table's figures are rounded to 0.1)."""
    for (h, l), mfu, hfu in [((6144, 48), 41.5, 43.7), ((12288, 96), 51.4, 52.8),
                             ((20480, 105), 56.0, 57.0), ((25600, 128), 56.3, 57.0)]:
        assert mfu * (1 + selective_overhead_eq8(layers=l, hidden=h, vocab=51200, seq_len=2048)) == pytest.approx(hfu, abs=0.1)


def test_selective_recomputation_reruns_a_third_of_eq8s_count() -> None:
    """Appendix A lists the rerun forward work, QKᵀ 2Bs²h + attention over V 2Bs²h; Eq. 8
    adds 12Bs²h. GPT-3: 0.9% instead of 2.7%."""
    for s, h, l in [(2048, 12288, 96), (2048, 20480, 105), (4096, 4096, 32)]:
        flops_shape = dict(layers=l, hidden=h, vocab=51200, seq_len=s)
        assert recompute_overhead(**flops_shape, recompute="selective") == pytest.approx(selective_overhead_eq8(**flops_shape) / 3)
    assert recompute_overhead(layers=96, hidden=12288, vocab=51200, seq_len=2048, recompute="selective") == pytest.approx(
        0.009, abs=0.0005)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_full_recomputation_costs_one_forward_of_the_layers(model: str) -> None:
    """Narayanan et al. 2021, Eq. 3: 96·(…) with recomputation over 72·(…) without, minus
    1: a third of the layers' work, a little under 33% because the logits are not rerun."""
    m = MODELS[model]
    flops_shape = dict(layers=m.layers, hidden=m.hidden, vocab=m.vocab, seq_len=m.seq_len)
    full = recompute_overhead(**flops_shape, recompute="full")
    ratio = megatron_flops_per_iteration(**flops_shape, global_batch=1, recompute="full") / \
        megatron_flops_per_iteration(**flops_shape, global_batch=1, recompute="none")
    assert full == pytest.approx(ratio - 1)
    assert 0.32 < full < 1 / 3
    assert recompute_overhead(**flops_shape, recompute="none") == 0


@pytest.mark.parametrize("model", sorted(MODELS))
def test_selective_recomputation_flops_agree_with_its_overhead(model: str) -> None:
    """Eq. 3's count with selective recomputation (the attention-score matmuls rerun,
    Korthikanti et al. 2022, Appendix A) over the count without, minus 1, is
    ``recompute_overhead(..., "selective")``."""
    m = MODELS[model]
    flops_shape = dict(layers=m.layers, hidden=m.hidden, vocab=m.vocab, seq_len=m.seq_len)
    ratio = megatron_flops_per_iteration(**flops_shape, global_batch=8, recompute="selective") / \
        megatron_flops_per_iteration(**flops_shape, global_batch=8, recompute="none")
    assert ratio - 1 == pytest.approx(recompute_overhead(**flops_shape, recompute="selective"), rel=1e-9)


@pytest.mark.parametrize("s", [512, 2048, 8192, 32768, 131072])
def test_selective_always_costs_less_than_full(s: int) -> None:
    """Selective recomputation reruns a subset of what full recomputation reruns."""
    for h, l, v in [(4096, 32, 32000), (12288, 96, 50257)]:
        none, sel, full = (recompute_overhead(layers=l, hidden=h, vocab=v, seq_len=s, recompute=mode)
                           for mode in RECOMPUTE_MODES)
        assert none == 0 < sel < full


def test_paper_evaluation_models_sequence_parallel_and_selective_cut_about_5x() -> None:
    """Sec. 6.1 / Fig. 7: against tensor parallelism alone (Eq. 2), t = 8, s = 2048, the
    two techniques together bring activations to about 1/5 (under ~20%), full
    recomputation to about 10%. Table 3's 22B, 175B, 530B and 1T shapes."""
    for h, a in [(6144, 64), (12288, 96), (20480, 128), (25600, 160)]:
        base = per_layer(2048, 1, h, a, 8)
        both = per_layer(2048, 1, h, a, 8, True, "selective")
        full = per_layer(2048, 1, h, a, 8, False, "full")
        assert 4.9 < base / both < 6.3
        assert 0.07 < full / base < 0.10


def test_gpt3_per_layer_and_whole_model() -> None:
    """GPT-3 175B, one 2,048-token sequence: sbh(34 + 80) = 2.869e9 bytes per layer,
    275 GB over 96 layers; with t = 8, sequence parallelism and selective
    recomputation 34sbh/8 = 107 MB per layer, 10.3 GB (Eq. 6)."""
    gpt3 = dict(layers=96, **shape_kw(2048, 1, 12288, 96))
    assert per_layer(2048, 1, 12288, 96) == pytest.approx(2.869e9, rel=1e-3)
    assert activation_bytes(**gpt3) == pytest.approx(275.4e9, rel=1e-3)
    assert activation_bytes(**gpt3, tp=8, sequence_parallel=True, recompute="selective") == pytest.approx(
        10.27e9, rel=1e-3)


def test_recompute_overhead_validates() -> None:
    with pytest.raises(ValueError, match="recompute must be one of"):
        recompute_overhead(layers=32, hidden=4096, vocab=32000, seq_len=2048, recompute="some")
    with pytest.raises(ValueError, match="vocab"):
        selective_overhead_eq8(layers=32, hidden=4096, vocab=0, seq_len=2048)


def test_score_factor_is_80_for_gpt3_64_for_mt_nlg_and_160_for_llama2_7b() -> None:
    """Sec. 5: 'For GPT-3 ... 5as/h = 80. For MT-NLG ... 5as/h = 64.'"""
    assert attention_score_factor(hidden=12288, heads=96, seq_len=2048) == 80
    assert attention_score_factor(hidden=20480, heads=128, seq_len=2048) == 64
    assert attention_score_factor(hidden=4096, heads=32, seq_len=4096) == 160
    s, b, h, a = 4096, 2, 4096, 32
    assert attention_score_bytes_per_layer(**shape_kw(s, b, h, a)) == pytest.approx(
        s * b * h * attention_score_factor(hidden=h, heads=a, seq_len=s))


def test_longer_sequence_doubles_the_linear_term_and_quadruples_the_scores() -> None:
    """Eq. 1 at 2s against s: the 34·sbh term doubles, the 5as²b term quadruples, so the
    growth is 2(34 + 2x)/(34 + x) with x = 5as/h; Llama 2 7B (x = 160, Sec. 5's
    5as/h for its shape): 2·354/194. Invariant: it equals the ratio of the layer's bytes."""
    from calc.activations import activation_bytes_per_layer, longer_sequence

    r = longer_sequence(hidden=4096, heads=32, seq_len=4096, factor=2)
    assert (r.score_factor, r.longer_score_factor) == (160, 320)
    assert r.growth_same_b == pytest.approx(2 * 354 / 194)
    assert r.growth_same_tokens == pytest.approx(354 / 194)
    for h, a, s in ((4096, 32, 4096), (12288, 96, 2048), (8192, 64, 1024)):
        r = longer_sequence(hidden=h, heads=a, seq_len=s, factor=2)
        before = activation_bytes_per_layer(hidden=h, heads=a, seq_len=s, micro_batch=2)
        assert r.growth_same_b == pytest.approx(
            activation_bytes_per_layer(hidden=h, heads=a, seq_len=2 * s, micro_batch=2) / before)
        assert r.growth_same_tokens == pytest.approx(
            activation_bytes_per_layer(hidden=h, heads=a, seq_len=2 * s, micro_batch=1) / before)


def test_sbh_coefficient_is_the_bracket_of_table_2() -> None:
    """Table 2's bracket: Llama 2 7B at 4,096 tokens 34 + 160 = 194; GPT-3 175B at
    2,048 tokens, t = 8: 10 + 24/8 + 80/8 = 23, and 34/8 = 4.25 with sequence
    parallelism and selective recomputation; 2 with full recomputation; b drops out."""
    from calc.activations import sbh_coefficient
    assert sbh_coefficient(hidden=4096, heads=32, seq_len=4096) == pytest.approx(194)
    gpt3 = dict(hidden=12288, heads=96, seq_len=2048, tp=8)
    assert sbh_coefficient(**gpt3) == pytest.approx(23)
    assert sbh_coefficient(**gpt3, sequence_parallel=True, recompute="selective") == pytest.approx(4.25)
    assert sbh_coefficient(**gpt3, recompute="full") == pytest.approx(2)
    assert sbh_coefficient(hidden=4096, heads=32, seq_len=4096, tp=4) * 4096 * 4096 * 3 == pytest.approx(
        activation_bytes_per_layer(hidden=4096, heads=32, seq_len=4096, micro_batch=3, tp=4))
