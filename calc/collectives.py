"""Collective operations: ring costs, bus bandwidth, and pure-Python simulations.

Costs follow NCCL's test suite (NVIDIA/nccl-tests, ``doc/PERFORMANCE.md`` and
``src/*.cu``): for an operation on ``n`` ranks with message size S bytes (the full
vector: the all-reduce input, the all-gather output, the reduce-scatter input, the
scatter root's buffer), a bandwidth-optimal (ring) algorithm makes each rank send

    all_reduce                          2(n−1)/n · S
    all_gather, reduce_scatter,
    all_to_all, scatter, gather         (n−1)/n · S
    broadcast, reduce                   S

and the benchmark reports ``algbw = S / t`` and ``busbw = algbw × factor`` with that
same factor, so ``busbw`` is comparable with the link's hardware bandwidth.

The simulations take one list of numbers per rank and return every rank's vector
after the operation, computed from the definition (MPI / NCCL semantics, rank order).
``ring_all_reduce_steps`` walks the ring algorithm chunk by chunk (reduce-scatter,
then all-gather) and returns each intermediate state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ._check import MAX_BYTES, MAX_BYTES_PER_S, MAX_GPUS, MAX_SECONDS, check_choice, check_int, check_real

__all__ = [
    "OPS",
    "RingStep",
    "algbw",
    "all_gather",
    "all_reduce",
    "all_to_all",
    "broadcast",
    "bus_factor",
    "aggregate_bytes_per_s",
    "both_directions_bytes_per_s",
    "busbw",
    "chunk_bounds",
    "chunk_bytes",
    "gather",
    "reduce",
    "reduce_scatter",
    "ring_all_reduce_bytes_per_rank",
    "ring_all_reduce_steps",
    "ring_bytes_per_rank",
    "ring_seconds",
    "run",
    "scatter",
    "transfer_seconds",
]

OPS = (
    "broadcast",
    "scatter",
    "gather",
    "reduce",
    "all_gather",
    "reduce_scatter",
    "all_reduce",
    "all_to_all",
)

Vector = tuple[float, ...]
State = tuple[Vector, ...]


# --------------------------------------------------------------------------- costs


def bus_factor(op: str, ranks: int) -> float:
    """Bus-bandwidth factor of ``op`` on n = ``ranks`` (nccl-tests PERFORMANCE.md).

    all_reduce 2(n−1)/n; all_gather, reduce_scatter, all_to_all, scatter, gather
    (n−1)/n; broadcast, reduce 1. It is also the bytes each rank sends under a ring
    algorithm, per byte of message.
    """
    o = check_choice("op", op, OPS)
    n = check_int("ranks", ranks, 1, MAX_GPUS)
    if o == "all_reduce":
        return 2.0 * (n - 1) / n
    if o in ("broadcast", "reduce"):
        return 1.0
    return (n - 1) / n


def ring_bytes_per_rank(op: str, size_bytes: float, ranks: int) -> float:
    """Bytes each rank sends for a message of S = ``size_bytes``: factor × S."""
    s = check_real("size_bytes", size_bytes, 0, MAX_BYTES)
    return bus_factor(op, ranks) * s


def ring_all_reduce_bytes_per_rank(size_bytes: float, ranks: int) -> float:
    """Ring all-reduce: each rank sends 2(n−1)/n · S bytes (reduce-scatter, then
    all-gather, each (n−1) steps of S/n; Patarasuk and Yuan 2009; nccl-tests
    PERFORMANCE.md). Llama 2 7B fp16 gradients (13.48e9 bytes) on 8 GPUs: 23.59e9."""
    return ring_bytes_per_rank("all_reduce", size_bytes, ranks)


def transfer_seconds(size_bytes: float, bytes_per_s: float) -> float:
    """t = bytes / bandwidth (no latency term)."""
    s = check_real("size_bytes", size_bytes, 0, MAX_BYTES)
    bw = check_real("bytes_per_s", bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False)
    return s / bw


def chunk_bytes(size_bytes: float, ranks: int) -> float:
    """One rank's chunk S/n of an S-byte message: what each rank contributes to an
    all-gather (S is its output) and keeps after a reduce-scatter (S is its input), and
    what a ring step moves (nccl-tests PERFORMANCE.md). 1 GB on 8 ranks: 125 MB."""
    s = check_real("size_bytes", size_bytes, 0, MAX_BYTES)
    n = check_int("ranks", ranks, 1, MAX_GPUS)
    return s / n


def ring_seconds(op: str, *, size_bytes: float, ranks: int, bytes_per_s: float) -> float:
    """Bandwidth term of ``op`` under a ring algorithm: T = factor × S / β, each rank
    sending ``ring_bytes_per_rank`` over its own link of β = ``bytes_per_s`` (one
    direction), latency left out (Patarasuk and Yuan 2009; the c·S/β term of the α–β
    model, ``calc.latency``). All-gather of 1 GB on 8 ranks over 50 GB/s: 17.5 ms."""
    return transfer_seconds(ring_bytes_per_rank(op, size_bytes, ranks), bytes_per_s)


def both_directions_bytes_per_s(bytes_per_s: float) -> float:
    """The figure a datasheet quotes for a link of β = ``bytes_per_s`` per direction:
    NVIDIA gives NVLink and PCIe as the sum of both directions, 2β (H100 datasheet:
    NVLink 900 GB/s = 18 links × 25 GB/s × 2 directions; PCIe Gen5 x16 128 GB/s)."""
    bw = check_real("bytes_per_s", bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False)
    return 2.0 * bw


def aggregate_bytes_per_s(bytes_per_s: float, links: int) -> float:
    """Sum of ``links`` links of ``bytes_per_s`` each, used at once: a node's network
    adapters when NCCL runs one ring over each of them (S. Jeaugey, NVIDIA/nccl issue
    #412). Eight 400 Gb/s adapters (DGX H100): 400 GB/s per direction."""
    bw = check_real("bytes_per_s", bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False)
    k = check_int("links", links, 1, MAX_GPUS)
    return k * bw


def algbw(size_bytes: float, time_s: float) -> float:
    """Algorithm bandwidth S / t in bytes/s (nccl-tests PERFORMANCE.md)."""
    s = check_real("size_bytes", size_bytes, 0, MAX_BYTES)
    t = check_real("time_s", time_s, 0, MAX_SECONDS, lo_inclusive=False)
    return s / t


def busbw(op: str, *, ranks: int, size_bytes: float, time_s: float) -> float:
    """Bus bandwidth algbw × bus_factor(op, n) in bytes/s (nccl-tests PERFORMANCE.md)."""
    return algbw(size_bytes, time_s) * bus_factor(op, ranks)


# ----------------------------------------------------------------- simulations


def _number(name: str, value: object) -> float:
    """A finite number; integers stay integers so sums of them stay exact."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return check_real(name, value, None, None)


def _check_data(data: Sequence[Sequence[float]], *, max_ranks: int = 64) -> State:
    if isinstance(data, (str, bytes)) or not isinstance(data, Sequence):
        raise ValueError(f"data must be a list of per-rank lists of numbers, got {data!r}")
    check_int("ranks", len(data), 1, max_ranks)
    rows: list[Vector] = []
    for r, row in enumerate(data):
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
            raise ValueError(f"data[{r}] must be a list of numbers, got {row!r}")
        rows.append(tuple(_number(f"data[{r}][{i}]", x) for i, x in enumerate(row)))
    length = len(rows[0])
    for r, row in enumerate(rows):
        if len(row) != length:
            raise ValueError(
                f"data[{r}] must have the same length as data[0] ({length}), got {len(row)}"
            )
    return tuple(rows)


def _check_root(root: int, ranks: int) -> int:
    return check_int("root", root, 0, ranks - 1)


def chunk_bounds(length: int, chunks: int) -> tuple[tuple[int, int], ...]:
    """Split ``length`` elements into ``chunks`` contiguous (start, end) ranges, the
    first ``length % chunks`` one element longer (as NCCL splits a buffer)."""
    n_el = check_int("length", length, 0, 10**9)
    k = check_int("chunks", chunks, 1, MAX_GPUS)
    base, extra = divmod(n_el, k)
    bounds = []
    start = 0
    for c in range(k):
        end = start + base + (1 if c < extra else 0)
        bounds.append((start, end))
        start = end
    return tuple(bounds)


def _split_evenly(name: str, vec: Vector, parts: int) -> list[Vector]:
    if len(vec) % parts:
        raise ValueError(
            f"{name} length must be a multiple of the number of ranks ({parts}), got {len(vec)}"
        )
    size = len(vec) // parts
    return [vec[i * size : (i + 1) * size] for i in range(parts)]


def _sum(rows: Sequence[Vector]) -> Vector:
    """Element-wise sum: exact for integers, correctly rounded (fsum) for floats."""
    return tuple(
        sum(col) if all(isinstance(x, int) for x in col) else math.fsum(col)
        for col in zip(*rows)
    )


def broadcast(data: Sequence[Sequence[float]], root: int = 0) -> State:
    """Every rank receives the root's vector."""
    d = _check_data(data)
    r = _check_root(root, len(d))
    return tuple(d[r] for _ in d)


def scatter(data: Sequence[Sequence[float]], root: int = 0) -> State:
    """The root's vector is cut into n equal chunks; rank i receives chunk i."""
    d = _check_data(data)
    r = _check_root(root, len(d))
    return tuple(_split_evenly(f"data[{r}]", d[r], len(d)))


def gather(data: Sequence[Sequence[float]], root: int = 0) -> State:
    """The root receives every rank's vector, concatenated in rank order; the other
    ranks keep their own vector."""
    d = _check_data(data)
    r = _check_root(root, len(d))
    joined = tuple(x for row in d for x in row)
    return tuple(joined if i == r else row for i, row in enumerate(d))


def reduce(data: Sequence[Sequence[float]], root: int = 0) -> State:
    """The root receives the element-wise sum; the other ranks keep their vector."""
    d = _check_data(data)
    r = _check_root(root, len(d))
    total = _sum(d)
    return tuple(total if i == r else row for i, row in enumerate(d))


def all_gather(data: Sequence[Sequence[float]]) -> State:
    """Every rank receives every rank's vector, concatenated in rank order."""
    d = _check_data(data)
    joined = tuple(x for row in d for x in row)
    return tuple(joined for _ in d)


def reduce_scatter(data: Sequence[Sequence[float]]) -> State:
    """The element-wise sum is cut into n equal chunks; rank i receives chunk i."""
    d = _check_data(data)
    total = _sum(d)
    return tuple(_split_evenly("data[0]", total, len(d)))


def all_reduce(data: Sequence[Sequence[float]]) -> State:
    """Every rank receives the element-wise sum."""
    d = _check_data(data)
    total = _sum(d)
    return tuple(total for _ in d)


def all_to_all(data: Sequence[Sequence[float]]) -> State:
    """Each rank cuts its vector into n chunks and sends chunk j to rank j; rank j
    receives the chunks in sender order (a transpose of the chunk matrix)."""
    d = _check_data(data)
    n = len(d)
    parts = [_split_evenly(f"data[{i}]", row, n) for i, row in enumerate(d)]
    return tuple(tuple(x for i in range(n) for x in parts[i][j]) for j in range(n))


_ROOTED = {"broadcast": broadcast, "scatter": scatter, "gather": gather, "reduce": reduce}
_UNROOTED = {
    "all_gather": all_gather,
    "reduce_scatter": reduce_scatter,
    "all_reduce": all_reduce,
    "all_to_all": all_to_all,
}


def run(op: str, data: Sequence[Sequence[float]], root: int = 0) -> State:
    """Run collective ``op`` (one of ``OPS``) on ``data``; ``root`` for rooted ops."""
    o = check_choice("op", op, OPS)
    if o in _ROOTED:
        return _ROOTED[o](data, root)
    return _UNROOTED[o](data)


@dataclass(frozen=True)
class RingStep:
    """One step of ring all-reduce.

    ``phase`` is "start", "reduce_scatter" or "all_gather"; ``step`` counts from 1
    within the phase (0 for "start"). ``sends`` lists (src, dst, chunk) transfers of
    this step (rank r sends to (r+1) mod n). ``state[r]`` is rank r's whole vector
    after the step; ``contributors[r][c]`` the ranks whose inputs are summed in
    chunk c on rank r.
    """

    phase: str
    step: int
    sends: tuple[tuple[int, int, int], ...]
    state: State
    contributors: tuple[tuple[tuple[int, ...], ...], ...]


def ring_all_reduce_steps(data: Sequence[Sequence[float]]) -> tuple[RingStep, ...]:
    """Ring all-reduce, chunk by chunk (Patarasuk and Yuan 2009; NCCL's ring).

    Each vector is cut into n chunks (``chunk_bounds``). Reduce-scatter, steps
    k = 0..n−2: rank r sends chunk (r − k) mod n to rank r+1, which adds it to its own
    copy; afterwards rank r holds the full sum of chunk (r+1) mod n. All-gather,
    steps k = 0..n−2: rank r sends chunk (r + 1 − k) mod n to rank r+1, which
    overwrites its copy. Each rank sends 2(n−1) chunks, i.e. 2(n−1)/n of the vector.
    Returns the initial state plus 2(n−1) steps; the last state equals ``all_reduce``.
    """
    d = _check_data(data)
    n = len(d)
    bounds = chunk_bounds(len(d[0]), n)
    chunks: list[list[list[float]]] = [[list(row[a:b]) for a, b in bounds] for row in d]
    who: list[list[tuple[int, ...]]] = [[(r,) for _ in range(n)] for r in range(n)]

    def snapshot(phase: str, step: int, sends: tuple[tuple[int, int, int], ...]) -> RingStep:
        state = tuple(tuple(x for c in chunks[r] for x in c) for r in range(n))
        contrib = tuple(tuple(who[r]) for r in range(n))
        return RingStep(phase, step, sends, state, contrib)

    steps = [snapshot("start", 0, ())]
    for k in range(n - 1):
        sends = tuple((r, (r + 1) % n, (r - k) % n) for r in range(n))
        payload = [(dst, c, list(chunks[src][c]), who[src][c]) for src, dst, c in sends]
        for dst, c, values, contributors in payload:
            chunks[dst][c] = [a + b for a, b in zip(chunks[dst][c], values)]
            who[dst][c] = tuple(sorted(who[dst][c] + contributors))
        steps.append(snapshot("reduce_scatter", k + 1, sends))
    for k in range(n - 1):
        sends = tuple((r, (r + 1) % n, (r + 1 - k) % n) for r in range(n))
        payload = [(dst, c, list(chunks[src][c]), who[src][c]) for src, dst, c in sends]
        for dst, c, values, contributors in payload:
            chunks[dst][c] = values
            who[dst][c] = contributors
        steps.append(snapshot("all_gather", k + 1, sends))
    return tuple(steps)
