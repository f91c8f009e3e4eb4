"""Collectives: ring costs and bus bandwidth (nccl-tests PERFORMANCE.md), and the
simulations the `collectives` widget draws."""

from __future__ import annotations

import pytest

from calc import collectives as c
from calc.collectives import (
    OPS,
    RingStep,
    algbw,
    bus_factor,
    busbw,
    chunk_bounds,
    ring_all_reduce_bytes_per_rank,
    ring_all_reduce_steps,
    ring_bytes_per_rank,
    run,
    transfer_seconds,
)

RANKS = list(range(2, 9))


def vectors(n: int, length: int) -> list[list[int]]:
    """Distinct integers per rank and element, so every mistake shows."""
    return [[100 * r + i + 1 for i in range(length)] for r in range(n)]


@pytest.mark.parametrize("n", RANKS)
def test_bus_factors_follow_nccl_tests(n: int) -> None:
    """nccl-tests PERFORMANCE.md: all_reduce 2(n−1)/n; all_gather, reduce_scatter
    (and all_to_all, scatter, gather in src/*.cu) (n−1)/n; broadcast, reduce 1."""
    assert bus_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
    for op in ("all_gather", "reduce_scatter", "all_to_all", "scatter", "gather"):
        assert bus_factor(op, n) == pytest.approx((n - 1) / n)
    assert bus_factor("broadcast", n) == bus_factor("reduce", n) == 1.0


def test_all_reduce_sends_almost_twice_the_message() -> None:
    """Seed 000 step 2: 2(N − 1)/N barely grows with N, towards 2."""
    assert ring_all_reduce_bytes_per_rank(1e9, 8) == pytest.approx(1.75e9)
    assert ring_all_reduce_bytes_per_rank(1e9, 1024) == pytest.approx(1.998e9, rel=1e-3)
    assert ring_all_reduce_bytes_per_rank(1e9, 1) == 0.0
    assert ring_bytes_per_rank("all_gather", 8e9, 8) == pytest.approx(7e9)


def test_bandwidth_arithmetic_of_a_benchmark() -> None:
    """nccl-tests: algbw = S/t, busbw = algbw × factor. 1 GB all-reduced on 8 ranks
    in 10 ms: algbw 100 GB/s, busbw 175 GB/s."""
    assert algbw(1e9, 0.01) == pytest.approx(100e9)
    assert busbw("all_reduce", ranks=8, size_bytes=1e9, time_s=0.01) == pytest.approx(175e9)
    assert transfer_seconds(50e9, 50e9) == 1.0


@pytest.mark.parametrize("n", RANKS)
def test_simulations_follow_the_definitions(n: int) -> None:
    """Each collective, run on n ranks, gives what MPI/NCCL define."""
    data = vectors(n, 2 * n)
    total = tuple(sum(col) for col in zip(*data))
    chunk = 2
    assert c.broadcast(data, root=1) == tuple(tuple(data[1]) for _ in range(n))
    assert c.scatter(data, root=0) == tuple(
        tuple(data[0][i * chunk : (i + 1) * chunk]) for i in range(n)
    )
    gathered = tuple(x for row in data for x in row)
    assert c.gather(data, root=n - 1)[n - 1] == gathered
    assert c.gather(data, root=n - 1)[0] == tuple(data[0])
    assert c.reduce(data, root=0)[0] == total
    assert c.reduce(data, root=0)[1] == tuple(data[1])
    assert c.all_gather(data) == tuple(gathered for _ in range(n))
    assert c.reduce_scatter(data) == tuple(total[i * chunk : (i + 1) * chunk] for i in range(n))
    assert c.all_reduce(data) == tuple(total for _ in range(n))
    a2a = c.all_to_all(data)
    for j in range(n):
        assert a2a[j] == tuple(x for i in range(n) for x in data[i][j * chunk : (j + 1) * chunk])


@pytest.mark.parametrize("n", RANKS)
def test_all_reduce_is_reduce_scatter_then_all_gather(n: int) -> None:
    """The identity ZeRO relies on (Rajbhandari et al. 2019, Sec. 7.2.1)."""
    data = vectors(n, 3 * n)
    assert c.all_gather([list(x) for x in c.reduce_scatter(data)]) == c.all_reduce(data)


def test_all_to_all_twice_is_the_identity() -> None:
    data = vectors(4, 8)
    assert c.all_to_all([list(x) for x in c.all_to_all(data)]) == tuple(map(tuple, data))


