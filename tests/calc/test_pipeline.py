"""Pipeline parallelism: seed 000 step 5, GPipe (Huang et al. 2018), 1F1B and the
interleaved schedule (Narayanan et al. 2021, Sec. 2.2), and the schedule simulator."""

from __future__ import annotations

import pytest

from calc import pipeline as pp
from calc.models import MODELS, param_count
from calc.pipeline import ScheduleEvent, simulate_schedule, summarize_schedule

M = MODELS["llama2-7b"]
PSI_7B = param_count(M)
GRID = [(p, m) for p in range(1, 9) for m in range(1, 33)]


def test_four_stages_four_microbatches_idle_43_percent() -> None:
    """`pp.bubble` at the default: (p − 1)/(m + p − 1) = 3/7 = 0.4286; each stage is
    busy 12 of 21 time units (backward = 2 × forward)."""
    assert pp.bubble_fraction_of_time(pp=4, microbatches=4) == pytest.approx(0.4286, abs=5e-5)
    assert pp.busy_units(microbatches=4) == 12
    assert pp.total_units(pp=4, microbatches=4) == 21


def test_each_of_four_stages_holds_8_layers_and_27_gb() -> None:
    """`pp.layers_per_gpu` = 8 (L0–7 … L24–31), `pp.state_per_gpu_bytes` = 16Ψ/4."""
    assert pp.layers_per_stage(M.layers, 4) == 8
    assert pp.stage_layers(M.layers, 4) == ((0, 7), (8, 15), (16, 23), (24, 31))
    assert pp.state_per_gpu_bytes(params=PSI_7B, pp=4) == pytest.approx(26.96e9, rel=1e-3)


def test_stages_pass_34_mb_of_activations() -> None:
    """`pp.activation_transfer_bytes`: one 4,096-token sequence, s·h·2 = 33.55e6."""
    assert pp.activation_transfer_bytes(hidden=M.hidden, seq_len=M.seq_len) == pytest.approx(33.55e6, rel=1e-3)


def test_uneven_layers_give_the_first_stages_one_more() -> None:
    assert pp.stage_layers(10, 4) == ((0, 2), (3, 5), (6, 7), (8, 9))
    assert pp.layers_per_stage(10, 4) == 3


def test_megatron_bubble_relative_to_ideal() -> None:
    """Narayanan et al. 2021, Sec. 2.2.1: bubble time / ideal time = (p − 1)/m; Sec.
    2.2.2: (p − 1)/(v·m) with v chunks; the fraction of the total is f = x/(1 + x)."""
    for p, m in GRID:
        x = pp.bubble_over_ideal_time(pp=p, microbatches=m)
        assert x == pytest.approx((p - 1) / m)
        assert pp.bubble_fraction_of_time(pp=p, microbatches=m) == pytest.approx(x / (1 + x))
        for v in (2, 4):
            xv = pp.bubble_over_ideal_time(pp=p, microbatches=m, chunks=v)
            assert xv == pytest.approx((p - 1) / (v * m))
            assert pp.bubble_fraction_of_time(pp=p, microbatches=m, chunks=v) == pytest.approx(xv / (1 + xv))


def test_in_flight_microbatches() -> None:
    """GPipe keeps all m micro-batches' activations, 1F1B at most p (Sec. 2.2.1)."""
    assert pp.in_flight_microbatches(pp=4, microbatches=32, schedule="gpipe") == 32
    assert pp.in_flight_microbatches(pp=4, microbatches=32, schedule="1f1b") == 4
    assert pp.in_flight_microbatches(pp=8, microbatches=3, schedule="1f1b") == 3


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_simulated_bubble_is_p_minus_1_over_m_plus_p_minus_1(schedule: str) -> None:
    """For every p ≤ 8 and m ≤ 32 the dependency-driven simulation idles exactly
    (p − 1)/(m + p − 1) of the time (GPipe Sec. 2.3; Narayanan et al. 2021 Sec. 2.2.1),
    and lasts (m + p − 1)(t_f + t_b)."""
    for p, m in GRID:
        s = summarize_schedule(simulate_schedule(pp=p, microbatches=m, schedule=schedule))
        assert s.bubble_fraction_of_time == pytest.approx(pp.bubble_fraction_of_time(pp=p, microbatches=m), abs=1e-12)
        assert s.total_time == pp.total_units(pp=p, microbatches=m)
        assert s.busy_time == pp.busy_units(microbatches=m)


def test_gpipe_holds_m_and_1f1b_at_most_p_microbatches() -> None:
    """Peak activations in flight: GPipe m on every stage; 1F1B min(p − s, m) on stage
    s, so at most p (Narayanan et al. 2021 Sec. 2.2.1)."""
    for p, m in GRID:
        gpipe = summarize_schedule(simulate_schedule(pp=p, microbatches=m, schedule="gpipe")).peak_in_flight
        assert gpipe == tuple(float(m) for _ in range(p))
        one_f_one_b = summarize_schedule(simulate_schedule(pp=p, microbatches=m, schedule="1f1b")).peak_in_flight
        assert one_f_one_b == tuple(float(min(p - s, m)) for s in range(p))
        assert max(one_f_one_b) <= p


