"""3D parallelism (Narayanan et al. 2021): seed 000 step 6, the `parallel3d` widget."""

from __future__ import annotations

import pytest

from calc import parallel3d as p3
from calc.models import MODELS, param_count

PSI_7B = param_count(MODELS["llama2-7b"])
DAY = 86_400.0


def test_8_tp_by_4_pp_by_8_dp_is_256_gpus_on_32_nodes() -> None:
    """`parallel3d.gpus` = 256, `nodes` = 32 (8 GPUs per node)."""
    assert p3.gpus(tp=8, pp=4, dp=8) == 256
    assert p3.nodes(tp=8, pp=4, dp=8) == 32
    assert p3.nodes(tp=1, pp=1, dp=9) == 2


def test_each_gpu_holds_1_16_gb_with_zero1() -> None:
    """`parallel3d.state_per_gpu_bytes`: (4 + 12/8)·Ψ/(8·4) = 1.158e9."""
    assert p3.state_per_gpu_bytes(params=PSI_7B, tp=8, pp=4, dp=8, zero_stage=1) == pytest.approx(1.158e9, rel=1e-3)


def test_without_zero_each_gpu_holds_16_psi_over_tp_pp() -> None:
    assert p3.state_per_gpu_bytes(params=PSI_7B, tp=8, pp=4, dp=8) == pytest.approx(16 * PSI_7B / 32)
    assert p3.state_per_gpu_bytes(params=PSI_7B, tp=1, pp=1, dp=8, zero_stage=3) == pytest.approx(16 * PSI_7B / 8)
    assert p3.state_per_gpu_bytes(params=PSI_7B, tp=8, pp=4, dp=8, optimizer_bytes=4) == pytest.approx(
        8 * PSI_7B / 32)


def test_128_microbatches_leave_a_2_3_percent_bubble() -> None:
    """`parallel3d.bubble`: m = 1,024 / 8 = 128, 3/131 = 0.0229."""
    assert p3.microbatches_per_pipeline(dp=8) == 128
    assert p3.bubble_fraction_of_time(pp=4, dp=8) == pytest.approx(0.0229, abs=5e-5)


def test_the_bubble_is_the_pipeline_modules_with_m_from_the_batch() -> None:
    """The same name means the same bubble in both modules: (p−1)/(m+p−1)."""
    from calc.pipeline import bubble_fraction_of_time

    assert p3.bubble_fraction_of_time(pp=4, dp=8) == bubble_fraction_of_time(pp=4, microbatches=128)


def test_2t_tokens_take_25_days() -> None:
    """`parallel3d.train_time`: 6ND / (256 × 150e12) / (1 − 0.0229) = 2.156e6 s,
    24.9 days (bubble included, communication not)."""
    t = p3.train_seconds(params=PSI_7B, tokens=2e12, tp=8, pp=4, dp=8)
    assert t == pytest.approx(2.156e6, rel=1e-3)
    assert t / DAY == pytest.approx(24.9, abs=0.05)


def test_more_data_parallelism_means_a_bigger_bubble() -> None:
    """Seed 000: at a fixed global batch, more replicas leave fewer micro-batches per
    pipeline, so the bubble grows with the cluster."""
    bubbles = [p3.bubble_fraction_of_time(pp=4, dp=d) for d in (1, 2, 4, 8, 16, 32, 64)]
    assert bubbles == sorted(bubbles) and bubbles[0] < bubbles[-1]
    assert p3.bubble_fraction_of_time(pp=1, dp=64) == 0.0


def test_the_product_is_capped() -> None:
    with pytest.raises(ValueError, match="tp × pp × dp must be at most 65536"):
        p3.gpus(tp=64, pp=64, dp=64)
    with pytest.raises(ValueError, match=r"dp × micro_batch must be at most global_batch \(1024\)"):
        p3.microbatches_per_pipeline(dp=2048)


def test_a_model_copy_spans_t_times_p_gpus() -> None:
    """`parallel3d.model_parallel`: 8 × 4 = 32, and t·p·d = G."""
    assert p3.model_parallel_size(tp=8, pp=4) == 32
    assert p3.model_parallel_size(tp=8, pp=4) * 8 == p3.gpus(tp=8, pp=4, dp=8)


def test_the_bubble_stretches_the_ideal_time() -> None:
    """`parallel3d.ideal_train_time` · `bubble_stretch` = `train_time`; the stretch is
    (m + p − 1)/m, 67/64 for p = 4 and m = 1,024/16 = 64 (Narayanan et al. 2021, Sec. 2.2.1)."""
    assert p3.bubble_stretch(pp=4, dp=16) == pytest.approx(67 / 64)
    assert p3.bubble_stretch(pp=1, dp=64) == 1.0
    ideal = p3.ideal_train_seconds(params=PSI_7B, tokens=2e12, tp=8, pp=4, dp=8)
    assert ideal == pytest.approx(6 * PSI_7B * 2e12 / (256 * 150e12))
    assert ideal * p3.bubble_stretch(pp=4, dp=8) == pytest.approx(
        p3.train_seconds(params=PSI_7B, tokens=2e12, tp=8, pp=4, dp=8))
