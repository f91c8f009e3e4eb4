"""The α–β cost of collective algorithms: Thakur, Rabenseifner and Gropp 2005 (MPICH),
Patarasuk and Yuan 2009 (ring), NCCL's tuning model (tree, NVLS, per-step latencies)."""

from __future__ import annotations

import math

import pytest

from calc import latency as lat
from calc.collectives import ring_bytes_per_rank
from calc.hardware import INTERCONNECTS

ALPHA, BETA, GAMMA = 2e-6, 25e9, 1e-11  # any values: the tests compare formulas
SIZES = [1.0, 1e3, 1e6, 1e9]
POWERS = [2, 4, 8, 16, 64, 1024]


def t(op: str, alg: str, p: int, n: float, gamma: float = 0.0) -> float:
    return lat.cost(op, alg, ranks=p, size_bytes=n, alpha_s=ALPHA, bytes_per_s=BETA, gamma_s_per_byte=gamma).time_s


@pytest.mark.parametrize("p", POWERS)
@pytest.mark.parametrize("n", SIZES)
def test_the_mpich_papers_equations(p: int, n: float) -> None:
    """Thakur, Rabenseifner, Gropp 2005, Sec. 4, with their β = 1/our β, their n = S, for
    p a power of two (lg p exact)."""
    b = 1 / BETA
    lg = math.log2(p)
    frac = (p - 1) / p
    expected = {
        ("all_gather", "ring"): (p - 1) * ALPHA + frac * n * b,
        ("all_gather", "recursive_doubling"): lg * ALPHA + frac * n * b,
        ("broadcast", "binomial_tree"): lg * (ALPHA + n * b),
        ("broadcast", "scatter_all_gather"): (lg + p - 1) * ALPHA + 2 * frac * n * b,
        ("reduce_scatter", "recursive_halving"): lg * ALPHA + frac * n * b + frac * n * GAMMA,
        ("reduce_scatter", "ring"): (p - 1) * ALPHA + frac * n * b + frac * n * GAMMA,
        ("reduce", "binomial_tree"): lg * (ALPHA + n * b + n * GAMMA),
        ("reduce", "rabenseifner"): 2 * lg * ALPHA + 2 * frac * n * b + frac * n * GAMMA,
        ("all_reduce", "recursive_doubling"): lg * ALPHA + n * lg * b + n * lg * GAMMA,
        ("all_reduce", "rabenseifner"): 2 * lg * ALPHA + 2 * frac * n * b + frac * n * GAMMA,
        ("all_to_all", "bruck"): lg * ALPHA + n / 2 * lg * b,
        ("all_to_all", "pairwise"): (p - 1) * ALPHA + frac * n * b,
        ("scatter", "binomial_tree"): lg * ALPHA + frac * n * b,
        ("gather", "binomial_tree"): lg * ALPHA + frac * n * b,
    }
    for (op, alg), value in expected.items():
        assert t(op, alg, p, n, GAMMA) == pytest.approx(value, rel=1e-12), (op, alg)


@pytest.mark.parametrize("p", POWERS)
def test_ring_all_reduce_of_patarasuk_and_yuan(p: int) -> None:
    """2(p−1)α + 2(p−1)/p·nβ + (p−1)/p·nγ (Patarasuk and Yuan 2009, Sec. 3)."""
    n = 1e8
    assert t("all_reduce", "ring", p, n, GAMMA) == pytest.approx(
        2 * (p - 1) * ALPHA + 2 * (p - 1) / p * n / BETA + (p - 1) / p * n * GAMMA, rel=1e-12)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"])
@pytest.mark.parametrize("p", [2, 3, 7, 8, 1000])
def test_ring_bandwidth_term_is_the_ring_volume(op: str, p: int) -> None:
    alg = "pairwise" if op == "all_to_all" else "ring"
    c = lat.cost(op, alg, ranks=p, size_bytes=3e9, alpha_s=ALPHA, bytes_per_s=BETA)
    assert c.transfer_s * BETA == pytest.approx(ring_bytes_per_rank(op, 3e9, p), rel=1e-12)


def test_nccl_tree_is_log_latency_and_twice_the_message() -> None:
    """NCCL tuning.cc: tree all-reduce latency 2·log2(nodes)·α, algbw = busBw·0.5."""
    c = lat.cost("all_reduce", "tree", ranks=64, size_bytes=1e9, alpha_s=ALPHA, bytes_per_s=BETA)
    assert c.steps == 12 and c.latency_s == pytest.approx(12 * ALPHA) and c.transfer_s == pytest.approx(2e9 / BETA)


def test_nccl_per_step_latencies_and_the_ring_of_8_gpus() -> None:
    """NCCL's LL per-step latency: 0.6 µs on NVLink, 2.7 µs over the network; a ring
    all-reduce of 8 GPUs has 2·7 steps, 8.4 µs (NCCL adds its base 6.6 µs)."""
    assert lat.LINK_ALPHA_S == {"nvlink4": 0.6e-6, "ib-ndr": 2.7e-6}
    ring = lat.cost("all_reduce", "ring", ranks=8, size_bytes=0, alpha_s=lat.LINK_ALPHA_S["nvlink4"],
                    bytes_per_s=INTERCONNECTS["nvlink4"].bytes_per_s)
    assert ring.steps == 14 and ring.latency_s == pytest.approx(8.4e-6) and ring.time_s == ring.latency_s


