"""The 6ND rule (Kaplan et al. 2020, Sec. 2.1) and the `why` widget's times."""

from __future__ import annotations

import pytest

from calc.compute import FLOPS_PER_PARAM_PER_TOKEN, training_flops, training_seconds
from calc.hardware import DEFAULT_GPU, GPUS
from calc.models import MODELS, param_count

PSI_7B = param_count(MODELS["llama2-7b"])
F = GPUS[DEFAULT_GPU].flops_per_s
DAY = 86_400.0
YEAR = 365.25 * DAY


def test_training_costs_six_flop_per_parameter_per_token() -> None:
    """Kaplan et al. 2020 Sec. 2.1: 2N forward + 4N backward per token."""
    assert FLOPS_PER_PARAM_PER_TOKEN == 6
    assert training_flops(10, 100) == 6000


def test_llama2_7b_on_2t_tokens_costs_8_1e22_flop() -> None:
    """Seed 000 (`why.flops`): 6 × 6.74e9 × 2e12 = 8.088e22 FLOP."""
    assert training_flops(PSI_7B, 2e12) == pytest.approx(8.088e22, rel=1e-3)


def test_one_gpu_would_need_17_years() -> None:
    """Seed 000 (`why.time_1`): 8.09e22 / 150e12 = 5.392e8 s = 17.1 years."""
    t = training_seconds(flops=training_flops(PSI_7B, 2e12), gpus=1, flops_per_gpu=F)
    assert t == pytest.approx(5.392e8, rel=1e-3)
    assert t / YEAR == pytest.approx(17.1, abs=0.05)


def test_64_gpus_need_97_5_days() -> None:
    """Seed 000 (`why.time_64`): 8.425e6 s; the seed's "98 days" is 97.5 days with the
    exact parameter count (WIDGETS.md)."""
    t = training_seconds(flops=training_flops(PSI_7B, 2e12), gpus=64, flops_per_gpu=F)
    assert t == pytest.approx(8.425e6, rel=1e-3)
    assert t / DAY == pytest.approx(97.5, abs=0.05)


def test_1024_gpus_need_6_days() -> None:
    """Seed 000 (`why.time_1024`): 5.266e5 s = 6.1 days."""
    t = training_seconds(flops=training_flops(PSI_7B, 2e12), gpus=1024, flops_per_gpu=F)
    assert t == pytest.approx(5.266e5, rel=1e-3)
    assert t / DAY == pytest.approx(6.1, abs=0.05)


def test_perfect_scaling_divides_time_by_gpu_count() -> None:
    eight = training_seconds(flops=1e20, gpus=8, flops_per_gpu=1e14)
    assert eight * 8 == pytest.approx(training_seconds(flops=1e20, gpus=1, flops_per_gpu=1e14))
