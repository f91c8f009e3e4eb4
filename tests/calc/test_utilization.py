"""MFU and HFU as PaLM defines them, Megatron-LM's achieved FLOP/s, and what 6ND leaves
out, each against the published figure."""

from __future__ import annotations

import math

import pytest

from calc.compute import training_flops
from calc.models import MODELS, megatron_flops_per_iteration, param_count
from calc.utilization import (
    LLAMA2_GPU_HOURS,
    MEGATRON_1T,
    PALM_540B,
    flops_per_gpu_from_gpu_hours,
    hardware_flops_per_token,
    mfu,
    model_flops_per_token,
    palm_flops_per_token,
    weak_scaling_efficiency,
)


def _palm_per_token() -> float:
    r = PALM_540B
    return palm_flops_per_token(params=r.params, layers=r.layers, heads=r.heads, head_dim=r.head_dim,
                                seq_len=r.seq_len)


def test_palm_540b_mfu_is_46_2_percent() -> None:
    """PaLM Table 3: 238.3K tokens/s on 6,144 TPU v4 chips at 275 TFLOP/s is 46.2% MFU
    with Appendix B's 6N + 12LHQT."""
    assert _palm_per_token() == pytest.approx(3.278e12, rel=1e-3)
    r = PALM_540B
    value = mfu(tokens_per_s=r.tokens_per_s, flops_per_token=_palm_per_token(), gpus=r.gpus,
                peak_flops_per_s=r.peak_flops_per_s)
    assert round(value, 3) == r.reported_mfu
    # 6N alone would give 45.7%: the attention term is 1.1% of PaLM's FLOP at T = 2048
    six_n = mfu(tokens_per_s=r.tokens_per_s, flops_per_token=6 * r.params, gpus=r.gpus,
                peak_flops_per_s=r.peak_flops_per_s)
    assert round(six_n, 3) == 0.457
    assert r.reported_hfu > r.reported_mfu


def test_megatron_1t_reports_hardware_flops() -> None:
    """Narayanan et al. 2021 Table 1: 163 teraFLOP/s per GPU is 52% of the A100's 312
    and 3,072 GPUs give 502 petaFLOP/s (163 is rounded: 502/3072 = 163.4). The count is
    Eq. 3's, with full recomputation; as MFU the same run is 39%."""
    r = MEGATRON_1T
    assert round(r.flops_per_gpu / r.peak_flops_per_s, 2) == r.reported_hfu
    assert r.flops_per_gpu * r.gpus == pytest.approx(502e15, rel=0.005)
    shape = dict(layers=r.layers, hidden=r.hidden, vocab=r.vocab, seq_len=r.seq_len, global_batch=1)
    model_share = (megatron_flops_per_iteration(**shape, recompute="none")
                   / megatron_flops_per_iteration(**shape, recompute="full"))
    assert model_share == pytest.approx(0.750, abs=5e-4)
    assert round(r.reported_hfu * model_share, 2) == 0.39


def test_model_flops_per_token_is_palms_formula_for_llama() -> None:
    """For Llama 2 7B, 3 × forward_flops per token is PaLM's 6N + 12LHQT with N the
    matmul weights: Ψ less the input embedding (a lookup) and the RMSNorm weights."""
    m = MODELS["llama2-7b"]
    matmul_weights = param_count(m) - m.vocab * m.hidden - (2 * m.layers + 1) * m.hidden
    expected = palm_flops_per_token(params=matmul_weights, layers=m.layers, heads=m.heads,
                                    head_dim=m.head_dim, seq_len=m.seq_len)
    assert model_flops_per_token(m) == pytest.approx(expected, rel=1e-12)
    assert model_flops_per_token(m) == 46_084_915_200
    # what 6Ψ leaves out: attention s/(6h)·(12·L·h²/N) ≈ +16%, less 2% of embedding
    assert model_flops_per_token(m) / (6 * param_count(m)) == pytest.approx(1.140, abs=5e-4)


def test_hfu_adds_what_recomputation_reruns() -> None:
    """HFU ≥ MFU; full recomputation adds a forward of the layers, selective only the
    attention scores (Korthikanti et al. 2022 Sec. 6); for GPT-3 the totals equal
    Megatron's Eq. 3 terms per token."""
    m = MODELS["gpt3-175b"]
    none, sel, full = (hardware_flops_per_token(m, recompute=r) for r in ("none", "selective", "full"))
    assert none == model_flops_per_token(m) < sel < full
    shape = dict(layers=m.layers, hidden=m.hidden, vocab=m.vocab, seq_len=m.seq_len, global_batch=1)
    for mode, value in (("none", none), ("selective", sel), ("full", full)):
        assert value == pytest.approx(megatron_flops_per_iteration(**shape, recompute=mode) / m.seq_len,
                                      rel=1e-12)


