"""ZeRO-Offload and ZeRO-Infinity: moving training state off the GPU, and DeepSpeed's own
estimators of the memory that needs.

Two views of the same question, kept apart on purpose:

* **The book's clean model** (``offload_state_per_gpu``, ``pcie_bytes_per_gpu``): the
  16Ψ of ``calc.memory`` split between GPU and CPU (or NVMe) memory, no buffers.
  ZeRO-Offload (Ren et al. 2021, "ZeRO-Offload: Democratizing Billion-Scale Model
  Training", USENIX ATC, Sec. 4.1 and Fig. 2-3): the fp16 parameters (2Ψ) stay on the
  GPU, which runs forward and backward; the fp16 gradients (2Ψ) stream to the CPU, which
  holds the fp32 optimizer state (master weights, momentum, variance: 12Ψ) and runs the
  Adam update, then sends the new fp16 parameters back: 2Ψ on the GPU, 14Ψ on the CPU,
  4Ψ over PCIe per step, the only split that moves no more than that and saves 8×
  (Sec. 4.1). With N_d GPUs each one offloads only its ZeRO-2 partition (Sec. 4.2).
  ZeRO-Infinity (Rajbhandari et al. 2021, "ZeRO-Infinity: Breaking the GPU Memory Wall
  for Extreme Scale Deep Learning", SC21, Sec. 5-6) offloads the ZeRO-3 partition of
  every model state, parameters included, to CPU memory or NVMe; each GPU fetches its
  own partition over its own PCIe link and the all-gather runs over NVLink
  (bandwidth-centric partitioning, Sec. 6.1).
* **DeepSpeed's estimators** (``zero2_estimate``, ``zero3_estimate``), transcribed from
  ``deepspeed/runtime/zero/stage_1_and_2.py`` (``estimate_zero2_model_states_mem_needs``)
  and ``deepspeed/runtime/zero/stage3.py`` (``estimate_zero3_model_states_mem_needs``)
  at ``DEEPSPEED_COMMIT``, with the largest-layer term and the buffer factor; the
  ``*_all_cold`` functions print the rows of ``zero2_table``/``zero3_table`` in GiB
  (2^30 bytes, printed "GB", ``f"{cpu_mem/2**30:7.2f}GB"``), as
  ``docs/code-docs/source/memory.rst`` shows them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._check import MAX_BYTES, MAX_GPUS, MAX_OPTIMIZER_BYTES, MAX_PARAMS, check_choice, check_int, check_real
from .memory import GRAD_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES
from .models import ModelConfig
from .zero import ZERO_STAGES, state_per_gpu

__all__ = [
    "ADDITIONAL_BUFFER_FACTOR",
    "DEEPSPEED_COMMIT",
    "DEEPSPEED_FIX_COMMIT",
    "Estimate",
    "EstimateRow",
    "GIB",
    "OFFLOADS",
    "Placement",
    "deepspeed_layout",
    "gib",
    "largest_layer_params",
    "offload_available",
    "offload_state_per_gpu",
    "pcie_bytes_per_gpu",
    "zero2_estimate",
    "zero2_table",
    "zero3_estimate",
    "zero3_table",
]

# deepspeedai/DeepSpeed, the revision both estimators were read at (2026-08-22).
DEEPSPEED_COMMIT = "edaa7221267243c7be7fb49c5d5f5c4fb97b4641"
# The commit that changed ZeRO-2's GPU term from 4Ψ + 16Ψ/n to 2Ψ + 18Ψ/n
# ("estimate_zero2_model_states_mem_needs: fixing memory estiamtion (#5099)", 2024-06-04);
# memory.rst's printed ZeRO-2 table and its "GPU RAM" text still show the older formula.
DEEPSPEED_FIX_COMMIT = "f4cb866c2eba60a72d79c3741d12d098fe4e45b8"
ADDITIONAL_BUFFER_FACTOR = 1.5  # both estimators' default ``additional_buffer_factor``
GIB = 2**30  # DeepSpeed prints bytes / 2**30 and calls it "GB"
_MAX_BUFFER_FACTOR = 100.0
_MAX_NODES = MAX_GPUS

# What leaves the GPU: nothing; the optimizer (ZeRO-Offload: DeepSpeed's
# "offload_optimizer": {"device": "cpu"}); the optimizer and the parameters
# (ZeRO-Infinity to CPU: "offload_param" as well, ZeRO-3 only).
OFFLOADS = ("none", "optimizer", "optimizer_params")


def gib(size_bytes: float) -> float:
    """Bytes in GiB, 2^30 bytes, the unit DeepSpeed's estimators print as "GB"."""
    return check_real("size_bytes", size_bytes, 0, MAX_BYTES) / GIB


