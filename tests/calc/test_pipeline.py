"""Pipeline parallelism: seed 000 step 5, GPipe (Huang et al. 2018), 1F1B and the
interleaved schedule (Narayanan et al. 2021, Sec. 2.2), and the schedule simulator."""

from __future__ import annotations

import math

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


# ------------------------------------------------- zero bubble (ZB-H1, ZB-H2) and DualPipe
# Qi et al. 2024, "Zero Bubble (Almost) Pipeline Parallelism" (ICLR 2024, arXiv:2401.10241),
# Sec. 2; DeepSeek-V3 Technical Report (arXiv:2412.19437), Table 2, and deepseek-ai/DualPipe
# (README table, dualpipe/dualpipe.py at 3da1bbe). Times in DeepSeek's notation: F = fwd,
# B = bwd (a full backward, T_B + T_W), W = wgrad, F&B = fwd_bwd.

# (fwd, bwd, wgrad): the ZB paper's T_F = T_B = T_W, then unequal times.
TIMES = [(1, 2, 1), (2, 4, 1), (3, 4, 2), (1, 3, 2), (2, 5, 1.5)]
SPLIT_GRID = [(p, m) for p in range(1, 9) for m in range(1, 33)]


def _idle(schedule: str, p: int, m: int, f: float, b: float, w: float, **kw: float) -> float:
    s = summarize_schedule(simulate_schedule(pp=p, microbatches=m, schedule=schedule, fwd=f, bwd=b, wgrad=w, **kw))
    return s.period - s.busy_time


@pytest.mark.parametrize("times", [t for t in TIMES if t[2] <= t[0]])
def test_zb_h1_bubble_is_p_minus_1_times_f_plus_b_minus_2w(times: tuple[float, float, float]) -> None:
    """ZB-H1's idle time per stage is (p − 1)(F + B − 2W), DeepSeek-V3 Table 2's ZB1P row,
    = (p − 1)(T_F + T_B − T_W), once m ≥ p and T_W ≤ T_F; with T_F = T_B = T_W a third
    of 1F1B's (p − 1)(F + B) (Qi et al. 2024 Sec. 2.1, "one-third of 1F1B's size")."""
    f, b, w = times
    for p, m in SPLIT_GRID:
        if m < p:
            continue
        formula = pp.bubble_time(pp=p, schedule="zb-h1", fwd=f, bwd=b, wgrad=w)
        assert formula == pytest.approx((p - 1) * (f + b - 2 * w))
        events = simulate_schedule(pp=p, microbatches=m, schedule="zb-h1", fwd=f, bwd=b, wgrad=w)
        s = summarize_schedule(events)
        assert s.total_time - s.busy_time == pytest.approx(formula, abs=1e-9), (p, m)
        assert s.period == s.total_time  # a trapezoid: stage 0 spans the whole step
    one_f_one_b = pp.bubble_time(pp=8, schedule="1f1b")
    assert pp.bubble_time(pp=8, schedule="zb-h1") == pytest.approx(one_f_one_b / 3)


def test_zb_h1_w_longer_than_f_cannot_fill_more_than_f() -> None:
    """Where T_W > T_F the s delayed W of stage s cannot shorten a wait of T_F: the
    simulated idle time is (p − 1)(T_F + T_B − min(T_W, T_F)) = (p − 1)·T_B, more than
    the formula (which the paper states for T_F = T_B = T_W)."""
    for p, m in [(4, 8), (8, 16), (3, 9)]:
        for f, b, w in [(1, 3, 2), (1, 2.5, 1.5), (1, 5, 2)]:
            assert _idle("zb-h1", p, m, f, b, w) == pytest.approx((p - 1) * (b - w))
            assert _idle("zb-h1", p, m, f, b, w) > pp.bubble_time(pp=p, schedule="zb-h1", fwd=f, bwd=b, wgrad=w)


def test_bubble_share_turns_idle_time_into_the_step_fraction() -> None:
    """(p − 1)(F + B) over m(F + B) + (p − 1)(F + B) is (p − 1)/(m + p − 1)."""
    for p, m in GRID:
        share = pp.bubble_share(bubble=pp.bubble_time(pp=p, schedule="1f1b"), busy=pp.busy_units(microbatches=m))
        assert share == pytest.approx(pp.bubble_fraction_of_time(pp=p, microbatches=m))