@pytest.mark.parametrize("v", [2, 4])
def test_interleaving_divides_the_bubble_by_v(v: int) -> None:
    """Sec. 2.2.2: with v chunks per GPU the bubble over ideal is (p − 1)/(v·m). It
    holds exactly when m is a multiple of p, and, with Megatron-core's micro-batch
    groups, for every m ≥ p."""
    for p, m in GRID:
        if m < p:
            continue
        s = summarize_schedule(simulate_schedule(pp=p, microbatches=m, schedule="interleaved", chunks=v))
        assert s.bubble_over_ideal_time == pytest.approx(
            pp.bubble_over_ideal_time(pp=p, microbatches=m, chunks=v), abs=1e-9)
        assert s.bubble_fraction_of_time == pytest.approx(
            pp.bubble_fraction_of_time(pp=p, microbatches=m, chunks=v), abs=1e-9)


def test_interleaving_never_loses_to_1f1b() -> None:
    """Even with fewer micro-batches than stages (which Megatron refuses), the
    interleaved schedule's bubble is at most 1F1B's."""
    for p, m in GRID:
        if m < p:
            events = simulate_schedule(pp=p, microbatches=m, schedule="interleaved", chunks=2)
            inter = summarize_schedule(events).bubble_fraction_of_time
            assert inter <= pp.bubble_fraction_of_time(pp=p, microbatches=m) + 1e-12


def test_interleaving_costs_activation_memory() -> None:
    """Korthikanti et al. 2022 Sec. 4.2.3: with interleaving the first stage holds
    p·(1 + (p − 1)/(p·v)) micro-batches' worth of activations instead of p."""
    for p, v in [(4, 2), (8, 2), (4, 4), (8, 3)]:
        s = summarize_schedule(simulate_schedule(pp=p, microbatches=4 * p, schedule="interleaved", chunks=v))
        assert s.peak_in_flight[0] == pytest.approx(p * (1 + (p - 1) / (p * v)))


def test_the_seed_gpipe_chart() -> None:
    """Seed 000's chart: each stage runs forwards 1-4 then backwards 1-4 in 21 units;
    stage 0 starts its first backward at 4 + 3 + 3·2 = 13."""
    events = simulate_schedule(pp=4, microbatches=4, schedule="gpipe")
    assert all(isinstance(e, ScheduleEvent) for e in events)
    assert len(events) == 4 * 4 * 2
    stage0 = [e for e in events if e.stage == 0]
    assert [e.kind for e in stage0] == ["F"] * 4 + ["B"] * 4
    assert [e.microbatch for e in stage0] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert stage0[4].start == 13
    assert max(e.end for e in events) == 21
    # an event is a plain tuple: (stage, start, end, kind, microbatch, chunk)
    assert tuple(events[0]) == (0, 0.0, 1.0, "F", 0, 0)


def test_dependencies_hold_in_every_schedule() -> None:
    """A forward starts after the previous stage's forward, a backward after the next
    stage's backward, and a stage runs one pass at a time."""
    for schedule, v in (("gpipe", 1), ("1f1b", 1), ("interleaved", 2), ("interleaved", 3)):
        p, m = 4, 8
        events = simulate_schedule(pp=p, microbatches=m, schedule=schedule, chunks=max(v, 2))
        end = {(e.kind, e.microbatch, e.chunk, e.stage): e.end for e in events}
        for e in events:
            if e.kind == "F" and (e.stage, e.chunk) != (0, 0):
                prev = (e.stage - 1, e.chunk) if e.stage else (p - 1, e.chunk - 1)
                assert e.start >= end[("F", e.microbatch, prev[1], prev[0])]
            if e.kind == "B" and (e.stage, e.chunk) != (p - 1, v - 1):
                nxt = (e.stage + 1, e.chunk) if e.stage < p - 1 else (0, e.chunk + 1)
                assert e.start >= end[("B", e.microbatch, nxt[1], nxt[0])]
        for s in range(p):
            mine = sorted((e.start, e.end) for e in events if e.stage == s)
            assert all(a[1] <= b[0] for a, b in zip(mine, mine[1:]))


def test_custom_pass_times() -> None:
    """With t_b = t_f the GPipe step is 2(m + p − 1) units."""
    s = summarize_schedule(simulate_schedule(pp=3, microbatches=5, schedule="gpipe", fwd=1, bwd=1))
    assert s.total_time == 2 * (5 + 3 - 1)
    events = simulate_schedule(pp=3, microbatches=5, schedule="1f1b", fwd=0.1, bwd=0.3)
    assert summarize_schedule(events).bubble_fraction_of_time == pytest.approx(2 / 7)


def test_simulator_limits() -> None:
    with pytest.raises(ValueError, match="chunks must be an integer from 2 to 8"):
        simulate_schedule(pp=4, microbatches=4, schedule="interleaved", chunks=1)
    with pytest.raises(ValueError, match="schedule must be one of gpipe, 1f1b, interleaved"):
        simulate_schedule(pp=4, microbatches=4, schedule="zb")
    with pytest.raises(ValueError, match="events must be"):
        summarize_schedule([])


def test_optimizer_bytes_is_k() -> None:
    """(2 + 2 + K)Ψ/p: K = 12 by default (ZeRO Sec. 3.1)."""
    assert pp.state_per_gpu_bytes(params=PSI_7B, pp=4, optimizer_bytes=12) == pp.state_per_gpu_bytes(
        params=PSI_7B, pp=4)
    assert pp.state_per_gpu_bytes(params=PSI_7B, pp=4, optimizer_bytes=4) == pytest.approx(8 * PSI_7B / 4)
