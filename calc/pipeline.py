"""Pipeline parallelism: layers split into p stages, the batch into m micro-batches.

Formulas: Huang et al. 2018, "GPipe", Sec. 2.3 (bubble O((K−1)/(M+K−1)));
Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", Sec. 2.2.1 (GPipe and 1F1B / PipeDream-Flush: bubble time over
ideal time (p−1)/m, 1F1B keeps at most p micro-batches in flight) and Sec. 2.2.2
(interleaved schedule with v model chunks per GPU: (p−1)/(v·m)).

Two bubbles, two names: ``bubble_fraction_of_time`` is the idle share of the whole
step, (p−1)/(m+p−1) (GPipe's figure); ``bubble_over_ideal_time`` is the bubble time
over the ideal time, (p−1)/m (Megatron's, Narayanan et al. 2021, Eq. 1–2).

``simulate_schedule`` builds the schedule from dependencies instead of from the
formula, so the tests can check one against the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

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
    "ScheduleEvent",
    "ScheduleSummary",
    "activation_transfer_bytes",
    "bubble_fraction_of_time",
    "bubble_over_ideal_time",
    "busy_units",
    "in_flight_microbatches",
    "layers_per_stage",
    "simulate_schedule",
    "stage_layers",
    "state_per_gpu_bytes",
    "summarize_schedule",
    "total_units",
]

SCHEDULES = ("gpipe", "1f1b", "interleaved")
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
    *, params: float, pp: int, optimizer_bytes: float = OPTIMIZER_BYTES
) -> float:
    """Training state per GPU: (2 + 2 + K)Ψ / p = 16Ψ / p, K = ``optimizer_bytes``
    (ZeRO Sec. 3.1 bytes, layers split p ways). Llama 2 7B, p = 4: 26.95e9."""
    ps = check_real("params", params, 0, MAX_PARAMS)
    p = check_int("pp", pp, 1, MAX_PP)
    k = check_real("optimizer_bytes", optimizer_bytes, 0, MAX_OPTIMIZER_BYTES)
    return (WEIGHT_BYTES + GRAD_BYTES + k) * ps / p


def activation_transfer_bytes(*, hidden: int, seq_len: int, micro_batch: int = 1) -> float:
    """Bytes sent from one stage to the next per micro-batch (and the same gradient
    back): s·b·h × 2 bytes. One 4,096-token sequence, h = 4096: 33.55e6."""
    h = check_int("hidden", hidden, 1, MAX_HIDDEN)
    s = check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    b = check_int("micro_batch", micro_batch, 1, MAX_BATCH)
    return float(s) * b * h * ACTIVATION_BYTES


def in_flight_microbatches(*, pp: int, microbatches: int, schedule: str) -> int:
    """Most micro-batches whose activations a stage holds at once: m for GPipe
    (all forwards before any backward), min(p, m) for 1F1B (Narayanan et al. 2021
    Sec. 2.2.1: "limits the number of in-flight microbatches ... to the depth of
    the pipeline"). Interleaved is left to ``simulate_schedule``."""
    p, m, _ = _p_m_v(pp, microbatches, 1)
    sched = check_choice("schedule", schedule, ("gpipe", "1f1b"))
    return m if sched == "gpipe" else min(p, m)


# ------------------------------------------------------------------ simulator


class ScheduleEvent(NamedTuple):
    """One forward ("F") or backward ("B") pass of one micro-batch on one stage;
    ``chunk`` is the model chunk (always 0 unless interleaved)."""

    stage: int
    start: float
    end: float
    kind: str
    microbatch: int
    chunk: int


@dataclass(frozen=True)
class ScheduleSummary:
    """Totals of a simulated schedule.

    ``busy_time`` is one stage's compute (the same on every stage);
    ``bubble_fraction_of_time`` = 1 − busy / total (all stages);
    ``bubble_over_ideal_time`` = (total − busy) / busy; ``peak_in_flight[s]``: most
    micro-batches' activations stage s holds at once (a chunk of an interleaved stage
    counts 1/v).
    """

    total_time: float
    busy_time: float
    bubble_fraction_of_time: float
    bubble_over_ideal_time: float
    peak_in_flight: tuple[float, ...]


Op = tuple[str, int, int]  # (kind, microbatch, chunk)


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


def _dependency(op: Op, s: int, p: int, v: int) -> tuple[str, int, int, int] | None:
    """(kind, microbatch, chunk, stage) that must finish before ``op`` on stage s."""
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


def simulate_schedule(
    *,
    pp: int,
    microbatches: int,
    schedule: str = "gpipe",
    chunks: int = 2,
    fwd: float = 1,
    bwd: float = 2,
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

    Returns ``ScheduleEvent(stage, start, end, kind, microbatch, chunk)`` sorted by
    start time then stage. ``chunks`` (validated, 2 to 8 when interleaved) only matters
    for ``schedule="interleaved"``.
    """
    p = check_int("pp", pp, 1, MAX_SIM_PP)
    m = check_int("microbatches", microbatches, 1, MAX_SIM_MICROBATCHES)
    sched = check_choice("schedule", schedule, SCHEDULES)
    interleaved = sched == "interleaved"
    v = check_int("chunks", chunks, 2 if interleaved else 1, MAX_SIM_CHUNKS)
    if not interleaved:
        v = 1
    f = Fraction(check_real("fwd", fwd, 0, 1e9, lo_inclusive=False)) / v
    b = Fraction(check_real("bwd", bwd, 0, 1e9, lo_inclusive=False)) / v
    # exact integer time: one tick = 1/denominator time units
    tick = math.lcm(f.denominator, b.denominator)
    raw = _run(
        [_stage_order(sched, p, m, v, s) for s in range(p)],
        p,
        v,
        int(f * tick),
        int(b * tick),
    )
    if raw is None:  # pragma: no cover - the tests run every order the widget offers
        raise RuntimeError(f"{sched} schedule deadlocked (p={p}, m={m}, v={v})")
    return [
        ScheduleEvent(s, start / tick, end / tick, kind, i, c)
        for start, s, end, kind, i, c in raw
    ]


_Raw = list[tuple[int, int, int, str, int, int]]  # (start, stage, end, kind, i, c)


def _run(orders: list[list[Op]], p: int, v: int, t_f: int, t_b: int) -> _Raw | None:
    """Start each pass as early as its stage and its input allow; None on deadlock.

    A stage runs its passes in order until the next one waits for an input; it is
    resumed when that input's pass is done.
    """
    next_op = [0] * p
    free = [0] * p
    done: dict[tuple[str, int, int, int], int] = {}
    waiting: dict[tuple[str, int, int, int], int] = {}
    raw: _Raw = []
    ready = list(range(p))
    while ready:
        s = ready.pop()
        order = orders[s]
        while next_op[s] < len(order):
            kind, i, c = order[next_op[s]]
            dep = _dependency((kind, i, c), s, p, v)
            if dep is not None and dep not in done:
                waiting[dep] = s
                break
            start = max(free[s], done[dep]) if dep is not None else free[s]
            end = start + (t_f if kind == "F" else t_b)
            key = (kind, i, c, s)
            done[key] = end
            raw.append((start, s, end, kind, i, c))
            free[s] = end
            next_op[s] += 1
            resumed = waiting.pop(key, None)
            if resumed is not None:
                ready.append(resumed)
    if any(next_op[s] < len(orders[s]) for s in range(p)):
        return None
    raw.sort(key=lambda e: (e[0], e[1]))
    return raw


def summarize_schedule(events: list[ScheduleEvent]) -> ScheduleSummary:
    """Total time, busy time, bubble and peak in-flight activations of ``events``
    (from ``simulate_schedule``)."""
    if not events or not all(isinstance(e, ScheduleEvent) for e in events):
        raise ValueError("events must be a non-empty list of ScheduleEvent")
    p = max(e.stage for e in events) + 1
    v = max(e.chunk for e in events) + 1
    total = max(e.end for e in events) - min(e.start for e in events)
    busy = [0.0] * p
    for e in events:
        busy[e.stage] += e.end - e.start
    busy_time = max(busy)
    peaks = []
    for s in range(p):
        # (time, order, delta): a backward's release sorts before a forward's start
        changes = sorted(
            (e.end, 0, -1) if e.kind == "B" else (e.start, 1, 1)
            for e in events
            if e.stage == s
        )
        held = peak = 0
        for _, _, delta in changes:
            held += delta
            peak = max(peak, held)
        peaks.append(peak / v)
    return ScheduleSummary(
        total_time=total,
        busy_time=busy_time,
        # math.fsum, not sum(): sum() of floats became compensated in Python 3.12, so
        # the browser (3.14) and the native build (3.11) would differ in the last bit.
        bubble_fraction_of_time=1.0 - math.fsum(busy) / (p * total),
        bubble_over_ideal_time=(total - busy_time) / busy_time,
        peak_in_flight=tuple(peaks),
    )
