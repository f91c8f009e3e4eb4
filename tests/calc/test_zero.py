"""ZeRO (Rajbhandari et al. 2019): seed 000 step 3, Figure 1, Table 1, Sec. 7."""

from __future__ import annotations

import pytest

from calc import zero
from calc.data_parallel import sent_per_gpu_bytes as dp_sent
from calc.memory import training_state_bytes
from calc.models import MODELS, param_count

PSI_7B = param_count(MODELS["llama2-7b"])


def test_zero1_on_8_gpus_holds_37_1_gb() -> None:
    """`zero.state_per_gpu_bytes` at the default (N = 8, stage 1): (4 + 12/8)Ψ = 37.07e9,
    `reduction` 16/5.5 = 2.909, `fits` in 80 GB."""
    assert zero.state_per_gpu_bytes(params=PSI_7B, dp=8, zero_stage=1) == pytest.approx(37.07e9, rel=1e-3)
    assert zero.reduction(dp=8, zero_stage=1) == pytest.approx(2.909, rel=1e-3)
    assert zero.fits(params=PSI_7B, dp=8, zero_stage=1) is True


def test_zero1_breakdown_keeps_27_gb_unsharded() -> None:
    """Seed 000: GPU 0 keeps 13.5 + 13.5 GB whole and 80.9 / 8 = 10.1 GB of Adam."""
    s = zero.state_per_gpu(params=PSI_7B, dp=8, zero_stage=1)
    assert s.weights + s.grads == pytest.approx(26.95e9, rel=1e-3)
    assert s.optimizer == pytest.approx(10.11e9, rel=1e-3)


def test_zero1_and_2_send_as_much_as_plain_data_parallelism() -> None:
    """`zero.sent_per_gpu_bytes` = 23.59e9 for stages 0-2 (Sec. 7.2.1: reduce-scatter +
    all-gather = all-reduce)."""
    for stage in (0, 1, 2):
        assert zero.sent_per_gpu_bytes(params=PSI_7B, dp=8, zero_stage=stage) == pytest.approx(23.59e9, rel=1e-3)
        assert zero.sent_per_gpu_bytes(params=PSI_7B, dp=8, zero_stage=stage) == pytest.approx(dp_sent(PSI_7B, 8))


@pytest.mark.parametrize("n", [2, 8, 64, 1024])
def test_zero3_communicates_1_5_times_plain_data_parallelism(n: int) -> None:
    """Sec. 7.2.2: stage 3 moves 3Ψ instead of 2Ψ, 1.5× the baseline."""
    stage3 = zero.sent_per_gpu_bytes(params=PSI_7B, dp=n, zero_stage=3)
    assert stage3 / zero.sent_per_gpu_bytes(params=PSI_7B, dp=n, zero_stage=0) == pytest.approx(1.5)
    assert zero.comm_over_dp(3) == 1.5 and zero.comm_over_dp(1) == 1.0


def test_figure1_7_5b_model_on_64_gpus() -> None:
    """Figure 1 (Ψ = 7.5B, N_d = 64, K = 12): 120 GB, 31.4 GB, 16.6 GB, 1.88 GB; the
    seed's "120 GB to 1.9 GB" and WIDGETS.md's exact 1.875 GB for stage 3."""
    gb = [zero.state_per_gpu_bytes(params=7.5e9, dp=64, zero_stage=s) / 1e9 for s in zero.ZERO_STAGES]
    assert gb[0] == pytest.approx(120)
    assert gb[1] == pytest.approx(31.4, abs=0.05)
    assert gb[2] == pytest.approx(16.6, abs=0.05)
    assert gb[3] == pytest.approx(1.875)
    assert zero.FIGURE1_PARAMS == 7.5e9


def test_bytes_per_param_is_the_coefficient_of_psi() -> None:
    """Fig. 1's formulas at N_d = 8, K = 12: (4 + 12/8) = 5.5, (2 + 14/8) = 3.75, 16/8 = 2;
    16 without ZeRO; and times Ψ it is the per-GPU state."""
    assert [zero.bytes_per_param(dp=8, zero_stage=s) for s in zero.ZERO_STAGES] == [16, 5.5, 3.75, 2]
    assert zero.bytes_per_param(dp=64, zero_stage=1) * 7.5e9 == pytest.approx(
        zero.state_per_gpu_bytes(params=7.5e9, dp=64, zero_stage=1))
    assert zero.bytes_per_param(dp=8, zero_stage=1, grad_bytes=4) == pytest.approx(7.5)


# ZeRO Table 1: per-device memory (GB) for Ψ, by DP degree; columns baseline, P_os,
# P_os+g, P_os+g+p.
TABLE_1 = {
    7.5e9: {
        1: (120, 120, 120, 120),
        4: (120, 52.5, 41.3, 30),
        16: (120, 35.6, 21.6, 7.5),
        64: (120, 31.4, 16.6, 1.88),
        256: (120, 30.4, 15.4, 0.47),
        1024: (120, 30.1, 15.1, 0.12),
    },
    128e9: {
        1: (2048, 2048, 2048, 2048),
        4: (2048, 896, 704, 512),
        16: (2048, 608, 368, 128),
        64: (2048, 536, 284, 32),
        256: (2048, 518, 263, 8),
        1024: (2048, 513, 257, 2),
    },
    1e12: {
        1: (16000, 16000, 16000, 16000),
        4: (16000, 7000, 5500, 4000),
        16: (16000, 4750, 2875, 1000),
        64: (16000, 4187, 2218, 250),
        256: (16000, 4046, 2054, 62.5),
        1024: (16000, 4011, 2013, 15.6),
    },
}
TABLE_1_CELLS = [
    (psi, n, stage, row[stage]) for psi, rows in TABLE_1.items() for n, row in rows.items() for stage in zero.ZERO_STAGES
]


