"""Utilization: how much of the hardware's peak a training run turns into model work.

Model FLOPs utilization (MFU, Chowdhery et al. 2022, "PaLM", Sec. 4.1 and Appendix B):
the FLOP/s the model needs at the observed throughput (tokens per second times the
model's FLOP per token, forward and backward, without recomputation) over the peak
FLOP/s of the chips. Hardware FLOPs utilization (HFU, the same paper; Korthikanti et
al. 2022, Sec. 6) counts what the chips really execute, recomputation included, so
HFU ≥ MFU. Megatron-LM reports achieved teraFLOP/s per GPU and aggregate petaFLOP/s
(Narayanan et al. 2021, Sec. 5.1, Table 1) with its Eq. 3, which counts full
recomputation: that figure is an HFU, not an MFU.

The model's FLOP per token is PaLM's 6N + 12·L·H·Q·T: 6 FLOP per matmul weight and
the attention scores QKᵀ and ·V over the whole T × T matrix (non-causal, as PaLM and
torchtitan count it). ``calc.models.forward_flops`` gives the same count matmul by
matmul for every preset (grouped-query attention, SwiGLU, MoE included).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._check import (
    MAX_FLOPS,
    MAX_FLOPS_PER_S,
    MAX_GPUS,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_PARAMS,
    MAX_SECONDS,
    MAX_SEQ_LEN,
    check_choice,
    check_int,
    check_real,
)
from .activations import RECOMPUTE_MODES
from .compute import training_flops
from .hardware import GPUS
from .models import MEGATRON_MODELS, MODELS, ModelConfig, forward_flops, megatron_flops_per_iteration, param_count

__all__ = [
    "LLAMA2_GPU_HOURS",
    "MAX_TOKENS_PER_S",
    "MEGATRON_1T",
    "PALM_540B",
    "PublishedRun",
    "RUNS",
    "RunUtilization",
    "flops_per_gpu_from_gpu_hours",
    "hardware_flops_per_token",
    "mfu",
    "model_flops_over_6n",
    "model_flops_per_token",
    "palm_flops_per_token",
    "run_utilization",
    "weak_scaling_efficiency",
]

MAX_TOKENS_PER_S = 1e12  # tokens per second of a whole run (the largest are ~1e7)


def palm_flops_per_token(*, params: float, layers: int, heads: int, head_dim: int, seq_len: int) -> float:
    """Model FLOP per token, forward and backward, PaLM Appendix B:

        6·N + 12·L·H·Q·T

    N parameters, L layers, H heads, Q head dimension, T sequence length: 6 per weight
    (2 forward, 4 backward) and, per layer, the QKᵀ and attention-over-V matmuls, 2·T·H·Q
    FLOP each per token forward, three times for forward and backward. PaLM 540B (N
    540.35B, L 118, H 48, Q 256, T 2048): 3.278e12.
    """
    n = check_real("params", params, 0, MAX_PARAMS)
    l = check_int("layers", layers, 1, MAX_LAYERS)
    a = check_int("heads", heads, 1, MAX_HEADS)
    q = check_int("head_dim", head_dim, 1, MAX_HIDDEN)
    t = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    return 6.0 * n + 12.0 * l * a * q * t


def model_flops_per_token(model: ModelConfig, *, seq_len: int | None = None) -> float:
    """The model's FLOP per token for MFU: three forward passes' worth (forward, and a
    backward of twice the forward) of every matmul of ``calc.models.forward_flops``,
    i.e. PaLM's 6N + 12·L·H·Q·T with N the weights that take part in a matmul (the
    input embedding is a lookup and counts none). Llama 2 7B at 4,096 tokens:
    46,084,915,200, 1.14 times 6Ψ (the attention scores add 16%, the embedding table
    is 2% of Ψ)."""
    f = forward_flops(model, seq_len=seq_len)
    tokens = model.seq_len if seq_len is None else seq_len
    return 3.0 * f.total / tokens


def model_flops_over_6n(model: ModelConfig, *, seq_len: int | None = None) -> float:
    """``model_flops_per_token`` over 6Ψ: 1.140 for Llama 2 7B at 4,096 tokens (the
    attention scores add s/(6h)·12Lh²/Ψ, the embedding table takes 2% off)."""
    return model_flops_per_token(model, seq_len=seq_len) / (6.0 * param_count(model))


def hardware_flops_per_token(model: ModelConfig, *, seq_len: int | None = None, recompute: str = "none") -> float:
    """FLOP per token the chips execute, for HFU: ``model_flops_per_token`` plus what
    activation recomputation reruns (Korthikanti et al. 2022, Sec. 6 and Appendix A):
    the layers' whole forward pass for ``"full"``, the attention-score matmuls for
    ``"selective"`` (their Appendix A list, as ``calc.models.megatron_flops_per_iteration``)."""
    mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
    f = forward_flops(model, seq_len=seq_len)
    tokens = model.seq_len if seq_len is None else seq_len
    rerun = {"none": 0, "selective": f.attention_scores, "full": f.layers}[mode]
    return (3.0 * f.total + rerun) / tokens


def mfu(*, tokens_per_s: float, flops_per_token: float, gpus: int, peak_flops_per_s: float) -> float:
    """Utilization, PaLM Sec. 4.1: tokens_per_s · flops_per_token / (gpus · peak).
    With ``model_flops_per_token`` this is the MFU, with ``hardware_flops_per_token``
    the HFU. PaLM 540B: 238.3K tokens/s on 6,144 TPU v4 chips of 275 TFLOP/s: 46.2%."""
    r = check_real("tokens_per_s", tokens_per_s, 0, MAX_TOKENS_PER_S)
    f = check_real("flops_per_token", flops_per_token, 0, MAX_FLOPS)
    g = check_int("gpus", gpus, 1, MAX_GPUS)
    peak = check_real("peak_flops_per_s", peak_flops_per_s, 0, MAX_FLOPS_PER_S, lo_inclusive=False)
    return r * f / (g * peak)


def flops_per_gpu_from_gpu_hours(*, flops: float, gpu_hours: float) -> float:
    """Average FLOP/s per GPU of a finished run: C / (GPU-hours · 3600). Llama 2 7B,
    6ND = 8.09e22 over the 184,320 A100 hours of Touvron et al. 2023 Table 2:
    121.9 TFLOP/s."""
    c = check_real("flops", flops, 0, MAX_FLOPS)
    hours = check_real("gpu_hours", gpu_hours, 0, MAX_SECONDS / 3600, lo_inclusive=False)
    return c / (hours * 3600.0)


def weak_scaling_efficiency(*, flops_per_gpu: float, base_flops_per_gpu: float) -> float:
    """Weak scaling (model and GPU count grown together): per-GPU throughput at scale
    over the smallest configuration's, X_n / X_base (Narayanan et al. 2021, Sec. 5.1:
    137 TFLOP/s per GPU on 32 GPUs, 163 on 3,072: 1.19, superlinear because the larger
    models' matmuls are larger)."""
    x = check_real("flops_per_gpu", flops_per_gpu, 0, MAX_FLOPS_PER_S)
    base = check_real("base_flops_per_gpu", base_flops_per_gpu, 0, MAX_FLOPS_PER_S, lo_inclusive=False)
    return x / base


