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


def test_the_overlap_threshold_is_where_the_all_reduce_equals_the_last_backward() -> None:
    """At b·s = (d−1)/d · X/β the ring all-reduce takes exactly as long as the backward
    pass of that micro-batch (4 of 6 FLOP per parameter per token); Ψ cancels."""
    from calc.data_parallel import overlap_min_micro_batch, overlap_min_tokens
    from calc.hardware import MACHINES

    for machine in MACHINES.values():
        x, beta = machine.gpu.flops_per_s, machine.network_bytes_per_s
        for d in (2, 8, 64):
            tokens = overlap_min_tokens(dp=d, flops_per_gpu=x, bytes_per_s=beta)
            assert tokens == pytest.approx((d - 1) / d * x / beta)
            for params in (7e9, 70e9):
                comm = dp.comm_seconds(params=params, dp=d, bytes_per_s=beta)
                backward = 4 * params * tokens / x
                assert comm == pytest.approx(backward)
            b = overlap_min_micro_batch(dp=d, seq_len=4096, flops_per_gpu=x, bytes_per_s=beta)
            assert (b - 1) * 4096 <= tokens < b * 4096
    assert overlap_min_tokens(dp=1, flops_per_gpu=150e12, bytes_per_s=50e9) == 0
    assert overlap_min_micro_batch(dp=1, seq_len=4096, flops_per_gpu=150e12, bytes_per_s=50e9) == 1


def test_one_4k_sequence_hides_the_all_reduce_only_on_the_seeds_machine() -> None:
    """The data-parallel chapter's conclusion, per preset (d = 8, s = 4,096, peak X):
    the seed's mixed machine needs b = 1; a DGX A100 3, an H100 or H200 5, a B200 10."""
    from calc.data_parallel import overlap_min_micro_batch
    from calc.hardware import MACHINES

    needed = {k: overlap_min_micro_batch(dp=8, seq_len=4096, flops_per_gpu=m.gpu.flops_per_s,
                                         bytes_per_s=m.network_bytes_per_s) for k, m in MACHINES.items()}
    assert needed == {"book": 1, "dgx-a100": 3, "dgx-h100": 5, "dgx-h200": 5, "dgx-b200": 10}


def test_the_central_gpu_carries_n_minus_1_gradients_the_ring_under_two() -> None:
    """Through one GPU (reduce, then broadcast), (N_d − 1)·S each way; the ring sends
    2(N_d−1)/N_d·S per GPU (Patarasuk and Yuan 2009), so the central GPU carries N_d/2
    times a ring GPU's."""
    params = param_count(MODELS["llama2-7b"])
    s = dp.gradient_bytes(params)
    assert dp.central_gpu_bytes(params, 1) == 0
    assert dp.central_gpu_bytes(params, 4) == pytest.approx(3 * s)
    for n in (2, 4, 64):
        assert dp.central_gpu_bytes(params, n) / dp.sent_per_gpu_bytes(params, n) == pytest.approx(n / 2)