@pytest.mark.parametrize(
    ("psi", "n", "stage", "published_gb"),
    TABLE_1_CELLS,
    ids=[f"{p / 1e9:g}B-dp{n}-stage{s}" for p, n, s, _ in TABLE_1_CELLS],
)
def test_table1_per_device_memory(psi: float, n: int, stage: int, published_gb: float) -> None:
    """ZeRO Table 1, every cell (7.5B, 128B, 1T at DP 1, 4, 16, 64, 256, 1024), to the
    paper's rounding: 1%, or half a unit of the last printed digit (0.1172 → 0.12);
    the paper truncates some cells, e.g. 4187.5 → 4187."""
    decimals = len(repr(float(published_gb)).split(".")[1].rstrip("0"))
    tolerance = max(0.01 * published_gb, 0.5 * 10.0**-decimals)
    assert zero.state_per_gpu_bytes(params=psi, dp=n, zero_stage=stage) / 1e9 == pytest.approx(published_gb, abs=tolerance)


def test_memory_never_grows_with_stage_or_gpus() -> None:
    """Invariant: stage 3 ≤ stage 2 ≤ stage 1 ≤ stage 0, and more GPUs never cost
    memory, for N = 1..1024."""
    for psi in (1e9, PSI_7B, 1e12):
        previous = [float("inf")] * 4
        for n in range(1, 1025):
            mem = [zero.state_per_gpu_bytes(params=psi, dp=n, zero_stage=s) for s in zero.ZERO_STAGES]
            assert mem[3] <= mem[2] <= mem[1] <= mem[0] == training_state_bytes(psi)
            assert all(m <= p for m, p in zip(mem, previous))
            previous = mem


def test_stage_limits_are_4x_8x_and_n() -> None:
    """Fig. 1 caption: memory reduction 4×, 8×, N_d× as N_d grows."""
    assert zero.reduction(dp=65_536, zero_stage=1) == pytest.approx(4, rel=1e-3)
    assert zero.reduction(dp=65_536, zero_stage=2) == pytest.approx(8, rel=1e-3)
    assert zero.reduction(dp=64, zero_stage=3) == 64


def test_seven_b_fits_80_gb_only_from_stage_1_on_8_gpus() -> None:
    assert [zero.fits(params=PSI_7B, dp=8, zero_stage=s) for s in zero.ZERO_STAGES] == [False, True, True, True]
    assert zero.fits(params=PSI_7B, dp=1, zero_stage=3) is False


def test_optimizer_bytes_is_k() -> None:
    """K = 12 by default (ZeRO Sec. 3.1); another K changes only the optimizer term:
    stage 1 holds (4 + K/N_d)Ψ, and the reduction is (4 + K)/(4 + K/N_d)."""
    default = zero.state_per_gpu(params=PSI_7B, dp=8, zero_stage=1)
    assert zero.state_per_gpu(params=PSI_7B, dp=8, zero_stage=1, optimizer_bytes=12) == default
    k6 = zero.state_per_gpu(params=PSI_7B, dp=8, zero_stage=1, optimizer_bytes=6)
    assert (k6.weights, k6.grads) == (default.weights, default.grads)
    assert k6.optimizer == pytest.approx(6 * PSI_7B / 8)
    assert zero.reduction(dp=8, zero_stage=1, optimizer_bytes=6) == pytest.approx(10 / 4.75)
    with pytest.raises(ValueError, match="^optimizer_bytes must be a number from 0 to 64"):
        zero.state_per_gpu_bytes(params=PSI_7B, dp=8, zero_stage=1, optimizer_bytes=-1)


@pytest.mark.parametrize("dp", [1, 8, 64])
def test_megatron_distributed_optimizer_is_zero_1_with_fp32_gradients(dp: int) -> None:
    """Megatron-Core's distributed optimizer (docs/source/api-guide/dist_optimizer.md,
    "float16 param, fp32 grads": 18 bytes, 6 + 12/d distributed) is stage 1 of ZeRO's
    count with a 4-byte gradient buffer; the recipe table of calc.precision agrees."""
    from calc.precision import state_bytes_per_param

    assert zero.state_per_gpu_bytes(params=1.0, dp=dp, zero_stage=0, grad_bytes=4) == 18
    distributed = zero.state_per_gpu_bytes(params=1.0, dp=dp, zero_stage=1, grad_bytes=4)
    assert distributed == pytest.approx(6 + 12 / dp)
    assert distributed == pytest.approx(state_bytes_per_param("megatron-distopt", dp=dp))
    with pytest.raises(ValueError, match="grad_bytes"):
        zero.state_per_gpu(params=1.0, dp=dp, zero_stage=1, grad_bytes=-1)
