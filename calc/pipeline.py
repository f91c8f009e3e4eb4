"""Pipeline parallelism: layers split into p stages, the batch into m micro-batches.

Formulas: Huang et al. 2018, "GPipe", Sec. 2.3 (bubble O((K−1)/(M+K−1)));
Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", Sec. 2.2.1 (GPipe and 1F1B / PipeDream-Flush: bubble time over
ideal time (p−1)/m, 1F1B keeps at most p micro-batches in flight) and Sec. 2.2.2
(interleaved schedule with v model chunks per GPU: (p−1)/(v·m)).

Two bubbles, two names: ``bubble_fraction_of_time`` is the idle share of the whole
step, (p−1)/(m+p−1) (GPipe's figure); ``bubble_over_ideal_time`` is the bubble time
over the ideal time, (p−1)/m (Megatron's, Narayanan et al. 2021, Eq. 1–2).

Zero-bubble schedules (Qi et al. 2024, "Zero Bubble (Almost) Pipeline Parallelism",
ICLR 2024, arXiv:2401.10241, Sec. 2) split the backward pass into B (input gradient, which
the previous stage waits for) and W (weight gradient, which nobody waits for): ZB-H1
(Sec. 2.1) and ZB-H2 (Sec. 2.2). DualPipe (DeepSeek-AI 2024, "DeepSeek-V3 Technical
Report", arXiv:2412.19437, Sec. 3.2.1, Fig. 5, Table 2; code: deepseek-ai/DualPipe,
dualpipe/dualpipe.py at 3da1bbe) feeds micro-batches from both ends of the pipeline.

Notation. The ZB paper times a forward T_F, an input-gradient backward T_B and a
weight-gradient backward T_W; DeepSeek's Table 2 writes F = T_F, B = T_B + T_W (a *full*
backward), W = T_W and F&B for a forward and a full backward of two micro-batches run
overlapped. Here ``fwd`` = F = T_F, ``bwd`` = B = T_B + T_W (the full backward, as in the
older schedules), ``wgrad`` = W = T_W and ``fwd_bwd`` = F&B.

``simulate_schedule`` builds the schedule from dependencies instead of from the
formula, so the tests can check one against the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, NamedTuple

from ._check import (
    MAX_BATCH,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_OPTIMIZER_BYTES,
    MAX_PARAMS,
    MAX_SEQ_LEN,
    check_choice,
    check_int,
    check_real,
)
from .memory import ACTIVATION_BYTES, GRAD_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES

__all__ = [
    "MAX_CHUNKS",
    "MAX_MICROBATCHES",
    "MAX_PP",
    "MAX_SIM_CHUNKS",
    "MAX_SIM_MICROBATCHES",
    "MAX_SIM_PP",
    "SCHEDULES",
    "SPLIT_BACKWARD",
    "ScheduleEvent",
    "ScheduleSummary",
    "activation_transfer_bytes",
    "bubble_fraction_of_time",
    "bubble_over_ideal_time",
    "bubble_share",
    "bubble_target_coefficient",
    "bubble_time",
    "busy_units",
    "check_dualpipe",
    "in_flight_microbatches",
    "layers_per_stage",
    "microbatches_for_bubble",
    "overlapped_spans",
    "p2p_messages_per_microbatch",
    "parameter_copies",
    "simulate_schedule",
    "stage_layers",
    "state_per_gpu_bytes",
    "summarize_schedule",
    "total_units",
]

SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "dualpipe")
SPLIT_BACKWARD = ("zb-h1", "zb-h2", "dualpipe")  # backward split into B and W
MAX_PP = 1_024  # pipeline stages p in the closed-form functions
MAX_MICROBATCHES = MAX_BATCH
MAX_CHUNKS = 64  # model chunks per GPU (interleaved)
MAX_SIM_PP = 32  # pipeline stages p in the simulator, small enough for a browser
MAX_SIM_MICROBATCHES = 256
MAX_SIM_CHUNKS = 8


def _p_m_v(pp: int, microbatches: int, chunks: int) -> tuple[int, int, int]:
    return (
        check_int("pp", pp, 1, MAX_PP),
        check_int("microbatches", microbatches, 1, MAX_MICROBATCHES),
        check_int("chunks", chunks, 1, MAX_CHUNKS),
    )


def _bubble_fraction_of_time(p: float, m: float, v: float = 1.0) -> float:
    """(p−1)/(v·m + p−1) without validation (shared with parallel3d, whose m may be a
    real number)."""
    return (p - 1.0) / (v * m + p - 1.0)


def bubble_fraction_of_time(*, pp: int, microbatches: int, chunks: int = 1) -> float:
    """Bubble as a fraction of the whole step time: the idle share of the pipeline's
    time, time-weighted over all stages (GPipe's measure).

    GPipe and 1F1B (Huang et al. 2018 Sec. 2.3; Narayanan et al. 2021 Sec. 2.2.1):
        (p − 1) / (m + p − 1)
    Interleaved with v = ``chunks`` model chunks per GPU (Narayanan et al. 2021
    Sec. 2.2.2, bubble shrunk v times): (p − 1) / (v·m + p − 1).
    p = 4 stages, 4 micro-batches: 3/7 = 0.4286.
    """
    p, m, v = _p_m_v(pp, microbatches, chunks)
    return _bubble_fraction_of_time(p, m, v)


def bubble_over_ideal_time(*, pp: int, microbatches: int, chunks: int = 1) -> float:
    """Bubble time over the ideal (bubble-free) time, Megatron's measure, Narayanan et
    al. 2021, Eq. 1–2: (p − 1)/m for GPipe and 1F1B (Sec. 2.2.1), (p − 1)/(v·m)
    interleaved (Sec. 2.2.2). Equals f/(1 − f) for f = ``bubble_fraction_of_time``."""
    p, m, v = _p_m_v(pp, microbatches, chunks)
    return (p - 1.0) / (v * m)


def _target(bubble: float) -> Fraction:
    """The bubble target as an exact fraction: a slider's 0.1 (or 0.01 + 9 × 0.01) is 1/10."""
    f = check_real("bubble", bubble, 0, 1, lo_inclusive=False)
    if f >= 1:
        raise ValueError(f"bubble must be less than 1, got {f:g}")
    return Fraction(f).limit_denominator(10_000)


def bubble_target_coefficient(bubble: float) -> float:
    """(1 − f)/f for a bubble target f: (p − 1)/(v·m + p − 1) ≤ f holds exactly when
    v·m ≥ (1 − f)/f · (p − 1) (rearranged from Narayanan et al. 2021 Sec. 2.2.1–2.2.2).
    f = 0.1: 9, so m ≥ 9(p − 1) without interleaving."""
    f = _target(bubble)
    return float((1 - f) / f)


def microbatches_for_bubble(*, pp: int, bubble: float, chunks: int = 1) -> int:
    """Fewest micro-batches m whose bubble share (p − 1)/(v·m + p − 1) (GPipe and 1F1B,
    Huang et al. 2018 Sec. 2.3, Narayanan et al. 2021 Sec. 2.2.1; interleaved with
    v = ``chunks``, Sec. 2.2.2) is at most ``bubble``: m = ceil((1 − f)(p − 1)/(v·f)),
    at least 1. Exact for a target such as 0.1 (see ``_target``).
    p = 4, f = 0.1: 27; p = 8: 63; p = 8, v = 4: 16."""
    p, _, v = _p_m_v(pp, 1, chunks)
    f = _target(bubble)
    need = (1 - f) * (p - 1) / (v * f)
    return max(1, math.ceil(need))


def p2p_messages_per_microbatch(*, pp: int, chunks: int = 1) -> int:
    """Point-to-point messages one micro-batch causes per step: its activation crosses
    each of the v·p − 1 boundaries between consecutive (virtual) stages forward and its
    gradient crosses them back, 2(v·p − 1); interleaving multiplies the communication by
    about v (Narayanan et al. 2021 Sec. 2.2.2). p = 8: 14; p = 8, v = 4: 62."""
    p, _, v = _p_m_v(pp, 1, chunks)
    return 2 * (v * p - 1)


def _units(fwd: float, bwd: float) -> float:
    f = check_real("fwd", fwd, 0, 1e9, lo_inclusive=False)
    b = check_real("bwd", bwd, 0, 1e9, lo_inclusive=False)
    return f + b


def busy_units(*, microbatches: int, fwd: float = 1, bwd: float = 2) -> float:
    """Time units each stage computes per step: m·(t_f + t_b); backward = 2 × forward
    by default (a backward pass costs twice the forward's FLOP). m = 4: 12."""
    m = check_int("microbatches", microbatches, 1, MAX_MICROBATCHES)
    return m * _units(fwd, bwd)


def total_units(*, pp: int, microbatches: int, fwd: float = 1, bwd: float = 2) -> float:
    """Length of a GPipe or 1F1B step: (m + p − 1)·(t_f + t_b) (Narayanan et al. 2021
    Sec. 2.2.1). p = m = 4: 21."""
    p, m, _ = _p_m_v(pp, microbatches, 1)
    return (m + p - 1) * _units(fwd, bwd)


def layers_per_stage(layers: int, pp: int) -> int:
    """Layers on the most loaded stage: ceil(L / p). 32 layers, 4 stages: 8."""
    l = check_int("layers", layers, 1, MAX_LAYERS)
    p = check_int("pp", pp, 1, l)
    return math.ceil(l / p)


def stage_layers(layers: int, pp: int) -> tuple[tuple[int, int], ...]:
    """(first, last) layer index of each stage, inclusive: contiguous blocks, the
    first L mod p stages one layer longer. 32 layers, 4 stages: (0, 7) ... (24, 31)."""
    l = check_int("layers", layers, 1, MAX_LAYERS)
    p = check_int("pp", pp, 1, l)
    base, extra = divmod(l, p)
    out = []
    first = 0
    for s in range(p):
        count = base + (1 if s < extra else 0)
        out.append((first, first + count - 1))
        first += count
    return tuple(out)


def state_per_gpu_bytes(
    *, params: float, pp: int, optimizer_bytes: float = OPTIMIZER_BYTES, copies: int = 1
) -> float:
    """Training state per GPU: copies·(2 + 2 + K)Ψ / p = 16Ψ / p, K = ``optimizer_bytes``
    (ZeRO Sec. 3.1 bytes, layers split p ways); ``copies`` = 2 for DualPipe, whose GPU
    holds two stages (``parameter_copies``). Llama 2 7B, p = 4: 26.95e9."""
    ps = check_real("params", params, 0, MAX_PARAMS)
    p = check_int("pp", pp, 1, MAX_PP)
    k = check_real("optimizer_bytes", optimizer_bytes, 0, MAX_OPTIMIZER_BYTES)
    n = check_int("copies", copies, 1, 2)
    return n * (WEIGHT_BYTES + GRAD_BYTES + k) * ps / p


def activation_transfer_bytes(*, hidden: int, seq_len: int, micro_batch: int = 1) -> float:
    """Bytes sent from one stage to the next per micro-batch (and the same gradient
    back): s·b·h × 2 bytes. One 4,096-token sequence, h = 4096: 33.55e6."""
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    return float(s) * b * h * ACTIVATION_BYTES


def in_flight_microbatches(*, pp: int, microbatches: int, schedule: str) -> int:
    """Most micro-batches whose activations a stage holds at once, counted in
    micro-batches of one stage (the ZB paper's M_B, DeepSeek's Table 2 "Activation"):
    m for GPipe (all forwards before any backward); min(p, m) for 1F1B (Narayanan et
    al. 2021 Sec. 2.2.1: "limits the number of in-flight microbatches ... to the depth
    of the pipeline") and for ZB-H1 (Qi et al. 2024 Sec. 2.1: peak memory no more than
    1F1B's, p·M_B); min(2p − 1, m) for ZB-H2 (Sec. 2.2: (2p − 1)·M_B); p + 1 for
    DualPipe (DeepSeek-V3 Table 2, which needs m ≥ 2p). Interleaved is left to
    ``simulate_schedule``. A micro-batch is held from its forward to its W (its full
    backward where the backward is not split)."""
    p, m, _ = _p_m_v(pp, microbatches, 1)
    sched = check_choice("schedule", schedule, ("gpipe", "1f1b", "zb-h1", "zb-h2", "dualpipe"))
    if sched == "dualpipe":
        check_dualpipe(pp=p, microbatches=m)
        return p + 1
    if sched == "zb-h2":
        return min(2 * p - 1, m)
    return m if sched == "gpipe" else min(p, m)


def check_dualpipe(*, pp: int, microbatches: int) -> None:
    """DualPipe's own requirements (dualpipe.py, ``DualPipe.step``: ``num_ranks % 2 == 0``,
    ``num_chunks % 2 == 0 and num_chunks >= num_ranks * 2``): an even number of stages
    and an even number of micro-batches, at least 2p, half fed from each end."""
    pp = check_int("pp", pp, 1, MAX_PP)
    microbatches = check_int("microbatches", microbatches, 1, MAX_MICROBATCHES)
    if pp % 2:
        raise ValueError(f"pp must be even for dualpipe, got {pp}")
    if microbatches % 2 or microbatches < 2 * pp:
        raise ValueError(f"microbatches must be an even number of at least 2·pp = {2 * pp} for dualpipe, "
                         f"got {microbatches}")


def parameter_copies(schedule: str) -> int:
    """Model parameters a stage holds, in multiples of one stage's share (DeepSeek-V3
    Table 2, "Parameter per device"): 2 for DualPipe, whose device s holds stage s for the
    micro-batches fed from the first device and stage p − 1 − s for those fed from the
    last (dualpipe examples: ``modules[rank]``, ``modules[pp_size - 1 - rank]``), 1 for
    every other schedule here."""
    return 2 if check_choice("schedule", schedule, SCHEDULES) == "dualpipe" else 1


def _times(fwd: float, bwd: float, wgrad: float, fwd_bwd: float | None,
           split: bool) -> tuple[float, float, float, float]:
    """Validated F, B, W and F&B; W and F&B only matter (and are only checked) where
    the backward is split."""
    f = check_real("fwd", fwd, 0, 1e9, lo_inclusive=False)
    b = check_real("bwd", bwd, 0, 1e9, lo_inclusive=False)
    if not split:
        return f, b, 0.0, f + b
    w = check_real("wgrad", wgrad, 0, b, lo_inclusive=False)
    if w >= b:  # the input-gradient part T_B = B − W must take some time
        raise ValueError(f"wgrad must be less than bwd = {b:g}, got {w:g}")
    fb = f + b if fwd_bwd is None else check_real("fwd_bwd", fwd_bwd, 0, f + b, lo_inclusive=False)
    return f, b, w, fb


def bubble_share(*, bubble: float, busy: float) -> float:
    """A stage's idle time ``bubble`` as a share of its step, busy + bubble: how a per-GPU
    bubble time (``bubble_time``, DeepSeek-V3 Table 2) reads as the fraction that
    ``bubble_fraction_of_time`` gives. 1F1B, p = 4, m = 8 (busy 24, bubble 9): 9/33."""
    x = check_real("bubble", bubble, 0, 1e12)
    y = check_real("busy", busy, 0, 1e12, lo_inclusive=False)
    return x / (y + x)


def bubble_time(
    *,
    pp: int,
    schedule: str,
    chunks: int = 1,
    fwd: float = 1,
    bwd: float = 2,
    wgrad: float = 1,
    fwd_bwd: float | None = None,
) -> float:
    """Idle time of a stage per step, as the papers give it, in DeepSeek's notation
    (F = ``fwd``, B = ``bwd`` the full backward, W = ``wgrad``, F&B = ``fwd_bwd``, by
    default F + B; ZB's T_B = B − W, T_W = W):

    * GPipe, 1F1B: (p − 1)(F + B) (Narayanan et al. 2021 Sec. 2.2.1; DeepSeek-V3
      Table 2, row 1F1B); interleaved: (p − 1)(F + B)/v (Sec. 2.2.2).
    * ZB-H1: (p − 1)(F + B − 2W) (DeepSeek-V3 Table 2, row ZB1P) = (p − 1)(T_F + T_B −
      T_W), a third of 1F1B's when T_F = T_B = T_W (Qi et al. 2024 Sec. 2.1). The
      handcrafted order reaches it for m ≥ p and T_W ≤ T_F; a longer W cannot fill more
      than a forward's wait, and the simulation idles (p − 1)(T_F + T_B − min(T_W, T_F)).
    * ZB-H2: max(0, (p − 1)(T_F + T_B − 2T_W)): zero when T_W ≥ (T_F + T_B)/2 (Qi et al.
      2024 Sec. 2.2: zero bubble for T_F = T_B = T_W); the order reaches it for
      m ≥ 2p − 1. It holds for the step *period*
      once consecutive steps overlap, which the paper's optimizer post-validation (Sec. 4)
      allows; within one isolated step the last stage still waits (p − 1)·T_F for its
      first forward.
    * DualPipe: (p/2 − 1)(F&B + B − 3W) (DeepSeek-V3 Table 2), the idle time of the
      device that idles most (all alike when F&B = F + B). Fig. 5 draws it for
      F = 1, B = 2, W = 1, F&B = 3 (T_F = T_B = T_W): 66 cells a row, 6 empty. The
      order of dualpipe.py reaches it, for every m, exactly when T_F = T_B ≥ T_W,
      i.e. F = B − W ≥ W; a longer T_B idles less, a longer T_F or T_W more.
    """
    p = check_int("pp", pp, 1, MAX_PP)
    sched = check_choice("schedule", schedule, SCHEDULES)
    v = check_int("chunks", chunks, 1, MAX_CHUNKS)
    f, b, w, fb = _times(fwd, bwd, wgrad, fwd_bwd, sched in SPLIT_BACKWARD)
    if sched in ("gpipe", "1f1b"):
        return (p - 1) * (f + b)
    if sched == "interleaved":
        return (p - 1) * (f + b) / v
    if sched == "zb-h1":
        return (p - 1) * (f + b - 2 * w)
    if sched == "zb-h2":
        return max(0.0, (p - 1) * (f + (b - w) - 2 * w))
    if p % 2:
        raise ValueError(f"pp must be even for dualpipe, got {p}")
    return (p // 2 - 1) * (fb + b - 3 * w)


# ------------------------------------------------------------------ simulator


class ScheduleEvent(NamedTuple):
    """One pass of one micro-batch on one stage: a forward ("F"), a backward ("B": the
    whole backward in GPipe, 1F1B and interleaved, the input gradient where the backward
    is split) or a weight gradient ("W", split schedules only). ``chunk`` is the model
    chunk: always 0 for GPipe, 1F1B, ZB-H1, ZB-H2; 0 … v − 1 interleaved; for DualPipe the
    direction, 0 for micro-batches fed from stage 0 (device s runs stage s) and 1 for
    those fed from stage p − 1 (device s runs stage p − 1 − s)."""

    stage: int
    start: float
    end: float
    kind: str
    microbatch: int
    chunk: int


@dataclass(frozen=True)
class ScheduleSummary:
    """Totals of a simulated schedule.

    ``busy_time`` is the busiest stage's compute (the same on every stage unless DualPipe
    overlaps passes, ``fwd_bwd`` < ``fwd`` + ``bwd``);
    ``bubble_fraction_of_time`` = 1 − busy / total (all stages);
    ``bubble_over_ideal_time`` = (total − busy) / busy; ``peak_in_flight[s]``: most
    micro-batches' activations stage s holds at once (a chunk of an interleaved stage
    counts 1/v, a DualPipe chunk 1: it is a whole stage); ``period``: the longest span
    of one stage, first start to last end, which is how often steps can follow each
    other when each stage starts its next step as soon as it has finished this one
    (the ZB paper's optimizer post-validation, Qi et al. 2024 Sec. 4, removes the
    step-wide synchronization that would forbid it). It equals ``total_time`` for every
    schedule except ZB-H2, whose parallelogram lets steps overlap.
    """

    total_time: float
    busy_time: float
    bubble_fraction_of_time: float
    bubble_over_ideal_time: float
    peak_in_flight: tuple[float, ...]
    period: float

    @property
    def idle_per_period(self) -> float:
        """period − busy_time: one stage's idle time per step period, the quantity of the
        papers' bubble formulas (``bubble_time``)."""
        return self.period - self.busy_time


# An op in a stage's order: (kind, microbatch, chunk), and for DualPipe's overlapped
# pair ("FB", forward microbatch, forward chunk, backward microbatch, backward chunk).
# "BW" is a backward that is not split: its B and W run back to back.
Op = tuple


def _stage_order(schedule: str, p: int, m: int, v: int, s: int) -> list[Op]:
    """The order in which stage s runs its passes."""
    if schedule == "gpipe":
        return [("F", i, 0) for i in range(m)] + [("B", i, 0) for i in range(m)]
    if schedule == "1f1b":
        warmup = min(p - s - 1, m)
        ops: list[Op] = [("F", i, 0) for i in range(warmup)]
        for i in range(m - warmup):
            ops += [("F", warmup + i, 0), ("B", i, 0)]
        ops += [("B", i, 0) for i in range(m - warmup, m)]
        return ops
    if schedule in ("zb-h1", "zb-h2"):
        return _zero_bubble_order(schedule, p, m, s)
    if schedule == "dualpipe":
        return _dualpipe_order(p, m, s)
    # Interleaved (Narayanan et al. 2021 Sec. 2.2.2), in Megatron-core's order
    # (schedules.py, get_schedule_table / get_pp_rank_microbatches): micro-batches in
    # groups of n, each group runs through chunk 0, 1, ..., v−1 (backward v−1, ..., 0);
    # stage s warms up with 2(p−s−1) + (v−1)·n forwards.
    n = _group_size(p, m)
    fwd: list[Op] = []
    bwd: list[Op] = []
    for first in range(0, m, n):
        group = range(first, min(first + n, m))
        fwd += [("F", i, c) for c in range(v) for i in group]
        bwd += [("B", i, c) for c in reversed(range(v)) for i in group]
    total = m * v
    warmup = min((p - s - 1) * 2 + (v - 1) * n, total)
    ops = fwd[:warmup]
    for k in range(total - warmup):
        ops += [fwd[warmup + k], bwd[k]]
    ops += bwd[total - warmup :]
    return ops


def _zero_bubble_order(schedule: str, p: int, m: int, s: int) -> list[Op]:
    """Qi et al. 2024's handcrafted schedules (Sec. 2, Fig. 3) on stage s.

    ZB-H1 (Sec. 2.1): 1F1B's warm-up (p − s forwards before the first B), then B, W, F
    repeated, but stage s delays its W passes by s, so that every stage holds p
    micro-batches, as 1F1B's first stage does; the delayed W fill the cool-down's wait.
    ZB-H2 (Sec. 2.2): 2(p − s) − 1 warm-up forwards, filling the wait for the first B,
    and W delayed by 2s, so every stage holds 2p − 1 micro-batches and the step becomes
    a parallelogram (the tail's W fill the cool-down).
    """
    warmup, delay = (p - s, s) if schedule == "zb-h1" else (2 * (p - s) - 1, 2 * s)
    ops: list[Op] = [("F", i, 0) for i in range(min(warmup, m))]
    f, w = len(ops), 0
    for b in range(m):
        ops.append(("B", b, 0))
        if b + 1 - w > delay:
            ops.append(("W", w, 0))
            w += 1
        if f < m:
            ops.append(("F", f, 0))
            f += 1
    ops += [("W", i, 0) for i in range(w, m)]
    return ops


def _dualpipe_order(p: int, m: int, rank: int) -> list[Op]:
    """DualPipe's order on one device, transcribed from ``DualPipe.step`` (dualpipe.py at
    3da1bbe, steps 1–8). Half the micro-batches enter at device 0 (direction 0,
    micro-batches 0 … m/2 − 1), half at device p − 1 (direction 1, m/2 … m − 1). The
    code's "phase 0" is direction 0 on the first half of the devices and direction 1 on
    the second half. A backward with ``enable_zb`` is split (B now, its W later, first
    in first out); any other backward is whole ("BW"); ``_forward_backward_chunk`` is
    the overlapped pair F&B ("FB").
    """
    h, half = m // 2, p // 2
    hr = min(rank, p - 1 - rank)
    second = int(rank >= half)
    middle = rank in (half - 1, half)
    f_next, b_next = [0, 0], [0, 0]
    pending_w: list[tuple[int, int]] = []

    def fwd(phase: int) -> tuple[int, int]:
        d = phase ^ second
        f_next[d] += 1
        return f_next[d] - 1 + d * h, d

    def bwd(phase: int, zb: bool) -> Op:
        d = phase ^ second
        b_next[d] += 1
        i = b_next[d] - 1 + d * h
        if zb:
            pending_w.append((i, d))
            return ("B", i, d)
        return ("BW", i, d)

    def weight() -> Op:
        return ("W", *pending_w.pop(0))

    def both(phase0: int, phase1: int) -> Op:
        i0, d0 = fwd(phase0)
        _, i1, d1 = bwd(phase1, False)
        return ("FB", i0, d0, i1, d1)

    ops: list[Op] = []
    for _ in range((half - hr - 1) * 2):  # step 1: nF0
        ops.append(("F", *fwd(0)))
    for _ in range(hr + 1):  # step 2: nF0F1
        ops += [("F", *fwd(0)), ("F", *fwd(1))]
    for _ in range(half - hr - 1):  # step 3: nB1W1F1, zero bubble
        ops += [bwd(1, True), weight(), ("F", *fwd(1))]
    for k in range(h - p + hr + 1):  # step 4 (main): nF0B1F1B0
        if k == 0 and middle:  # "we don't overlap these two chunks"
            ops += [("F", *fwd(0)), bwd(1, False)]
        else:
            ops.append(both(0, 1))
        ops.append(both(1, 0))
    for _ in range(half - hr - 1):  # step 5: nB1F1B0
        ops += [bwd(1, False), both(1, 0)]
    zb = False
    for k in range(hr + 1):  # step 6: nB1B0, the second half split
        if k == (hr + 1) // 2 and hr % 2 == 1:
            zb = True
        ops.append(bwd(1, zb))
        if k == (hr + 1) // 2 and hr % 2 == 0:
            zb = True
        ops.append(bwd(0, zb))
    for _ in range(half - hr - 1):  # step 7: nWB0, zero bubble
        ops += [weight(), bwd(0, True)]
    ops += [weight() for _ in range(hr + 1)]  # step 8: nW
    return ops


def _group_size(p: int, m: int) -> int:
    """Megatron-core's micro-batch group size n for the interleaved schedule: the
    smallest n in [p, m] whose last group is whole or at least p long (its checks
    ``p <= n <= m`` and ``m % n == 0 or m % n >= p``); n = p when p divides m, and
    n = m (one group) when m < p, which Megatron refuses but still runs here."""
    if m <= p:
        return m
    for n in range(p, m + 1):
        if m % n == 0 or m % n >= p:
            return n
    return m  # pragma: no cover - n = m always qualifies


_Key = tuple[str, int, int, int]  # (kind, microbatch, chunk, stage) of a finished pass


def _dependency(op: Op, s: int, p: int, v: int) -> _Key | None:
    """(kind, microbatch, chunk, stage) that must finish before ``op`` on stage s, in
    GPipe, 1F1B and interleaved."""
    kind, i, c = op
    if kind == "F":
        if s > 0:
            return ("F", i, c, s - 1)
        return ("F", i, c - 1, p - 1) if c > 0 else None
    if s < p - 1:
        return ("B", i, c, s + 1)
    if c < v - 1:
        return ("B", i, c + 1, 0)
    return ("F", i, c, s)


def _split_dependency(kind: str, i: int, c: int, s: int, p: int, dualpipe: bool) -> _Key | None:
    """The same rules where the backward is split: a forward waits for the forward one
    stage earlier, a B for the B one stage later (the last stage's for its own forward),
    a W for its own B. DualPipe's direction 1 runs from device p − 1 down to device 0."""
    step = -1 if dualpipe and c == 1 else 1
    first, last = (p - 1, 0) if step == -1 else (0, p - 1)
    if kind == "F":
        return None if s == first else ("F", i, c, s - step)
    if kind == "B":
        return ("F", i, c, s) if s == last else ("B", i, c, s + step)
    return ("B", i, c, s)


def _passes(op: Op) -> list[tuple[str, int, int]]:
    """The passes an op runs, in order."""
    if op[0] == "BW":
        return [("B", op[1], op[2]), ("W", op[1], op[2])]
    if op[0] == "FB":
        return [("F", op[1], op[2]), ("B", op[3], op[4]), ("W", op[3], op[4])]
    return [op]


def simulate_schedule(
    *,
    pp: int,
    microbatches: int,
    schedule: str = "gpipe",
    chunks: int = 2,
    fwd: float = 1,
    bwd: float = 2,
    wgrad: float = 1,
    fwd_bwd: float | None = None,
) -> list[ScheduleEvent]:
    """Simulate a pipeline schedule from its dependencies.

    Each stage runs its passes one at a time in its schedule's order: GPipe all
    forwards then all backwards (Huang et al. 2018, Fig. 2c); 1F1B p−s−1 warm-up
    forwards on stage s, then one forward and one backward alternately, then the
    remaining backwards (PipeDream-Flush, Narayanan et al. 2021 Fig. 4 top);
    interleaved with v = ``chunks`` chunks per stage, Megatron-LM's order (Fig. 4
    bottom), each chunk's pass taking 1/v of the time. A forward of micro-batch i
    on stage s waits for the same forward on stage s−1 (for chunk c > 0 on stage 0:
    chunk c−1 on the last stage); a backward waits for the backward on stage s+1
    (chunk c+1 on stage 0 after the last stage), and the very last one for its own
    forward. Each pass starts as soon as its stage is free and its input is ready.

    ZB-H1, ZB-H2 and DualPipe split the backward (``bwd`` = T_B + T_W) into B, taking
    ``bwd`` − ``wgrad``, which the previous stage waits for, and W, taking ``wgrad``,
    which waits only for its own B (orders: ``_zero_bubble_order``,
    ``_dualpipe_order``). DualPipe's overlapped pair F&B takes ``fwd_bwd`` (default
    ``fwd`` + ``bwd``: the overlap hides communication, not compute) and waits for the
    inputs of both its passes; it is drawn as its F, B and W back to back, scaled to
    fill ``fwd_bwd``. A whole backward (B then W) and an F&B pair hand their results on
    only when they end, as dualpipe.py sends them. DualPipe needs an even ``pp`` and an
    even ``microbatches`` ≥ 2·pp (``check_dualpipe``). Communication is free, and a
    pass waits only for its own input: the runtime's batches of paired send/recv
    (``_commit_and_wait_comm``), where a pass also waits for receives posted for the
    next one and a send for its receiver, can move idle time but, when T_F = T_B ≥ T_W,
    not the step's length (tests/calc/test_dualpipe_runtime.py).

    Returns ``ScheduleEvent(stage, start, end, kind, microbatch, chunk)`` sorted by
    start time then stage. ``chunks`` (validated, 2 to 8 when interleaved) only matters
    for ``schedule="interleaved"``; ``wgrad`` (0 < ``wgrad`` < ``bwd``) only where the
    backward is split, ``fwd_bwd`` (0 < ``fwd_bwd`` ≤ ``fwd`` + ``bwd``) only for DualPipe.
    """
    return _simulate(pp, microbatches, schedule, chunks, fwd, bwd, wgrad, fwd_bwd)[0]


def _simulate(pp: int, microbatches: int, schedule: str, chunks: int, fwd: float, bwd: float, wgrad: float,
              fwd_bwd: float | None) -> tuple[list[ScheduleEvent], list[tuple[int, float, float]]]:
    """``simulate_schedule``'s events and the (stage, start, end) of each F&B pair."""
    p = check_int("pp", pp, 1, MAX_SIM_PP)
    m = check_int("microbatches", microbatches, 1, MAX_SIM_MICROBATCHES)
    sched = check_choice("schedule", schedule, SCHEDULES)
    interleaved = sched == "interleaved"
    v = check_int("chunks", chunks, 2 if interleaved else 1, MAX_SIM_CHUNKS)
    if not interleaved:
        v = 1
    f_in, b_in, w_in, fb_in = _times(fwd, bwd, wgrad, fwd_bwd, sched in SPLIT_BACKWARD)
    if sched == "dualpipe":
        check_dualpipe(pp=p, microbatches=m)
    f = Fraction(f_in) / v
    b = Fraction(b_in) / v
    durations: dict[str, Fraction] = {"F": f, "B": b}
    if sched in SPLIT_BACKWARD:
        w = Fraction(w_in)
        durations = {"F": f, "B": b - w, "W": w}
    overlap = Fraction(fb_in) / (f + b)  # DualPipe's F&B against its passes in a row
    # exact integer time: one tick = 1/denominator time units
    parts = [*durations.values()] + [d * overlap for d in durations.values()]
    tick = math.lcm(*(x.denominator for x in parts))
    ticks = {k: int(d * tick) for k, d in durations.items()}
    overlapped = {k: int(d * overlap * tick) for k, d in durations.items()}
    orders = [_stage_order(sched, p, m, v, s) for s in range(p)]
    if sched in SPLIT_BACKWARD:
        dualpipe = sched == "dualpipe"
        deps = lambda kind, i, c, s: _split_dependency(kind, i, c, s, p, dualpipe)  # noqa: E731
    else:
        deps = lambda kind, i, c, s: _dependency((kind, i, c), s, p, v)  # noqa: E731
    result = _run(orders, p, deps, ticks, overlapped)
    if result is None:  # pragma: no cover - the tests run every order the widget offers
        raise RuntimeError(f"{sched} schedule deadlocked (p={p}, m={m}, v={v})")
    raw, pairs = result
    events = [ScheduleEvent(s, start / tick, end / tick, kind, i, c) for start, s, end, kind, i, c in raw]
    return events, sorted(((s, a / tick, z / tick) for s, a, z in pairs), key=lambda x: (x[1], x[0]))


def overlapped_spans(
    *,
    pp: int,
    microbatches: int,
    fwd: float = 1,
    bwd: float = 2,
    wgrad: float = 1,
    fwd_bwd: float | None = None,
) -> list[tuple[int, float, float]]:
    """(stage, start, end) of every overlapped forward-and-backward pair F&B of the
    DualPipe schedule that ``simulate_schedule`` returns for the same arguments (two
    cells with a shared border in DeepSeek-V3 Fig. 5), sorted by start then stage."""
    return _simulate(pp, microbatches, "dualpipe", 2, fwd, bwd, wgrad, fwd_bwd)[1]


_Raw = list[tuple[int, int, int, str, int, int]]  # (start, stage, end, kind, i, c)


def _run(
    orders: list[list[Op]],
    p: int,
    deps: Callable[[str, int, int, int], _Key | None],
    ticks: dict[str, int],
    overlapped: dict[str, int],
) -> tuple[_Raw, list[tuple[int, int, int]]] | None:
    """Start each op as early as its stage and its inputs allow; None on deadlock.

    A stage runs its ops in order until the next one waits for an input; it is
    resumed when that input's op is done. An op's results leave the stage when the
    whole op ends, as in dualpipe.py, where ``_backward_chunk`` sends the input gradient
    of a whole backward after the one autograd call that also computes the weight
    gradient, and ``_forward_backward_chunk`` sends both outputs of an F&B pair after
    the pair; every other schedule's op is one pass. Returns the passes and, per stage,
    the (stage, start, end) of each overlapped pair.
    """
    next_op = [0] * p
    free = [0] * p
    done: dict[_Key, int] = {}
    waiting: dict[_Key, int] = {}
    raw: _Raw = []
    pairs: list[tuple[int, int, int]] = []
    ready = list(range(p))
    while ready:
        s = ready.pop()
        order = orders[s]
        while next_op[s] < len(order):
            op = order[next_op[s]]
            passes = _passes(op)
            own = {(kind, i, c, s) for kind, i, c in passes}
            needed = [d for d in (deps(kind, i, c, s) for kind, i, c in passes) if d is not None and d not in own]
            missing = next((d for d in needed if d not in done), None)
            if missing is not None:
                waiting[missing] = s
                break
            start = max([free[s], *(done[d] for d in needed)])
            length = overlapped if op[0] == "FB" else ticks
            clock = start
            for kind, i, c in passes:
                raw.append((clock, s, clock + length[kind], kind, i, c))
                clock += length[kind]
            for kind, i, c in passes:  # sent when the op ends, not when its pass does
                key = (kind, i, c, s)
                done[key] = clock
                resumed = waiting.pop(key, None)
                if resumed is not None:
                    ready.append(resumed)
            if op[0] == "FB":
                pairs.append((s, start, clock))
            free[s] = clock
            next_op[s] += 1
    if any(next_op[s] < len(orders[s]) for s in range(p)):
        return None
    raw.sort(key=lambda e: (e[0], e[1]))
    return raw, pairs


def summarize_schedule(events: list[ScheduleEvent]) -> ScheduleSummary:
    """Total time, busy time, bubble, peak in-flight activations and period of
    ``events`` (from ``simulate_schedule``).

    A micro-batch's activations on a stage are held from the start of its forward to
    the end of its W, or of its backward where there is no W (the convention of the ZB
    paper's and DeepSeek's tables: memory in micro-batches of one stage, M_B; the ZB
    paper's finer accounting, Sec. 3.1, frees all but M_W at the B). A DualPipe chunk
    (events with a W and chunks 0 and 1) is a whole stage and counts 1.
    """
    if not events or not all(isinstance(e, ScheduleEvent) for e in events):
        raise ValueError("events must be a non-empty list of ScheduleEvent")
    p = max(e.stage for e in events) + 1
    v = max(e.chunk for e in events) + 1
    split = any(e.kind == "W" for e in events)
    share = 1 if split else v  # a DualPipe chunk is a stage; an interleaved one 1/v of it
    total = max(e.end for e in events) - min(e.start for e in events)
    busy = [0.0] * p
    first = [math.inf] * p
    last = [0.0] * p
    for e in events:
        busy[e.stage] += e.end - e.start
        first[e.stage] = min(first[e.stage], e.start)
        last[e.stage] = max(last[e.stage], e.end)
    busy_time = max(busy)
    peaks = []
    for s in range(p):
        mine = [e for e in events if e.stage == s]
        with_w = {(e.microbatch, e.chunk) for e in mine if e.kind == "W"}
        # (time, order, delta): a release sorts before a forward's start
        changes = sorted(
            (e.start, 1, 1) if e.kind == "F" else (e.end, 0, -1)
            for e in mine
            if e.kind == "F" or e.kind == "W" or (e.microbatch, e.chunk) not in with_w
        )
        held = peak = 0
        for _, _, delta in changes:
            held += delta
            peak = max(peak, held)
        peaks.append(peak / share)
    return ScheduleSummary(
        total_time=total,
        busy_time=busy_time,
        # math.fsum, not sum(): sum() of floats became compensated in Python 3.12, so
        # the browser (3.14) and the native build (3.11) would differ in the last bit.
        bubble_fraction_of_time=1.0 - math.fsum(busy) / (p * total),
        bubble_over_ideal_time=(total - busy_time) / busy_time,
        peak_in_flight=tuple(peaks),
        period=max(b - a for a, b in zip(first, last)),
    )