@dataclass(frozen=True)
class PublishedRun:
    """A run's published throughput, to recompute its utilization from.

    ``flops_per_gpu`` achieved FLOP/s per chip as the paper reports it (0 when it
    reports tokens per second instead), ``tokens_per_s`` the run's tokens per second
    (0 when not reported), ``peak_flops_per_s`` one chip's peak, ``reported_mfu`` and
    ``reported_hfu`` the paper's own figures (0 = not reported); ``source`` where each
    number comes from.
    """

    key: str
    name: str
    gpus: int
    peak_flops_per_s: float
    tokens_per_s: float
    flops_per_gpu: float
    reported_mfu: float
    reported_hfu: float
    params: float
    layers: int
    heads: int
    head_dim: int
    seq_len: int
    hidden: int
    vocab: int
    source: str


PALM_540B = PublishedRun(
    key="palm-540b",
    name="PaLM 540B",
    gpus=6_144,  # Sec. 4: 6144 TPU v4 chips over two pods
    peak_flops_per_s=275e12,  # Appendix B: TPU v4 peak 275 TFLOP/s bf16
    tokens_per_s=238.3e3,  # Sec. 4.1 and Table 3: 238.3K tokens/sec
    flops_per_gpu=0.0,
    reported_mfu=0.462,  # Table 3: MFU 46.2%
    reported_hfu=0.578,  # Table 3: HFU 57.8% (with rematerialization)
    params=540.35e9,  # Table 2: 540.35B parameters
    layers=118,  # Table 1
    heads=48,  # Table 1
    head_dim=256,  # Table 1: d_head 256 (multi-query attention)
    seq_len=2_048,  # Sec. 5: sequence length 2048
    hidden=18_432,  # Table 1: d_model
    vocab=256_000,  # Sec. 2: 256k SentencePiece vocabulary
    source=(
        "Chowdhery et al. 2022, PaLM: Scaling Language Modeling with Pathways, Table 1 (118 "
        "layers, 48 heads of 256, d_model 18432), Table 2 (540.35B), Sec. 4.1 and Table 3 "
        "(238.3K tokens/s on 6144 TPU v4, MFU 46.2%, HFU 57.8%), Appendix B (6N + 12LHQT, "
        "275 TFLOP/s peak)"
    ),
)

MEGATRON_1T = PublishedRun(
    key="megatron-1t",
    name="Megatron-LM GPT 1T",
    gpus=3_072,  # Table 1, last row
    peak_flops_per_s=312e12,  # A100 bf16/fp16 dense peak, the paper's "theoretical peak"
    tokens_per_s=0.0,
    flops_per_gpu=163e12,  # Table 1: 163 teraFLOP/s per GPU (52% of peak)
    reported_mfu=0.0,
    reported_hfu=0.52,  # Table 1: 52% of theoretical peak, counted with Eq. 3 (full recomputation)
    params=1_008e9,  # Table 1: 1008 billion
    layers=128,
    heads=160,
    head_dim=160,  # hidden 25600 / 160 heads
    seq_len=2_048,  # Sec. 5.1: sequence length 2048
    hidden=25_600,
    vocab=51_200,  # Sec. 5.1: vocabulary size 51,200
    source=(
        "Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters "
        "Using Megatron-LM, Table 1 last row (1008B, 128 layers, hidden 25600, 160 heads, "
        "3072 A100 GPUs, 163 teraFLOP/s per GPU, 52% of peak, 502 petaFLOP/s aggregate) and "
        "Eq. 3 (FLOP count with activation recomputation)"
    ),
)

