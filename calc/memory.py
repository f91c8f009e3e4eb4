"""Training state bytes of mixed-precision Adam, and the bytes of one activation.

Rajbhandari et al. 2019, "ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models", Sec. 3.1: with Ψ parameters, mixed-precision Adam holds
2Ψ bytes of fp16 parameters, 2Ψ bytes of fp16 gradients and KΨ bytes of optimizer
state (fp32 parameters, momentum and variance: 4 + 4 + 4), K = 12; 16Ψ in total.
Activations, buffers and fragmentation are not included. K is the keyword argument
``optimizer_bytes`` of every function that counts training state (here and in
``zero``, ``data_parallel``, ``tensor``, ``pipeline``, ``parallel3d``, ``planner``), so
another optimizer can be costed; it defaults to ``OPTIMIZER_BYTES`` = 12.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._check import MAX_OPTIMIZER_BYTES, MAX_PARAMS, check_real

__all__ = [
    "ACTIVATION_BYTES",
    "GRAD_BYTES",
    "OPTIMIZER_BYTES",
    "STATE_BYTES",
    "StateBytes",
    "WEIGHT_BYTES",
    "training_state",
    "training_state_bytes",
    "weight_bytes",
]

WEIGHT_BYTES = 2  # fp16 parameters, 2 bytes each (ZeRO Sec. 3.1: 2Ψ)
GRAD_BYTES = 2  # fp16 gradients (ZeRO Sec. 3.1: 2Ψ)
OPTIMIZER_BYTES = 12  # K: fp32 parameters + momentum + variance (ZeRO Sec. 3.1: KΨ, K=12)
STATE_BYTES = WEIGHT_BYTES + GRAD_BYTES + OPTIMIZER_BYTES  # 16 (ZeRO Sec. 3.1: 16Ψ)
# fp16/bf16 activations, 2 bytes per element (Korthikanti et al. 2022, Sec. 4 counts
# activations in 16-bit floating point); what tensor parallelism all-reduces and what
# one pipeline stage sends the next.
ACTIVATION_BYTES = 2


@dataclass(frozen=True)
class StateBytes:
    """Bytes of fp16 weights, fp16 gradients and fp32 optimizer state."""

    weights: float
    grads: float
    optimizer: float

    @property
    def total(self) -> float:
        """weights + grads + optimizer."""
        return self.weights + self.grads + self.optimizer


def training_state(params: float, *, optimizer_bytes: float = OPTIMIZER_BYTES) -> StateBytes:
    """State of Ψ = ``params`` parameters: (2Ψ, 2Ψ, KΨ) bytes, K = ``optimizer_bytes``
    (ZeRO Sec. 3.1; K = 12 gives (2Ψ, 2Ψ, 12Ψ))."""
    p = check_real("params", params, 0, MAX_PARAMS)
    k = check_real("optimizer_bytes", optimizer_bytes, 0, MAX_OPTIMIZER_BYTES)
    return StateBytes(weights=WEIGHT_BYTES * p, grads=GRAD_BYTES * p, optimizer=k * p)


def training_state_bytes(params: float, *, optimizer_bytes: float = OPTIMIZER_BYTES) -> float:
    """(2 + 2 + K)Ψ bytes, K = ``optimizer_bytes`` (ZeRO Sec. 3.1: 16Ψ with K = 12).
    Llama 2 7B: 107.8e9 bytes."""
    p = check_real("params", params, 0, MAX_PARAMS)
    k = check_real("optimizer_bytes", optimizer_bytes, 0, MAX_OPTIMIZER_BYTES)
    return (WEIGHT_BYTES + GRAD_BYTES + k) * p


def weight_bytes(params: float, bits: float = 16) -> float:
    """Bytes of the weights alone at ``bits`` per parameter: Ψ·bits/8. 16 bits (fp16/
    bf16) is 2Ψ (ZeRO Sec. 3.1); 4 bits is 0.5Ψ, the NF4 base weights of QLoRA
    (Dettmers et al. 2023, Sec. 3; quantization constants, ~0.127 extra bits per
    parameter with double quantization, not counted). Llama 2 7B at 4 bits: 3.37e9."""
    p = check_real("params", params, 0, MAX_PARAMS)
    b = check_real("bits", bits, 0, 64, lo_inclusive=False)
    return p * b / 8.0