@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize("length", [1, 5, 16])
def test_ring_all_reduce_ends_at_the_sum(n: int, length: int) -> None:
    """Ring all-reduce (reduce-scatter then all-gather, n − 1 steps each) leaves every
    rank with the element-wise sum, for any vector length (uneven chunks too)."""
    data = vectors(n, length)
    steps = ring_all_reduce_steps(data)
    assert len(steps) == 1 + 2 * (n - 1)
    assert steps[0].state == tuple(map(tuple, data))
    assert steps[-1].state == c.all_reduce(data)
    assert all(isinstance(s, RingStep) for s in steps)
    assert [s.phase for s in steps] == ["start"] + ["reduce_scatter"] * (n - 1) + ["all_gather"] * (n - 1)
    assert steps[-1].contributors == tuple(tuple(tuple(range(n)) for _ in range(n)) for _ in range(n))


@pytest.mark.parametrize("n", RANKS)
def test_ring_reduce_scatter_leaves_each_rank_one_summed_chunk(n: int) -> None:
    """After n − 1 reduce-scatter steps rank r holds the full sum of chunk (r+1) mod n."""
    data = vectors(n, n)
    mid = ring_all_reduce_steps(data)[n - 1]
    total = c.all_reduce(data)[0]
    for r in range(n):
        k = (r + 1) % n
        assert mid.state[r][k] == total[k]
        assert mid.contributors[r][k] == tuple(range(n))


@pytest.mark.parametrize("n", RANKS)
def test_ring_sends_2_n_minus_1_chunks_per_rank(n: int) -> None:
    """Every step each rank sends one chunk to its right neighbour: 2(n − 1) chunks of
    S/n, i.e. the 2(n − 1)/n of PERFORMANCE.md."""
    steps = ring_all_reduce_steps(vectors(n, n))
    sent = [0] * n
    for step in steps[1:]:
        assert sorted(src for src, _, _ in step.sends) == list(range(n))
        for src, dst, _ in step.sends:
            assert dst == (src + 1) % n
            sent[src] += 1
    assert all(k / n == pytest.approx(bus_factor("all_reduce", n)) for k in sent)


def test_chunk_bounds_split_evenly() -> None:
    assert chunk_bounds(10, 4) == ((0, 3), (3, 6), (6, 8), (8, 10))
    assert chunk_bounds(2, 4) == ((0, 1), (1, 2), (2, 2), (2, 2))


def test_floats_sum_exactly_rounded() -> None:
    assert c.all_reduce([[0.1], [0.2], [0.3]])[0][0] == 0.6


def test_run_dispatches_every_op() -> None:
    data = vectors(4, 8)
    for op in OPS:
        assert len(run(op, data)) == 4


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([[1, 2], [3]], r"data\[1\] must have the same length"),
        ([[1, "x"]], r"data\[0\]\[1\] must be a number"),
        ("abc", "data must be a list"),
        ([[True]], r"data\[0\]\[0\] must be a number"),
    ],
)
def test_bad_vectors_are_rejected(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        c.all_reduce(data)  # type: ignore[arg-type]


def test_scatter_needs_a_divisible_vector() -> None:
    with pytest.raises(ValueError, match="multiple of the number of ranks"):
        c.scatter([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(ValueError, match="root must be an integer from 0 to 1"):
        c.broadcast([[1], [2]], root=2)


def test_a_chunk_is_the_message_over_the_ranks() -> None:
    """nccl-tests PERFORMANCE.md: all-gather's S is its output, each rank contributing
    S/n; a ring step moves one chunk, and n − 1 of them make (n − 1)/n · S."""
    assert c.chunk_bytes(1e9, 8) == pytest.approx(125e6)
    for n in RANKS:
        assert (n - 1) * c.chunk_bytes(1e10, n) == pytest.approx(ring_bytes_per_rank("all_gather", 1e10, n))


def test_ring_seconds_is_the_bandwidth_term() -> None:
    """T = factor · S / β: all-gather of 1 GB on 8 ranks over InfiniBand NDR (50 GB/s):
    7/8 of 20 ms; all-reduce twice that."""
    assert c.ring_seconds("all_gather", size_bytes=1e9, ranks=8, bytes_per_s=50e9) == pytest.approx(17.5e-3)
    assert c.ring_seconds("all_reduce", size_bytes=1e9, ranks=8, bytes_per_s=50e9) == pytest.approx(35e-3)


def test_datasheet_and_node_bandwidths() -> None:
    """H100 datasheet: NVLink 900 GB/s, the sum of 450 GB/s each way; DGX H100: eight
    400 Gb/s adapters, 400 GB/s per direction together."""
    assert c.both_directions_bytes_per_s(450e9) == pytest.approx(900e9)
    assert c.aggregate_bytes_per_s(50e9, 8) == pytest.approx(400e9)
    with pytest.raises(ValueError, match="links"):
        c.aggregate_bytes_per_s(50e9, 0)