def test_llama2_throughput_from_gpu_hours() -> None:
    """Touvron et al. 2023 Table 2: 184,320 A100 hours for 7B; 6ND over them is
    121.9 TFLOP/s, 39% of the A100's 312 (45% counting the attention scores)."""
    m = MODELS["llama2-7b"]
    six_nd = training_flops(param_count(m), m.train_tokens)
    x = flops_per_gpu_from_gpu_hours(flops=six_nd, gpu_hours=LLAMA2_GPU_HOURS["llama2-7b"])
    assert x == pytest.approx(121.9e12, rel=5e-4)
    assert round(x / 312e12, 2) == 0.39
    with_attention = model_flops_per_token(m) * m.train_tokens
    assert round(flops_per_gpu_from_gpu_hours(flops=with_attention, gpu_hours=184_320) / 312e12, 2) == 0.45
    assert LLAMA2_GPU_HOURS["llama2-70b"] > LLAMA2_GPU_HOURS["llama2-13b"] > LLAMA2_GPU_HOURS["llama2-7b"]


def test_weak_scaling_of_megatron_table_1() -> None:
    """137 teraFLOP/s per GPU for 1.7B on 32 GPUs (44% of peak, 4.4 petaFLOP/s in all),
    163 for 1T on 3,072 (Table 1, first and last rows)."""
    assert round(weak_scaling_efficiency(flops_per_gpu=163e12, base_flops_per_gpu=137e12), 2) == 1.19
    assert round(137e12 / 312e12, 2) == 0.44 and round(137e12 * 32 / 1e15, 1) == 4.4


@pytest.mark.parametrize("call", [
    lambda: mfu(tokens_per_s=-1, flops_per_token=1, gpus=1, peak_flops_per_s=1),
    lambda: mfu(tokens_per_s=1, flops_per_token=1, gpus=0, peak_flops_per_s=1),
    lambda: mfu(tokens_per_s=1, flops_per_token=1, gpus=1, peak_flops_per_s=0),
    lambda: palm_flops_per_token(params=1, layers=0, heads=1, head_dim=1, seq_len=1),
    lambda: flops_per_gpu_from_gpu_hours(flops=1, gpu_hours=0),
    lambda: hardware_flops_per_token(MODELS["llama2-7b"], recompute="some"),
    lambda: weak_scaling_efficiency(flops_per_gpu=1, base_flops_per_gpu=0),
])
def test_bad_arguments_are_named(call) -> None:
    with pytest.raises(ValueError):
        call()


def test_values_are_finite() -> None:
    for m in MODELS.values():
        assert math.isfinite(model_flops_per_token(m)) and model_flops_per_token(m) > 6 * 0.9 * param_count(m)


def test_run_utilization_three_ways() -> None:
    """PaLM counts model FLOP (46.2%), Megatron-LM hardware FLOP (52%, 39% as MFU),
    Llama 2's GPU hours give 39% with 6Ψ and 45% with the attention scores; in every
    run MFU with the attention term ≥ MFU with 6Ψ."""
    from calc.utilization import RUNS, run_utilization

    palm, megatron, llama = (run_utilization(k) for k in ("palm-540b", "megatron-1t", "llama2-7b"))
    assert round(palm.mfu, 3) == 0.462 and palm.counted_utilization == palm.mfu
    assert round(megatron.counted_utilization, 2) == 0.52 and round(megatron.mfu, 2) == 0.39
    assert megatron.counted_flops_per_gpu == pytest.approx(163e12)
    assert round(llama.mfu_6n, 2) == 0.39 and round(llama.mfu, 2) == 0.45
    assert round(llama.tokens_per_gpu_s) == 3014
    for key in RUNS:
        r = run_utilization(key)
        assert r.mfu >= r.mfu_6n > 0
        assert r.counted_flops_per_gpu == pytest.approx(r.counted_utilization * r.peak_flops_per_s)
    with pytest.raises(ValueError, match="run"):
        run_utilization("gpt-4")
