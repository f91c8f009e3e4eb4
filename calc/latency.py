"""Latency-aware collectives: the α–β (Hockney) cost model of each algorithm.

A message of b bytes between two ranks takes α + b/β: α is the start-up latency of
one step, β the link's bandwidth (bytes/s, one direction). An algorithm that needs k
steps and makes each rank send c·S bytes of an S-byte collective takes

    T = k·α + c·S/β (+ r·S·γ, γ seconds per byte reduced)

(Hockney 1994; Thakur, Rabenseifner and Gropp 2005, "Optimization of Collective
Communication Operations in MPICH", IJHPCA 19(1), Sec. 2 for the model, Sec. 4 for each
algorithm; the ring all-reduce is Patarasuk and Yuan 2009). S means what it means in
``calc.collectives``: the full vector (the all-reduce input, the all-gather output, the
reduce-scatter input, one rank's all-to-all buffer). With L = ⌈log2 n⌉ on n ranks:

    op              algorithm            k            c              r
    all_reduce      ring                 2(n−1)       2(n−1)/n       (n−1)/n   Patarasuk & Yuan
                    recursive_doubling   L            L              L         Thakur Sec. 4, Allreduce
                    rabenseifner         2L           2(n−1)/n       (n−1)/n   Thakur Sec. 4, Allreduce
                    tree                 2L           2              1         NCCL tuning.cc (below)
    all_gather      ring                 n−1          (n−1)/n        0         Thakur Sec. 4, Allgather
                    recursive_doubling   L            (n−1)/n        0         Thakur Sec. 4, Allgather
    reduce_scatter  ring                 n−1          (n−1)/n        (n−1)/n   Thakur Sec. 4, Reduce-scatter (pairwise)
                    recursive_halving    L            (n−1)/n        (n−1)/n   Thakur Sec. 4, Reduce-scatter
    broadcast       binomial_tree        L            L              0         Thakur Sec. 4, Broadcast
                    scatter_all_gather   L + n − 1    2(n−1)/n       0         Thakur Sec. 4, Broadcast (van de Geijn)
    reduce          binomial_tree        L            L              L         Thakur Sec. 4, Reduce
                    rabenseifner         2L           2(n−1)/n       (n−1)/n   Thakur Sec. 4, Reduce
    all_to_all      pairwise             n−1          (n−1)/n        0         Thakur Sec. 4, Alltoall
                    bruck                L            L/2            0         Thakur Sec. 4, Alltoall (Bruck)
    scatter         binomial_tree        L            (n−1)/n        0         Thakur Sec. 4, Scatter
    gather          binomial_tree        L            (n−1)/n        0         Thakur Sec. 4, Gather

For n not a power of two MPICH adds one or two steps to the recursive algorithms
(Thakur Sec. 4); L = ⌈log2 n⌉ is the lower bound. The ring's c equals
``collectives.ring_bytes_per_rank`` per byte: the bandwidth-optimal volume.

``tree`` is NCCL's double binary tree all-reduce (Jeaugey, "Massively Scale Your Deep
Learning Training with NCCL 2.4", NVIDIA blog 2019; cost model in NVIDIA/nccl
``src/graph/tuning.cc`` at commit 5067397c): latency 2·log2(nodes) network steps (plus
the chain inside each node), algorithm bandwidth half the bus bandwidth
(``ratio *= .5``), i.e. c = 2. Here every rank is its own node.

``nvls_all_reduce`` is NVLink SHARP (the reduction done in the NVSwitch), and only what
NCCL's own model states (same file): latency 25 µs flat (``hwLatencies`` NVLink/NVLS/
Simple, base 0), bandwidth the NVLink bandwidth × 0.85 (Hopper's ``nvlsEfficiency``)
× 2 ("AllReduce pipelines two operations") as bus bandwidth, converted to algorithm
bandwidth with n/(2(n−1)) like a ring: T = 25 µs + (n−1)/n · S/(0.85 β). NCCL runs it
inside one NVLink domain only. An nccl-tests busbw of such a run is not a wire rate:
"for hardware-accelerated algorithms, the algorithm bandwidth is the actual bus
bandwidth" (S. Jeaugey, NVIDIA/nccl-tests issue #212).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._check import MAX_BYTES, MAX_BYTES_PER_S, MAX_GPUS, check_choice, check_int, check_real

__all__ = [
    "ALGORITHMS",
    "AlphaBeta",
    "LINK_ALPHA_S",
    "NVLS_EFFICIENCY",
    "NVLS_LATENCY_S",
    "best_algorithm",
    "cost",
    "costs",
    "crossover_bytes",
    "latency_floor_s",
    "nvls_all_reduce",
]

# The algorithms of each collective, in the order a tie is resolved (the first wins).
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "all_reduce": ("ring", "recursive_doubling", "rabenseifner", "tree"),
    "all_gather": ("ring", "recursive_doubling"),
    "reduce_scatter": ("ring", "recursive_halving"),
    "broadcast": ("binomial_tree", "scatter_all_gather"),
    "reduce": ("binomial_tree", "rabenseifner"),
    "all_to_all": ("pairwise", "bruck"),
    "scatter": ("binomial_tree",),
    "gather": ("binomial_tree",),
}

# α per step of each link, from NCCL's own cost model (NVIDIA/nccl src/graph/tuning.cc,
# commit 5067397c, ncclTunerConstantsDefaults.hwLatencies, Ring, LL protocol): the
# low-latency protocol NCCL picks for small messages, where α is what matters. NCCL adds
# a base latency per call (baseLatencies: 6.6 µs for Ring/LL) that the α–β model leaves
# out, and LL reaches only part of β: with β the line rate, the model is a lower bound.
LINK_ALPHA_S: dict[str, float] = {
    "nvlink4": 0.6e-6,  # hwLatencies[NVLINK][Ring][LL]
    "ib-ndr": 2.7e-6,  # hwLatencies[NET][Ring][LL]
}

NVLS_LATENCY_S = 25e-6  # tuning.cc hwLatencies[NVLINK][NVLS][Simple]; baseLatencies[NVLS] = 0
NVLS_EFFICIENCY = 0.85  # tuning.cc nvlsEfficiency, Hopper (0.74 for Blackwell)


@dataclass(frozen=True)
class AlphaBeta:
    """One algorithm's α–β time: ``steps``·α + ``wire_factor``·S/β + ``reduce_factor``·S·γ.

    ``wire_factor`` is the bytes each rank sends per byte of S (c in the module table),
    ``latency_s``, ``transfer_s`` and ``reduce_s`` the three terms, ``time_s`` their sum.
    """

    algorithm: str
    steps: int
    wire_factor: float
    reduce_factor: float
    latency_s: float
    transfer_s: float
    reduce_s: float
    time_s: float

    @property
    def latency_share(self) -> float:
        """latency_s / time_s: the part of the time spent on the α terms."""
        return self.latency_s / self.time_s


def _log2_steps(n: int) -> int:
    """⌈log2 n⌉, exactly, for integers (no float rounding at powers of two)."""
    return (n - 1).bit_length()


def _terms(op: str, algorithm: str, n: int) -> tuple[int, float, float]:
    """(k, c, r) of the module table."""
    lg = _log2_steps(n)
    part = (n - 1) / n
    table: dict[tuple[str, str], tuple[int, float, float]] = {
        ("all_reduce", "ring"): (2 * (n - 1), 2 * part, part),
        ("all_reduce", "recursive_doubling"): (lg, float(lg), float(lg)),
        ("all_reduce", "rabenseifner"): (2 * lg, 2 * part, part),
        ("all_reduce", "tree"): (2 * lg, 2.0, 1.0),
        ("all_gather", "ring"): (n - 1, part, 0.0),
        ("all_gather", "recursive_doubling"): (lg, part, 0.0),
        ("reduce_scatter", "ring"): (n - 1, part, part),
        ("reduce_scatter", "recursive_halving"): (lg, part, part),
        ("broadcast", "binomial_tree"): (lg, float(lg), 0.0),
        ("broadcast", "scatter_all_gather"): (lg + n - 1, 2 * part, 0.0),
        ("reduce", "binomial_tree"): (lg, float(lg), float(lg)),
        ("reduce", "rabenseifner"): (2 * lg, 2 * part, part),
        ("all_to_all", "pairwise"): (n - 1, part, 0.0),
        ("all_to_all", "bruck"): (lg, lg / 2, 0.0),
        ("scatter", "binomial_tree"): (lg, part, 0.0),
        ("gather", "binomial_tree"): (lg, part, 0.0),
    }
    return table[(op, algorithm)]


def _check_common(op: str, ranks: int, alpha_s: float, bytes_per_s: float) -> tuple[str, int, float, float]:
    o = check_choice("op", op, tuple(ALGORITHMS))
    n = check_int("ranks", ranks, 2, MAX_GPUS)
    a = check_real("alpha_s", alpha_s, 0, 1.0)
    bw = check_real("bytes_per_s", bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False)
    return o, n, a, bw


def cost(op: str, algorithm: str, *, ranks: int, size_bytes: float, alpha_s: float, bytes_per_s: float,
         gamma_s_per_byte: float = 0.0) -> AlphaBeta:
    """T = k·α + c·S/β + r·S·γ of ``algorithm`` for collective ``op`` (module table).

    Thakur et al. 2005 Sec. 4, e.g. Rabenseifner's all-reduce 2·lg p·α + 2(p−1)/p·nβ +
    (p−1)/p·nγ (their n is our S, their β is our 1/β). γ defaults to 0: on GPUs the
    reduction is fused into the copy and hidden behind the transfer.
    """
    o, n, a, bw = _check_common(op, ranks, alpha_s, bytes_per_s)
    alg = check_choice("algorithm", algorithm, ALGORITHMS[o])
    s = check_real("size_bytes", size_bytes, 0, MAX_BYTES)
    g = check_real("gamma_s_per_byte", gamma_s_per_byte, 0, 1.0)
    k, c, r = _terms(o, alg, n)
    latency, transfer, reduction = k * a, c * s / bw, r * s * g
    return AlphaBeta(alg, k, c, r, latency, transfer, reduction, math.fsum((latency, transfer, reduction)))


def costs(op: str, *, ranks: int, size_bytes: float, alpha_s: float, bytes_per_s: float,
          gamma_s_per_byte: float = 0.0) -> tuple[AlphaBeta, ...]:
    """``cost`` of every algorithm of ``op``, in the order of ``ALGORITHMS[op]``."""
    o = check_choice("op", op, tuple(ALGORITHMS))
    return tuple(cost(o, alg, ranks=ranks, size_bytes=size_bytes, alpha_s=alpha_s, bytes_per_s=bytes_per_s,
                      gamma_s_per_byte=gamma_s_per_byte) for alg in ALGORITHMS[o])


def best_algorithm(op: str, *, ranks: int, size_bytes: float, alpha_s: float, bytes_per_s: float) -> str:
    """The algorithm of ``op`` with the least α–β time (ties: the first of ``ALGORITHMS``).

    E.g. all-reduce: recursive doubling for tiny S (fewest steps), Rabenseifner or the ring
    for large S (least volume); the choice MPICH makes by message size (Thakur Sec. 4).
    """
    found = costs(op, ranks=ranks, size_bytes=size_bytes, alpha_s=alpha_s, bytes_per_s=bytes_per_s)
    return min(found, key=lambda c: c.time_s).algorithm


def latency_floor_s(op: str, *, ranks: int, alpha_s: float) -> float:
    """The least time any algorithm of ``op`` needs for a message of almost no bytes:
    min over algorithms of k·α (for all-reduce, recursive doubling's ⌈log2 n⌉·α)."""
    o = check_choice("op", op, tuple(ALGORITHMS))
    n = check_int("ranks", ranks, 2, MAX_GPUS)
    a = check_real("alpha_s", alpha_s, 0, 1.0)
    return min(_terms(o, alg, n)[0] for alg in ALGORITHMS[o]) * a


def crossover_bytes(op: str, algorithm: str, *, ranks: int, alpha_s: float, bytes_per_s: float) -> float:
    """The message size S* where the latency term equals the bandwidth term,
    k·α = c·S*/β, so S* = k·α·β / c. Below it an algorithm is latency-bound (more than
    half its time is α); above it, bandwidth-bound. For the ring all-reduce
    S* = 2(n−1)α / (2(n−1)/n · 1/β) = n·α·β: it grows with the number of ranks."""
    o, n, a, bw = _check_common(op, ranks, alpha_s, bytes_per_s)
    alg = check_choice("algorithm", algorithm, ALGORITHMS[o])
    k, c, _ = _terms(o, alg, n)
    return k * a * bw / c


def nvls_all_reduce(*, ranks: int, size_bytes: float, bytes_per_s: float) -> AlphaBeta:
    """NVLink SHARP all-reduce as NCCL models it (module docstring; tuning.cc at 5067397c):
    T = 25 µs + (n−1)/n · S / (0.85 · β), one NVLink domain (n ≤ the GPUs of one node)."""
    n = check_int("ranks", ranks, 2, MAX_GPUS)
    s = check_real("size_bytes", size_bytes, 0, MAX_BYTES)
    bw = check_real("bytes_per_s", bytes_per_s, 0, MAX_BYTES_PER_S, lo_inclusive=False)
    # busBw = 2·η·β; algbw = busBw · n / (2(n−1))  →  S / algbw = (n−1)/n · S / (η·β)
    wire = (n - 1) / n / NVLS_EFFICIENCY
    transfer = wire * s / bw
    return AlphaBeta("nvls", 1, wire, 0.0, NVLS_LATENCY_S, transfer, 0.0, math.fsum((NVLS_LATENCY_S, transfer)))
