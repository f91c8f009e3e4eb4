"""Training state of mixed-precision Adam (ZeRO Sec. 3.1) and the `why` widget."""

from __future__ import annotations

import math

import pytest

from calc.hardware import DEFAULT_GPU, GPUS
from calc.memory import (
    GRAD_BYTES,
    OPTIMIZER_BYTES,
    STATE_BYTES,
    WEIGHT_BYTES,
    StateBytes,
    training_state,
    training_state_bytes,
)
from calc.models import MODELS, param_count

PSI_7B = param_count(MODELS["llama2-7b"])


def test_mixed_precision_adam_needs_16_bytes_per_parameter() -> None:
    """ZeRO Sec. 3.1: 2Ψ fp16 weights + 2Ψ fp16 gradients + KΨ optimizer, K = 12."""
    assert (WEIGHT_BYTES, GRAD_BYTES, OPTIMIZER_BYTES, STATE_BYTES) == (2, 2, 12, 16)


def test_llama2_7b_state_is_107_8_gb() -> None:
    """Seed 000, step 1 (`why.state_bytes`): 16 × 6.74e9 = 107.84e9 bytes."""
    assert training_state_bytes(PSI_7B) == pytest.approx(107.84e9, rel=1e-3)


def test_llama2_7b_state_breakdown() -> None:
    """`why.weights_bytes`, `grads_bytes`, `optimizer_bytes`: 13.5, 13.5, 80.9 GB."""
    s = training_state(PSI_7B)
    assert isinstance(s, StateBytes)
    assert s.weights == pytest.approx(13.48e9, rel=1e-3)
    assert s.grads == s.weights
    assert s.optimizer == pytest.approx(80.86e9, rel=1e-3)
    assert s.total == training_state_bytes(PSI_7B)


def test_llama2_7b_state_is_1_35_times_an_80_gb_gpu() -> None:
    """Seed 000 (`why.state_over_gpu`): 107.8 GB / 80 GB = 1.348; two GPUs at least."""
    gpu = GPUS[DEFAULT_GPU]
    ratio = training_state_bytes(PSI_7B) / gpu.memory_bytes
    assert ratio == pytest.approx(1.348, rel=1e-3)
    assert math.ceil(ratio) == 2


def test_zero_parameters_need_zero_bytes() -> None:
    assert training_state_bytes(0) == 0.0


def test_optimizer_bytes_is_k() -> None:
    """K = 12 by default (ZeRO Sec. 3.1: KΨ); another K, here 6, gives (2 + 2 + K)Ψ."""
    assert training_state(PSI_7B, optimizer_bytes=OPTIMIZER_BYTES) == training_state(PSI_7B)
    assert training_state_bytes(PSI_7B, optimizer_bytes=6) == pytest.approx(10 * PSI_7B)
    assert training_state(PSI_7B, optimizer_bytes=6).optimizer == pytest.approx(6 * PSI_7B)
    with pytest.raises(ValueError, match="^optimizer_bytes must be"):
        training_state_bytes(PSI_7B, optimizer_bytes=100)


def test_4_bit_weights_of_llama2_7b_take_3_4_gb() -> None:
    """`why.weights_int4_bytes`: QLoRA's 4-bit base weights, 0.5 bytes per parameter;
    16-bit weights are the 13.5 GB of the state breakdown."""
    from calc.memory import weight_bytes

    assert weight_bytes(PSI_7B, 4) == pytest.approx(3.369e9, rel=1e-3)
    assert weight_bytes(PSI_7B) == training_state(PSI_7B).weights