# -- DeepSpeed's estimators -------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """One estimate: ``cpu_bytes`` per node (CPU RAM of one machine), ``gpu_bytes`` per
    GPU, as DeepSpeed returns them (ints)."""

    cpu_bytes: int
    gpu_bytes: int

    @property
    def cpu_gib(self) -> float:
        return self.cpu_bytes / GIB

    @property
    def gpu_gib(self) -> float:
        return self.gpu_bytes / GIB


@dataclass(frozen=True)
class EstimateRow:
    """A printed row of ``*_all_cold``: the options string as DeepSpeed formats it."""

    options: str
    estimate: Estimate

    def printed(self) -> str:
        """The row exactly as DeepSpeed prints it: ``f" {cpu:7.2f}GB | {gpu:6.2f}GB | {options}"``."""
        return f" {self.estimate.cpu_gib:7.2f}GB | {self.estimate.gpu_gib:6.2f}GB | {self.options}"


def _setup(params: float, gpus_per_node: int, nodes: int, buffer_factor: float) -> tuple[float, int, int, float]:
    return (
        check_real("params", params, 0, MAX_PARAMS),
        check_int("gpus_per_node", gpus_per_node, 1, MAX_GPUS),
        check_int("nodes", nodes, 1, _MAX_NODES),
        check_real("buffer_factor", buffer_factor, 0, _MAX_BUFFER_FACTOR),
    )


def _flag(name: str, value: bool) -> bool:
    return check_choice(name, value, (True, False))


def zero2_estimate(
    *,
    params: float,
    gpus_per_node: int = 1,
    nodes: int = 1,
    offload_optimizer: bool = True,
    buffer_factor: float = ADDITIONAL_BUFFER_FACTOR,
    before_fix: bool = False,
) -> Estimate:
    """``estimate_zero2_model_states_mem_needs`` (deepspeed/runtime/zero/stage_1_and_2.py
    at ``DEEPSPEED_COMMIT``), ZeRO-1 and ZeRO-2 alike; Ψ = ``params``, n = total GPUs
    = ``gpus_per_node`` · ``nodes``, b = ``buffer_factor``:

        offload_optimizer=cpu:   GPU 2Ψ                 CPU Ψ · max(4n, 16) · b
        offload_optimizer=none:  GPU 2Ψ + int(18Ψ/n)    CPU Ψ · 4 · gpus_per_node · b

    The 18 is 2 (fp16 gradients) + 4 (fp32 gradients) + 4 (fp32 parameters) + 8 (Adam
    momentum and variance), the code's own comment. The CPU term without offload is the
    fp32 model every process of a node builds before DeepSpeed moves it (memory.rst,
    "General RAM"). ``before_fix=True`` gives the GPU term before ``DEEPSPEED_FIX_COMMIT``,
    4Ψ + int(16Ψ/n), the one memory.rst prints and states.
    """
    p, per_node, m, b = _setup(params, gpus_per_node, nodes, buffer_factor)
    cpu_optimizer, old_gpu_term = _flag("offload_optimizer", offload_optimizer), _flag("before_fix", before_fix)
    total_gpus = m * per_node
    if cpu_optimizer:
        gpu_mem = 2 * p
        cpu_mem = p * max(4 * total_gpus, 16) * b
    else:
        if old_gpu_term:
            gpu_mem = 4 * p + int(16 * p / total_gpus)
        else:
            gpu_mem = 2 * p + int(18 * p / total_gpus)
        cpu_mem = p * 4 * per_node * b
    return Estimate(cpu_bytes=int(cpu_mem), gpu_bytes=int(gpu_mem))


def zero3_estimate(
    *,
    params: float,
    largest_layer_params: float,
    gpus_per_node: int = 1,
    nodes: int = 1,
    offload_optimizer: bool = True,
    offload_param: bool = True,
    zero_init: bool = True,
    buffer_factor: float = ADDITIONAL_BUFFER_FACTOR,
) -> Estimate:
    """``estimate_zero3_model_states_mem_needs`` (deepspeed/runtime/zero/stage3.py at
    ``DEEPSPEED_COMMIT``); Ψ = ``params``, L = ``largest_layer_params``, n = total GPUs,
    g = 1/``nodes`` (memory.rst's gpus_factor), b = ``buffer_factor``, and the
    largest-layer term 4L (its fp16 parameters and gradients gathered on one GPU):

        offload param + optimizer:  GPU 4L               CPU Ψ·18·g·b (zero_init) or Ψ·max(4·gpn, 18g)·b
        offload optimizer only:     GPU 4L + int(2Ψ/n)   CPU Ψ·16·g·b (zero_init) or Ψ·max(4·gpn, 16g)·b
        no offload:                 GPU 4L + int(18Ψ/n)  CPU L·4·gpn·b (zero_init) or Ψ·4·gpn·b

    (gpn = ``gpus_per_node``). DeepSpeed itself skips offload_param without
    offload_optimizer; so does this function (ValueError).
    """
    p, per_node, m, b = _setup(params, gpus_per_node, nodes, buffer_factor)
    layer = check_real("largest_layer_params", largest_layer_params, 0, p)
    cpu_optimizer, cpu_param = _flag("offload_optimizer", offload_optimizer), _flag("offload_param", offload_param)
    init = _flag("zero_init", zero_init)
    if cpu_param and not cpu_optimizer:
        raise ValueError("offload_param needs offload_optimizer (DeepSpeed's estimator lists no such row)")
    total_gpus = m * per_node
    gpus_factor = 1 / m
    largest_layer_memory = 4 * layer
    if cpu_optimizer:
        if cpu_param:
            gpu_mem = largest_layer_memory
            if init:
                cpu_mem = p * 18 * gpus_factor * b
            else:
                cpu_mem = p * max(4 * per_node, 18 * gpus_factor) * b
        else:
            gpu_mem = largest_layer_memory + int(2 * p / total_gpus)
            if init:
                cpu_mem = p * 16 * gpus_factor * b
            else:
                cpu_mem = p * max(4 * per_node, 16 * gpus_factor) * b
    else:
        gpu_mem = largest_layer_memory + int(18 * p / total_gpus)
        if init:
            cpu_mem = layer * 4 * per_node * b
        else:
            cpu_mem = p * 4 * per_node * b
    return Estimate(cpu_bytes=int(cpu_mem), gpu_bytes=int(gpu_mem))


def _device(on: bool) -> str:
    return "cpu " if on else "none"  # f'{OffloadDeviceEnum.cpu:4}' pads "cpu" to 4


def zero2_table(
    *, params: float, gpus_per_node: int = 1, nodes: int = 1,
    buffer_factor: float = ADDITIONAL_BUFFER_FACTOR, before_fix: bool = False,
) -> tuple[EstimateRow, ...]:
    """The rows ``estimate_zero2_model_states_mem_needs_all_cold`` prints, in order
    (offload_optimizer cpu, then none)."""
    return tuple(
        EstimateRow(f"offload_optimizer={_device(cpu)}",
                    zero2_estimate(params=params, gpus_per_node=gpus_per_node, nodes=nodes,
                                   offload_optimizer=cpu, buffer_factor=buffer_factor, before_fix=before_fix))
        for cpu in (True, False)
    )


def zero3_table(
    *, params: float, largest_layer_params: float, gpus_per_node: int = 1, nodes: int = 1,
    buffer_factor: float = ADDITIONAL_BUFFER_FACTOR,
) -> tuple[EstimateRow, ...]:
    """The six rows ``estimate_zero3_model_states_mem_needs_all_cold`` prints, in order."""
    rows = []
    for cpu_optimizer in (True, False):
        for cpu_param in (True, False):
            if cpu_param and not cpu_optimizer:
                continue
            for init in (True, False):
                options = (f"offload_param={_device(cpu_param)}, offload_optimizer={_device(cpu_optimizer)}, "
                           f"zero_init={1 if init else 0}")
                rows.append(EstimateRow(options, zero3_estimate(
                    params=params, largest_layer_params=largest_layer_params, gpus_per_node=gpus_per_node,
                    nodes=nodes, offload_optimizer=cpu_optimizer, offload_param=cpu_param, zero_init=init,
                    buffer_factor=buffer_factor)))
    return tuple(rows)


def largest_layer_params(model: ModelConfig) -> int:
    """Parameters of the model's largest single module, what DeepSpeed's
    ``model_to_params`` (stage3.py) finds on the Hugging Face model: over
    ``model.modules()``, the most elements a module holds itself
    (``m.parameters(recurse=False)``).

    Llama (``LlamaForCausalLM``, no biases): the largest of the token embedding and the
    output head (V·h each), one MLP projection (h·ffn) and the query projection (h·h).
    GPT-3 (GPT-2's modules): the token embedding V·h (the tied head is the same tensor),
    the MLP's first ``Conv1D`` h·4h + 4h (bias) and the fused attention h·3h + 3h.
    Llama 2 7B: V·h = 32,000 · 4,096 = 131,072,000.
    """
    if model.architecture == "llama" and not model.experts:
        return max(model.vocab * model.hidden, model.hidden * model.ffn, model.hidden * model.hidden)
    if model.architecture == "gpt":
        h = model.hidden
        return max(model.vocab * h, h * 4 * h + 4 * h, h * 3 * h + 3 * h)
    raise ValueError(f"largest_layer_params covers dense llama and gpt models, got {model.key!r}")


def deepspeed_layout(dp: int, gpus_per_node_max: int = 8) -> tuple[int, int]:
    """(gpus_per_node, nodes) for N_d = ``dp`` data-parallel GPUs: the largest per-node
    count up to ``gpus_per_node_max`` that divides N_d exactly, so that DeepSpeed's total
    (gpus_per_node · nodes) is N_d: 8 → (8, 1), 64 → (8, 8), 12 → (6, 2), 13 → (1, 13)."""
    n = check_int("dp", dp, 1, MAX_GPUS)
    cap = check_int("gpus_per_node_max", gpus_per_node_max, 1, MAX_GPUS)
    per_node = max(d for d in range(1, min(n, cap) + 1) if n % d == 0)
    return per_node, n // per_node


# -- the book's clean model -------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Bytes of training state per GPU: on the GPU, and off it (CPU memory or NVMe)."""

    gpu_bytes: float
    cpu_bytes: float

    @property
    def total(self) -> float:
        return self.gpu_bytes + self.cpu_bytes


def offload_available(offload: str, zero_stage: int) -> bool:
    """Whether DeepSpeed accepts this offload with this ZeRO stage (docs/_pages/config-json.md
    at ``DEEPSPEED_COMMIT``: CPU ``offload_optimizer`` "is available with ZeRO stage 1, 2, 3";
    ``offload_param`` is "Available only with ZeRO stage 3")."""
    o = check_choice("offload", offload, OFFLOADS)
    s = check_choice("zero_stage", zero_stage, ZERO_STAGES)
    return o == "none" or (o == "optimizer" and s >= 1) or (o == "optimizer_params" and s == 3)


def offload_state_per_gpu(
    *,
    params: float,
    dp: int,
    zero_stage: int,
    offload: str,
    optimizer_bytes: float = OPTIMIZER_BYTES,
    grad_bytes: float = GRAD_BYTES,
) -> Placement:
    """Per-GPU state on and off the GPU, K = ``optimizer_bytes`` (12 for Adam), N_d = ``dp``:

        none:              GPU = ZeRO's M_stage (calc.zero)      CPU 0
        optimizer:         GPU = fp16 weights, 2Ψ (2Ψ/N_d at     CPU (2 + K)Ψ/N_d
                           stage 3)
        optimizer_params:  GPU 0 (stage 3 only)                   CPU (2 + 2 + K)Ψ/N_d

    ``optimizer`` is ZeRO-Offload (Ren et al. 2021, Sec. 4.1: 2Ψ on the GPU, 2Ψ + 12Ψ on
    the CPU for one GPU; Sec. 4.2: each of N_d GPUs offloads its own partition of the
    gradients and optimizer state). Stage 1 counts as stage 2 here, as in DeepSpeed,
    whose ZeRO-1 and ZeRO-2 share one offload path and one estimator: the gradients
    leave the GPU as they are produced. ``optimizer_params`` is ZeRO-Infinity's offload
    of all model states (Rajbhandari et al. 2021, Sec. 5). The working memory that
    ZeRO-3 needs to gather a layer, and every buffer, is not counted in any mode (it is in
    DeepSpeed's estimator). Offloading never raises the GPU bytes; for stages 2 and 3
    GPU + CPU is the un-offloaded state. A combination DeepSpeed refuses
    (``offload_available``) raises ValueError. ``grad_bytes`` replaces the gradients' 2
    (the 2 + K above becomes g + K), for a recipe with fp32 gradients (``calc.precision``).
    """
    o = check_choice("offload", offload, OFFLOADS)
    state = state_per_gpu(params=params, dp=dp, zero_stage=zero_stage, optimizer_bytes=optimizer_bytes,
                          grad_bytes=grad_bytes)
    if not offload_available(o, zero_stage):
        raise ValueError(f"offload {o!r} is not available with zero_stage {zero_stage} "
                         "(optimizer: stages 1-3; optimizer_params: stage 3)")
    if o == "none":
        return Placement(gpu_bytes=state.total, cpu_bytes=0.0)
    p = check_real("params", params, 0, MAX_PARAMS)
    k = check_real("optimizer_bytes", optimizer_bytes, 0, MAX_OPTIMIZER_BYTES)
    n = check_int("dp", dp, 1, MAX_GPUS)
    if o == "optimizer":
        return Placement(gpu_bytes=state.weights, cpu_bytes=(grad_bytes + k) * p / n)
    return Placement(gpu_bytes=0.0, cpu_bytes=math.fsum((state.weights, state.grads, state.optimizer)))


def pcie_bytes_per_gpu(
    *, params: float, dp: int, zero_stage: int, offload: str, grad_bytes: float = GRAD_BYTES
) -> float:
    """Bytes crossing one GPU's PCIe link per step (one forward and one backward pass):

        none:              0
        optimizer:         4Ψ/N_d   fp16 gradients down (2Ψ/N_d), new fp16 weights up (2Ψ/N_d)
        optimizer_params:  6Ψ/N_d   fp16 weights up for the forward and again for the
                                    backward pass (2 · 2Ψ/N_d), fp16 gradients down (2Ψ/N_d)

    ZeRO-Offload Sec. 4.1 (4Ψ for one GPU, the least of any split that saves memory) and
    Sec. 4.2 (each GPU moves its own partition); ZeRO-Infinity Sec. 6.1 (each GPU reads
    its own partition of the parameters over its own PCIe link, then all-gathers them
    over NVLink; the updated weights stay off the GPU). Unlike the all-reduce per GPU,
    which stays near 4Ψ bytes whatever N_d, it shrinks as 1/N_d. With gradient accumulation the traffic
    repeats for every micro-batch (the gradients leave the GPU each time, and with
    ``optimizer_params`` the weights are read again), as ZeRO-3's all-gathers do.
    ``grad_bytes`` is the gradients' bytes per parameter on the way down (2 for fp16;
    4 for a recipe that keeps fp32 gradients, ``calc.precision``).
    """
    o = check_choice("offload", offload, OFFLOADS)
    p = check_real("params", params, 0, MAX_PARAMS)
    n = check_int("dp", dp, 1, MAX_GPUS)
    if not offload_available(o, zero_stage):
        raise ValueError(f"offload {o!r} is not available with zero_stage {zero_stage}")
    g = check_real("grad_bytes", grad_bytes, 0, MAX_OPTIMIZER_BYTES)
    shard = WEIGHT_BYTES * p / n  # one GPU's partition of the fp16 weights
    grads = g * p / n  # and of the gradients
    if o == "none":
        return 0.0
    if o == "optimizer":
        return math.fsum((grads, shard))
    return math.fsum((grads, shard, shard))