@pytest.mark.parametrize("p", [2, 3, 8, 64, 1024])
def test_large_messages_ring_and_rabenseifner_move_the_same_bytes(p: int) -> None:
    ring = lat.cost("all_reduce", "ring", ranks=p, size_bytes=1e12, alpha_s=ALPHA, bytes_per_s=BETA)
    rab = lat.cost("all_reduce", "rabenseifner", ranks=p, size_bytes=1e12, alpha_s=ALPHA, bytes_per_s=BETA)
    assert ring.transfer_s == rab.transfer_s
    assert ring.time_s / rab.time_s == pytest.approx(1.0, rel=1e-4)


@pytest.mark.parametrize("p", [2, 4, 8, 64, 1024])
def test_tiny_messages_recursive_doubling_wins_large_ones_it_loses(p: int) -> None:
    # On 2 ranks every algorithm is one exchange of S: the fewest steps win.
    kw = dict(ranks=p, alpha_s=ALPHA, bytes_per_s=BETA)
    assert lat.best_algorithm("all_reduce", size_bytes=8, **kw) == "recursive_doubling"
    assert lat.best_algorithm("all_reduce", size_bytes=1e10, **kw) == ("recursive_doubling" if p == 2 else "rabenseifner")
    assert lat.latency_floor_s("all_reduce", ranks=p, alpha_s=ALPHA) == pytest.approx(math.log2(p) * ALPHA)
    assert lat.best_algorithm("broadcast", size_bytes=8, **kw) == "binomial_tree"
    if p >= 8:
        assert lat.best_algorithm("broadcast", size_bytes=1e10, **kw) == "scatter_all_gather"
        assert lat.best_algorithm("all_to_all", size_bytes=1e10, **kw) == "pairwise"
        assert lat.best_algorithm("all_to_all", size_bytes=8, **kw) == "bruck"


@pytest.mark.parametrize("p", [2, 8, 100, 4096])
def test_crossover_is_where_latency_equals_bandwidth(p: int) -> None:
    """S* = k·α·β/c; for the ring all-reduce S* = n·α·β, growing with n."""
    for op, algs in lat.ALGORITHMS.items():
        for alg in algs:
            s = lat.crossover_bytes(op, alg, ranks=p, alpha_s=ALPHA, bytes_per_s=BETA)
            c = lat.cost(op, alg, ranks=p, size_bytes=s, alpha_s=ALPHA, bytes_per_s=BETA)
            assert c.latency_s == pytest.approx(c.transfer_s, rel=1e-12), (op, alg)
    assert lat.crossover_bytes("all_reduce", "ring", ranks=p, alpha_s=ALPHA, bytes_per_s=BETA) == pytest.approx(
        p * ALPHA * BETA)


def test_ring_crossover_on_nvlink_of_eight_gpus() -> None:
    """8 GPUs, α = 0.6 µs, β = 450 GB/s: S* = 8 · 0.6 µs · 450 GB/s = 2.16 MB."""
    s = lat.crossover_bytes("all_reduce", "ring", ranks=8, alpha_s=0.6e-6, bytes_per_s=450e9)
    assert s == pytest.approx(2.16e6)


def test_nvls_as_nccl_models_it() -> None:
    """25 µs + (n−1)/n·S/(0.85 β); its nccl-tests busbw would be 2·0.85·β for large S."""
    n, s, beta = 8, 8 * 2**30, 450e9
    c = lat.nvls_all_reduce(ranks=n, size_bytes=s, bytes_per_s=beta)
    assert c.latency_s == 25e-6 and c.transfer_s == pytest.approx(7 / 8 * s / (0.85 * beta))
    busbw = s / c.transfer_s * 2 * (n - 1) / n
    assert busbw == pytest.approx(2 * 0.85 * beta)
    assert c.time_s < lat.cost("all_reduce", "ring", ranks=n, size_bytes=s, alpha_s=0.6e-6, bytes_per_s=beta).time_s


def test_bad_arguments_name_themselves() -> None:
    kw = dict(ranks=8, size_bytes=1e6, alpha_s=ALPHA, bytes_per_s=BETA)
    with pytest.raises(ValueError, match="algorithm must be one of ring"):
        lat.cost("all_reduce", "butterfly", **kw)
    with pytest.raises(ValueError, match="ranks must be an integer from 2"):
        lat.cost("all_reduce", "ring", **{**kw, "ranks": 1})
    with pytest.raises(ValueError, match="alpha_s must be"):
        lat.cost("all_reduce", "ring", **{**kw, "alpha_s": -1.0})
    with pytest.raises(ValueError, match="bytes_per_s must be a number greater than 0"):
        lat.crossover_bytes("all_reduce", "ring", ranks=8, alpha_s=ALPHA, bytes_per_s=0)
    with pytest.raises(ValueError, match="op must be one of"):
        lat.latency_floor_s("allreduce", ranks=8, alpha_s=ALPHA)
