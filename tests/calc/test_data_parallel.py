"""Data parallelism: seed 000 step 2, the `dp` widget at its defaults."""

from __future__ import annotations

import pytest

from calc import data_parallel as dp
from calc.models import MODELS, param_count

PSI_7B = param_count(MODELS["llama2-7b"])


def test_every_replica_holds_the_full_107_8_gb() -> None:
    """`dp.state_per_gpu_bytes` = 107.84e9 at any N (no memory saved)."""
    assert dp.state_per_gpu_bytes(PSI_7B) == pytest.approx(107.84e9, rel=1e-3)


def test_eight_gpus_take_128_sequences_each() -> None:
    """`dp.seqs_per_gpu`: 1,024 sequences / 8 GPUs = 128."""
    assert dp.seqs_per_gpu(8) == 128
    assert dp.tokens_per_step() == 1024 * 4096


def test_eight_gpus_compute_a_step_in_141_seconds() -> None:
    """`dp.compute_time`: 6 × 6.74e9 × 4,194,304 / 8 / 150e12 = 141.3 s (2.4 min)."""
    assert dp.compute_seconds(params=PSI_7B, dp=8) == pytest.approx(141.3, rel=1e-3)


def test_ring_all_reduce_sends_23_6_gb_per_gpu() -> None:
    """`dp.sent_per_gpu_bytes`: 2(N−1)/N × 2Ψ = 1.75 × 13.48e9 = 23.59e9."""
    assert dp.sent_per_gpu_bytes(PSI_7B, 8) == pytest.approx(23.59e9, rel=1e-3)
    assert dp.gradient_bytes(PSI_7B) == pytest.approx(13.48e9, rel=1e-3)


def test_all_reduce_takes_0_47_s_at_50_gb_per_s() -> None:
    """`dp.comm_time`: 23.59e9 / 50e9 = 0.4718 s."""
    assert dp.comm_seconds(params=PSI_7B, dp=8) == pytest.approx(0.4718, rel=1e-3)


def test_sent_bytes_barely_grow_with_n_and_stay_below_twice_the_gradient() -> None:
    """Seed 000: "nearly does not grow with N, so it scales easily"."""
    grad = dp.gradient_bytes(PSI_7B)
    sent = [dp.sent_per_gpu_bytes(PSI_7B, n) for n in range(1, 65)]
    assert sent[0] == 0.0
    assert all(a < b for a, b in zip(sent, sent[1:]))
    assert all(s < 2 * grad for s in sent)