def test_1f1b_bubble_time_is_table_2s_row() -> None:
    """DeepSeek-V3 Table 2, 1F1B: (PP − 1)(F + B), what the 1F1B simulation idles."""
    for p, m in GRID:
        if m >= p:
            s = summarize_schedule(simulate_schedule(pp=p, microbatches=m, schedule="1f1b", fwd=1, bwd=2))
            assert s.total_time - s.busy_time == pp.bubble_time(pp=p, schedule="1f1b") == (p - 1) * 3


def test_zb_h1_holds_p_microbatches_like_1f1b() -> None:
    """Qi et al. 2024 Sec. 2.1: ZB-H1's peak memory is 1F1B's, p·M_B, on every stage
    (1F1B: only on stage 0), counting a micro-batch from its F to its W."""
    for p, m in SPLIT_GRID:
        peaks = summarize_schedule(simulate_schedule(pp=p, microbatches=m, schedule="zb-h1")).peak_in_flight
        assert peaks == tuple(float(min(p, m)) for _ in range(p)), (p, m)
        assert max(peaks) == pp.in_flight_microbatches(pp=p, microbatches=m, schedule="zb-h1")
        assert max(peaks) == pp.in_flight_microbatches(pp=p, microbatches=m, schedule="1f1b")


@pytest.mark.parametrize("times", TIMES)
def test_zb_h2_period_bubble_is_zero_with_equal_times(times: tuple[float, float, float]) -> None:
    """ZB-H2 (Sec. 2.2): with 2p − 1 micro-batches in flight the step is a parallelogram,
    and when steps follow each other as soon as each stage is free (post-validation,
    Sec. 4), each stage idles max(0, (p − 1)(T_F + T_B − 2T_W)) per step: zero for
    T_F = T_B = T_W. Within one isolated step the last stage still waits
    (p − 1)·max(T_F, T_F + T_B − 2T_W)."""
    f, b, w = times
    t_b = b - w
    for p, m in SPLIT_GRID:
        if m < 2 * p - 1:
            continue
        s = summarize_schedule(simulate_schedule(pp=p, microbatches=m, schedule="zb-h2", fwd=f, bwd=b, wgrad=w))
        formula = pp.bubble_time(pp=p, schedule="zb-h2", fwd=f, bwd=b, wgrad=w)
        assert formula == pytest.approx(max(0.0, (p - 1) * (f + t_b - 2 * w)))
        assert s.period - s.busy_time == pytest.approx(formula, abs=1e-9), (p, m)
        assert s.total_time - s.busy_time == pytest.approx((p - 1) * max(f, f + t_b - 2 * w), abs=1e-9)
    assert pp.bubble_time(pp=8, schedule="zb-h2") == 0


def test_zb_h2_holds_2p_minus_1_microbatches() -> None:
    """Qi et al. 2024 Sec. 2.2: ZB-H2's peak is (2p − 1)·M_B, about twice 1F1B's."""
    for p, m in SPLIT_GRID:
        peaks = summarize_schedule(simulate_schedule(pp=p, microbatches=m, schedule="zb-h2")).peak_in_flight
        assert max(peaks) == min(2 * p - 1, m) == pp.in_flight_microbatches(pp=p, microbatches=m, schedule="zb-h2")


DUALPIPE_GRID = [(p, m) for p in (2, 4, 6, 8) for m in range(2 * p, 33, 2)]