# Touvron et al. 2023, Llama 2, Table 2: pre-training time in A100-80GB GPU hours.
LLAMA2_GPU_HOURS: dict[str, float] = {
    "llama2-7b": 184_320,
    "llama2-13b": 368_640,
    "llama2-70b": 1_720_320,
}


@dataclass(frozen=True)
class RunUtilization:
    """One published run's utilization, counted three ways.

    ``flops_per_token_6n`` 6Ψ; ``model_flops_per_token`` PaLM's count with the attention
    scores (the MFU numerator); ``counted_flops_per_token`` what the source itself counts
    (PaLM: the model FLOP; Megatron-LM: Eq. 3 with full recomputation; Llama 2: 6Ψ, the
    only count its GPU hours can be divided into). ``counted_flops_per_gpu`` is the
    achieved FLOP/s per GPU in the source's count, ``counted_utilization`` that over
    the peak; ``tokens_per_gpu_s`` tokens per second per GPU; ``mfu_6n`` and ``mfu`` the
    utilization with 6Ψ and with the model FLOP.
    """

    peak_flops_per_s: float
    tokens_per_gpu_s: float
    flops_per_token_6n: float
    model_flops_per_token: float
    counted_flops_per_token: float
    counted_flops_per_gpu: float
    counted_utilization: float
    mfu_6n: float
    mfu: float

    @property
    def model_over_6n(self) -> float:
        """model_flops_per_token / flops_per_token_6n: what the attention scores (and,
        for 6Ψ, the embedding lookup) change."""
        return self.model_flops_per_token / self.flops_per_token_6n


RUNS = ("palm-540b", "megatron-1t", *LLAMA2_GPU_HOURS)


def _summary(peak: float, tokens_per_gpu_s: float, six_n: float, model: float, counted: float) -> RunUtilization:
    return RunUtilization(
        peak_flops_per_s=peak,
        tokens_per_gpu_s=tokens_per_gpu_s,
        flops_per_token_6n=six_n,
        model_flops_per_token=model,
        counted_flops_per_token=counted,
        counted_flops_per_gpu=tokens_per_gpu_s * counted,
        counted_utilization=tokens_per_gpu_s * counted / peak,
        mfu_6n=tokens_per_gpu_s * six_n / peak,
        mfu=tokens_per_gpu_s * model / peak,
    )


def run_utilization(run: str) -> RunUtilization:
    """The utilization of a published run (``RUNS``), from what its paper reports:

    * ``palm-540b``: 238.3K tokens/s on 6,144 chips (``PALM_540B``), counted with
      ``palm_flops_per_token``: MFU 46.2%, 45.7% with 6N alone.
    * ``megatron-1t``: 163 teraFLOP/s per GPU in Eq. 3's count (full recomputation),
      52% of the A100's peak (``MEGATRON_1T``); tokens per second from that count, and
      the model FLOP of ``calc.models.forward_flops`` for the 1T GPT: MFU 39%.
    * ``llama2-7b``, ``-13b``, ``-70b``: the pre-training tokens over the GPU hours of
      Touvron et al. 2023 Table 2 (``LLAMA2_GPU_HOURS``) on the A100's 312 TFLOP/s:
      7B 3,014 tokens/s per GPU, 39% with 6Ψ, 45% with the attention scores.
    """
    key = check_choice("run", run, RUNS)
    if key == "palm-540b":
        r = PALM_540B
        model = palm_flops_per_token(params=r.params, layers=r.layers, heads=r.heads, head_dim=r.head_dim,
                                     seq_len=r.seq_len)
        return _summary(r.peak_flops_per_s, r.tokens_per_s / r.gpus, 6.0 * r.params, model, model)
    if key == "megatron-1t":
        r, m = MEGATRON_1T, MEGATRON_MODELS["megatron-1t"]
        counted = megatron_flops_per_iteration(layers=m.layers, hidden=m.hidden, vocab=m.vocab, seq_len=m.seq_len,
                                               global_batch=1, recompute="full") / m.seq_len
        return _summary(r.peak_flops_per_s, r.flops_per_gpu / counted, 6.0 * param_count(m),
                        model_flops_per_token(m), counted)
    m = MODELS[key]
    peak = GPUS["a100-80gb"].flops_per_s  # Table 2: A100-80GB
    tokens_per_gpu_s = m.train_tokens / (LLAMA2_GPU_HOURS[key] * 3600.0)
    six_n = training_flops(param_count(m), 1.0)
    return _summary(peak, tokens_per_gpu_s, six_n, model_flops_per_token(m), six_n)