def test_dualpipe_holds_pp_plus_1_microbatches_and_two_stages() -> None:
    """DeepSeek-V3 Table 2 (and the DualPipe README): activations PP + 1 per device,
    parameters 2× (device s holds stages s and PP − 1 − s)."""
    for p, m in DUALPIPE_GRID:
        for times in TIMES:
            f, b, w = times
            peaks = summarize_schedule(simulate_schedule(pp=p, microbatches=m, schedule="dualpipe", fwd=f, bwd=b,
                                                         wgrad=w)).peak_in_flight
            assert peaks == tuple(float(p + 1) for _ in range(p)), (p, m, times)
        assert pp.in_flight_microbatches(pp=p, microbatches=m, schedule="dualpipe") == p + 1
    assert pp.parameter_copies("dualpipe") == 2
    assert [pp.parameter_copies(s) for s in ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2")] == [1] * 5
    assert pp.state_per_gpu_bytes(params=PSI_7B, pp=4, copies=2) == 2 * pp.state_per_gpu_bytes(params=PSI_7B, pp=4)


# Where Table 2's DualPipe bubble is exact: T_F = T_B ≥ T_W, i.e. F = B − W ≥ W, with
# any F&B (fwd, bwd, wgrad, fwd_bwd); binary fractions, so the float times are exact.
TABLE_2_TIMES = [(1, 2, 1, 3), (1, 2, 1, 2), (1, 2, 1, 2.25), (1, 1.5, 0.5, 2.5), (1, 1.5, 0.5, 1.5),
                 (2, 3, 1, 5), (2, 3, 1, 3.75), (1, 1.25, 0.25, 2.25), (1.5, 3, 1.5, 4.5)]


def test_dualpipe_bubble_is_table_2_when_t_f_equals_t_b() -> None:
    """DeepSeek-V3 Table 2: DualPipe idles (PP/2 − 1)(F&B + B − 3W) per device and
    step, for any m. The simulation of dualpipe.py's order gives exactly that on the
    device that idles most, for every (p, m) and F&B, when T_F = T_B ≥ T_W; with
    F&B = F + B every device idles that long."""
    for p, m in DUALPIPE_GRID:
        for f, b, w, fb in TABLE_2_TIMES:
            formula = pp.bubble_time(pp=p, schedule="dualpipe", fwd=f, bwd=b, wgrad=w, fwd_bwd=fb)
            assert formula == (p // 2 - 1) * (fb + b - 3 * w)
            idle = dualpipe_idle(p, m, fwd=f, bwd=b, wgrad=w, fwd_bwd=fb)
            assert max(idle) == formula, (p, m, f, b, w, fb)
            if fb == f + b:
                assert set(idle) == {formula}, (p, m, f, b, w)
    assert pp.bubble_time(pp=8, schedule="dualpipe") == 3 * (3 + 2 - 3)


def test_dualpipe_bubble_differs_from_table_2_unless_t_f_equals_t_b() -> None:
    """Outside T_F = T_B ≥ T_W the formula is not the simulated bubble: a longer input
    gradient T_B hides more (B = 4 or 5 below), a T_F longer than T_B or a T_W longer
    than T_F (B = 4 with F = 3, W = 2; F = 1, B = 3, W = 2) shows more. It still does
    not grow with m."""
    below, above = [(2, 4, 1), (2, 5, 1.5)], [(3, 4, 2), (1, 3, 2)]
    for p, m in DUALPIPE_GRID:
        for f, b, w in below + above:
            formula = pp.bubble_time(pp=p, schedule="dualpipe", fwd=f, bwd=b, wgrad=w)
            idle = max(dualpipe_idle(p, m, fwd=f, bwd=b, wgrad=w))
            assert idle == max(dualpipe_idle(p, 2 * p, fwd=f, bwd=b, wgrad=w)), (p, m)
            if p == 2:
                assert idle == formula == 0
            elif (f, b, w) in below:
                assert idle < formula, (p, m, f, b, w)
            else:
                assert idle > formula, (p, m, f, b, w)


def dualpipe_idle(p: int, m: int, **kw: float) -> list[float]:
    """Each device's idle time in the step: the step's length minus its busy time
    (busy times differ when F&B < F + B)."""
    events = simulate_schedule(pp=p, microbatches=m, schedule="dualpipe", **kw)
    total = max(e.end for e in events)
    return [total - math.fsum(e.end - e.start for e in events if e.stage == s) for s in range(p)]


# DeepSeek-V3 Fig. 5, as the DualPipe README draws it (images/dualpipe.png at 3da1bbe):
# 8 PP ranks, 20 micro-batches, one character a cell: F forward, B a backward cell (a
# whole backward and the backward of an F&B pair are two, an input gradient one), W a
# weight gradient, "." empty. F&B pairs are an F and two B cells.
FIG_5 = (
    "FFFFFFFFBWFBWFBWFFBB...FBBFBBFBBFBBFBB.BBFBB.BBFBB.BBFBBBBBWBWBWBW",
    ".FFFFFFFFBWFBWFFBB..FBBFBBFBBFBBFBBFBBFBB.BBFBB.BBFBB.BBBBBBWBWBWW",
    "..FFFFFFFFBWFFBB.FBBFBBFBBFBBFBBFBBFBBFBBFBB.BBFBB.BB.BBBBBBBWBWWW",
    "...FFFFFFFFFBBFBBFBBFBBFBBFBBFBBFBBFBBFBBFBBFBB.BB.BB.BBBBBBBBWWWW",
    "...FFFFFFFFFBBFBBFBBFBBFBBFBBFBBFBBFBBFBBFBBFBB.BB.BB.BBBBBBBBWWWW",
    "..FFFFFFFFBWFFBB.FBBFBBFBBFBBFBBFBBFBBFBBFBB.BBFBB.BB.BBBBBBBWBWWW",
    ".FFFFFFFFBWFBWFFBB..FBBFBBFBBFBBFBBFBBFBB.BBFBB.BBFBB.BBBBBBWBWBWW",
    "FFFFFFFFBWFBWFBWFFBB...FBBFBBFBBFBBFBB.BBFBB.BBFBB.BBFBBBBBWBWBWBW",
)


def test_dualpipe_order_and_step_are_figure_5() -> None:
    """The order transcribed from DualPipe.step, drawn cell by cell, is each row of
    Fig. 5 without its empty cells; simulated with Fig. 5's times (F = 1, B = 2, W = 1,
    F&B = 3) the step lasts the figure's 66 cells and every device idles its 6, which
    is Table 2's (8/2 − 1)(3 + 2 − 3)."""
    cells = {"F": "F", "B": "B", "W": "W", "BW": "BB", "FB": "FBB"}
    for s, row in enumerate(FIG_5):
        assert "".join(cells[op[0]] for op in pp._dualpipe_order(8, 20, s)) == row.replace(".", ""), s
    idle = dualpipe_idle(8, 20, fwd=1, bwd=2, wgrad=1, fwd_bwd=3)
    events = simulate_schedule(pp=8, microbatches=20, schedule="dualpipe")
    assert max(e.end for e in events) == len(FIG_5[0]) == 66
    assert idle == [row.count(".") for row in FIG_5] == [6] * 8
    assert pp.bubble_time(pp=8, schedule="dualpipe", fwd=1, bwd=2, wgrad=1, fwd_bwd=3) == 6
    # the first device waits in the same 3 cells (20-22) as in the figure, for the
    # backward of micro-batch 0 to come back
    mine = sorted((e.start, e.end) for e in events if e.stage == 0)
    gaps = [(a[1], b[0]) for a, b in zip(mine, mine[1:]) if a[1] < b[0]]
    assert gaps[0] == (20, 23) and FIG_5[0][20:23] == "..." and FIG_5[0][19] + FIG_5[0][23] == "BF"


@pytest.mark.parametrize("schedule", ["zb-h1", "zb-h2", "dualpipe"])
def test_every_pass_runs_once_and_dependencies_hold(schedule: str) -> None:
    """Every micro-batch's F, B and W appear exactly once per stage (and chunk); a forward
    starts after the forward one stage earlier, a B after the B one stage later (the
    last stage's after its own F), a W after its own B; a stage runs one pass at a
    time. DualPipe's direction 1 runs from the last device to the first."""
    shapes = DUALPIPE_GRID if schedule == "dualpipe" else SPLIT_GRID
    for p, m in shapes:
        for f, b, w in TIMES[:3]:
            events = simulate_schedule(pp=p, microbatches=m, schedule=schedule, fwd=f, bwd=b, wgrad=w)
            key = [(e.kind, e.microbatch, e.chunk, e.stage) for e in events]
            assert len(key) == len(set(key)) == 3 * m * p
            end = {k: e.end for k, e in zip(key, events)}
            start = {k: e.start for k, e in zip(key, events)}
            for kind, i, c, s in key:
                step = -1 if c == 1 else 1
                first, last = (p - 1, 0) if step == -1 else (0, p - 1)
                if schedule == "dualpipe":
                    assert c == (0 if i < m // 2 else 1)
                else:
                    assert c == 0
                if kind == "F" and s != first:
                    assert start[(kind, i, c, s)] >= end[("F", i, c, s - step)]
                if kind == "B":
                    before = ("F", i, c, s) if s == last else ("B", i, c, s + step)
                    assert start[(kind, i, c, s)] >= end[before]
                if kind == "W":
                    assert start[(kind, i, c, s)] >= end[("B", i, c, s)]
            for s in range(p):
                mine = sorted((e.start, e.end) for e in events if e.stage == s)
                assert all(x[1] <= y[0] for x, y in zip(mine, mine[1:]))


def test_pass_times_split_the_backward() -> None:
    """B lasts bwd − wgrad and W wgrad; DualPipe's F&B pairs last fwd_bwd and are drawn
    as F, B, W back to back, scaled."""
    events = simulate_schedule(pp=4, microbatches=8, schedule="zb-h1", fwd=2, bwd=5, wgrad=1.5)
    assert {e.kind: e.end - e.start for e in events} == {"F": 2, "B": 3.5, "W": 1.5}
    spans = pp.overlapped_spans(pp=4, microbatches=8, fwd=1, bwd=2, wgrad=1, fwd_bwd=2)
    assert spans and all(end - start == pytest.approx(2) for _, start, end in spans)
    # dualpipe.py: per device 2·step_4 + step_5 pairs, step_4 = m/2 − p + hr + 1,
    # step_5 = p/2 − hr − 1 (hr = min(rank, p − 1 − rank)), less one on the two middle
    # devices, which do not overlap their first pair: p = 4, m = 8 gives 3 per device.
    assert len(pp.overlapped_spans(pp=4, microbatches=8)) == 4 * 3


def test_split_schedules_validate_their_arguments() -> None:
    with pytest.raises(ValueError, match="pp must be even for dualpipe, got 3"):
        simulate_schedule(pp=3, microbatches=12, schedule="dualpipe")
    with pytest.raises(ValueError, match="microbatches must be an even number of at least 2·pp = 8"):
        simulate_schedule(pp=4, microbatches=6, schedule="dualpipe")
    with pytest.raises(ValueError, match="microbatches must be an even number"):
        simulate_schedule(pp=4, microbatches=9, schedule="dualpipe")
    with pytest.raises(ValueError, match="wgrad must be less than bwd = 2, got 2"):
        simulate_schedule(pp=4, microbatches=8, schedule="zb-h1", wgrad=2)
    with pytest.raises(ValueError, match="fwd_bwd must be"):
        simulate_schedule(pp=4, microbatches=8, schedule="dualpipe", fwd_bwd=4)
    with pytest.raises(ValueError, match="pp must be even for dualpipe"):
        pp.bubble_time(pp=5, schedule="dualpipe")
    # the older schedules ignore wgrad: bwd = 1 with the default wgrad = 1 still runs
    assert simulate_schedule(pp=2, microbatches=2, schedule="1f1b", bwd=1, wgrad=1)


# -- planning: micro-batches for a bubble target, point-to-point messages ----------------


@pytest.mark.parametrize("target", [0.01, 0.05, 0.1, 0.25, 0.5])
@pytest.mark.parametrize("v", [1, 2, 4])
def test_microbatches_for_bubble_is_the_fewest_that_reach_the_target(target: float, v: int) -> None:
    """The returned m meets (p − 1)/(v·m + p − 1) ≤ f and m − 1 does not."""
    for p in range(1, 33):
        m = pp.microbatches_for_bubble(pp=p, bubble=target, chunks=v)
        assert pp.bubble_fraction_of_time(pp=p, microbatches=m, chunks=v) <= target + 1e-12
        if m > 1:
            assert pp.bubble_fraction_of_time(pp=p, microbatches=m - 1, chunks=v) > target


def test_bubble_target_of_ten_percent_needs_nine_micro_batches_per_idle_slot() -> None:
    """(p − 1)/(m + p − 1) ≤ 0.1 ⇔ m ≥ 9(p − 1): 27 for p = 4, 63 for p = 8; a slider's
    0.01 + 9 × 0.01 is the same target."""
    assert pp.bubble_target_coefficient(0.1) == 9
    assert pp.microbatches_for_bubble(pp=4, bubble=0.1) == 27
    assert pp.microbatches_for_bubble(pp=8, bubble=0.1) == 63
    assert pp.microbatches_for_bubble(pp=4, bubble=0.01 + 9 * 0.01) == 27
    assert pp.microbatches_for_bubble(pp=1, bubble=0.1) == 1
    for bad in (0, 1, -0.1, 1.5):
        with pytest.raises(ValueError, match="bubble"):
            pp.microbatches_for_bubble(pp=4, bubble=bad)


def test_interleaving_multiplies_point_to_point_messages_by_about_v() -> None:
    """Narayanan et al. 2021 Sec. 2.2.2: the communication grows v-fold; per micro-batch
    2(v·p − 1) messages, 2(p − 1) without interleaving."""
    assert pp.p2p_messages_per_microbatch(pp=8) == 14
    assert pp.p2p_messages_per_microbatch(pp=8, chunks=4) == 62
    for p in range(2, 33):
        for v in (2, 4, 8):
            ratio = pp.p2p_messages_per_microbatch(pp=p, chunks=v) / pp.p2p_messages_per_microbatch(pp=p)
            assert v <= ratio <= 2 * v
