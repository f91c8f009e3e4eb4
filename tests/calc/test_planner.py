"""The planner (calc.planner): Megatron-LM 2021's layouts fit on their hardware, its
training-time estimates come back within 5%, and the search keeps its invariants."""

from __future__ import annotations

import math
from typing import Any

import pytest

from calc import planner as pl
from calc.compute import megatron_training_seconds
from calc.hardware import GPUS, GPUS_PER_NODE, INTERCONNECTS
from calc.models import MEGATRON_MODELS, MODELS, megatron_param_count, param_count
from calc.zero import sent_per_gpu_bytes

DAY = 86_400.0
V, S = 51_200, 2_048
# Selene (Narayanan et al. 2021, Sec. 5): DGX A100 80 GB nodes, NVLink 3 / NVSwitch
# 600 GB/s bidirectional = 300 GB/s per GPU each way (calc.hardware INTERCONNECTS
# "nvlink3"), eight 200 Gb/s HDR InfiniBand adapters per node, one per GPU: 25 GB/s
# ("ib-hdr").
A100 = dict(memory_bytes=GPUS["a100-80gb"].memory_bytes, intra_bytes_per_s=INTERCONNECTS["nvlink3"].bytes_per_s,
            inter_bytes_per_s=INTERCONNECTS["ib-hdr"].bytes_per_s, gpus_per_node=GPUS_PER_NODE)

# Narayanan et al. 2021, Table 1 (weak scaling, V = 51,200, s = 2,048):
# params (B), heads, hidden, layers, TP, PP, GPUs, batch, achieved TFLOP/s per GPU
MEGATRON_TABLE_1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
]


def table1_plan(row: tuple, **over: Any) -> pl.Plan:
    _, heads, hidden, layers, _, _, gpus, batch, tflops = row
    kw = dict(params=megatron_param_count(layers=layers, hidden=hidden, vocab=V, seq_len=S), layers=layers, hidden=hidden,
              heads=heads, seq_len=S, tokens=300e9, gpus=gpus, flops_per_gpu=tflops * 1e12,
              global_batch=batch, recompute="full", **A100)
    return pl.plan(**{**kw, **over})


def gpt3_plan(**over: Any) -> pl.Plan:
    """GPT-3 175B, 300B tokens, 1,024 A100s, B = 1,536, X = 140 TFLOP/s (Narayanan et
    al. 2021, Sec. 5.1, the "34 days" estimate)."""
    kw = dict(params=megatron_param_count(layers=96, hidden=12288, vocab=V, seq_len=S), layers=96, hidden=12288, heads=96,
              seq_len=S, tokens=300e9, gpus=1024, flops_per_gpu=140e12, global_batch=1536,
              recompute="full", **A100)
    return pl.plan(**{**kw, **over})


def trillion_plan(**over: Any) -> pl.Plan:
    """The 1T model (Table 1, last row), 450B tokens, 3,072 A100s, B = 3,072, X = 163
    TFLOP/s (Sec. 5.1, the "84 days" estimate)."""
    kw = dict(params=megatron_param_count(layers=128, hidden=25600, vocab=V, seq_len=S), layers=128, hidden=25600, heads=160,
              seq_len=S, tokens=450e9, gpus=3072, flops_per_gpu=163e12, global_batch=3072,
              recompute="full", **A100)
    return pl.plan(**{**kw, **over})


def llama_plan(model: str = "llama2-7b", **over: Any) -> pl.Plan:
    m = MODELS[model]
    kw = dict(params=param_count(m), layers=m.layers, hidden=m.hidden, heads=m.heads,
              seq_len=m.seq_len, tokens=2e12, gpus=256, memory_bytes=80e9, flops_per_gpu=150e12,
              intra_bytes_per_s=450e9, inter_bytes_per_s=50e9, global_batch=1024,
              recompute="selective")
    return pl.plan(**{**kw, **over})


# -- Megatron-LM 2021 ------------------------------------------------------------------


@pytest.mark.parametrize("row", MEGATRON_TABLE_1, ids=lambda r: f"{r[0]}B")
def test_every_table1_layout_fits_on_80gb_a100s(row: tuple) -> None:
    """Table 1's (t, p) on its GPU count and batch, full recomputation, no ZeRO (the
    2021 runs had none): some micro-batch count fits in 80 GB."""
    _, _, _, _, tp, pp, gpus, _, _ = row
    plan = table1_plan(row)
    ours = [x for x in plan.layouts if (x.tp, x.pp, x.zero_stage) == (tp, pp, 0)]
    assert ours and all(x.dp == gpus // (tp * pp) for x in ours)
    fitting = [x for x in ours if x.fits]
    assert fitting, [(x.microbatches, x.reason, x.memory_bytes) for x in ours]
    assert all(x.reason in ("", "memory") for x in ours)
    # micro-batch size 1, as the paper's largest runs use, fits too
    assert any(x.micro_batch == 1 for x in fitting)


def test_gpt3_175b_takes_34_days_as_narayanan_et_al_estimate() -> None:
    """Sec. 5.1: 8·T·P/(n·X) = 34 days. The planner's best layout, X = 140 TFLOP/s taken
    as the sustained rate while computing, lands within 5% of it."""
    best = gpt3_plan().best
    assert best is not None
    days = best.run_s / DAY
    assert days == pytest.approx(34, rel=0.05)
    eq4 = megatron_training_seconds(params=175e9, tokens=300e9, gpus=1024, flops_per_gpu=140e12)
    assert eq4 / DAY == pytest.approx(34, rel=0.01)
    assert best.run_s == pytest.approx(eq4, rel=0.05)
    # the planner never beats the bubble- and communication-free time
    assert best.run_s >= gpt3_plan().spec.ideal_seconds


def test_one_trillion_parameters_take_84_days() -> None:
    best = trillion_plan().best
    assert best is not None
    assert best.run_s / DAY == pytest.approx(84, rel=0.05)
    eq4 = megatron_training_seconds(params=1e12, tokens=450e9, gpus=3072, flops_per_gpu=163e12)
    assert best.run_s == pytest.approx(eq4, rel=0.05)


def test_ideal_time_with_full_recomputation_is_megatron_eq4() -> None:
    spec = gpt3_plan().spec
    assert spec.ideal_seconds == pytest.approx(
        megatron_training_seconds(params=spec.params, tokens=spec.tokens, gpus=spec.gpus,
                                  flops_per_gpu=spec.flops_per_gpu), rel=1e-12)
    assert llama_plan().spec.ideal_seconds == pytest.approx(
        6 * param_count(MODELS["llama2-7b"]) * 2e12 / (256 * 150e12), rel=1e-12)


def test_the_paper_layout_of_the_1t_model_is_slower_here_than_its_measured_rate() -> None:
    """163 TFLOP/s is what the paper achieved end to end, bubble and communication
    included; feeding it to the planner as the rate *while computing* charges the
    8 × 64 × 6 layout's bubble a second time, so that layout comes out above 84 days
    (documented in the planner's report, not hidden)."""
    plan = trillion_plan()
    paper = min((x for x in plan.feasible if (x.tp, x.pp) == (8, 64)), key=lambda x: x.run_s)
    assert paper.dp == 6
    assert paper.run_s > plan.best.run_s
    assert paper.bubble_s / paper.step_s > 0.05


def test_selene_links_are_the_sourced_a100_figures() -> None:
    assert (A100["memory_bytes"], A100["intra_bytes_per_s"], A100["inter_bytes_per_s"]) == (80e9, 300e9, 25e9)


def test_megatron_1t_preset_matches_eq2() -> None:
    model = MEGATRON_MODELS["megatron-1t"]
    eq2 = megatron_param_count(layers=128, hidden=25600, vocab=V, seq_len=S)
    assert param_count(model) == pytest.approx(eq2 + 2 * 25600, rel=1e-12)
    assert param_count(model) / 1e9 == pytest.approx(1008.0, abs=0.05)


# -- enumeration and invariants -----------------------------------------------------------


def brute_force_count(gpus: int, batch: int) -> int:
    """Layouts counted independently: t a power of two dividing n, p dividing n/t,
    4 ZeRO stages, m dividing B/d (or one layout when d does not divide B)."""
    count = 0
    for t in range(1, gpus + 1):
        if gpus % t or t & (t - 1):
            continue
        for p in range(1, gpus // t + 1):
            if (gpus // t) % p:
                continue
            d = gpus // (t * p)
            ms = [m for m in range(1, batch + 1) if batch % d == 0 and (batch // d) % m == 0]
            count += 4 * max(1, len(ms))
    return count


@pytest.mark.parametrize("gpus, batch", [(8, 64), (256, 1024), (1536, 2304), (48, 96), (24, 1024), (1, 8)])
def test_candidate_count_matches_an_independent_enumeration(gpus: int, batch: int) -> None:
    plan = llama_plan(gpus=gpus, global_batch=batch)
    assert len(plan.layouts) == brute_force_count(gpus, batch)
    keys = [(x.tp, x.pp, x.zero_stage, x.microbatches) for x in plan.layouts]
    assert len(keys) == len(set(keys))
    assert len(plan.feasible) + len(plan.rejected) == len(plan.layouts)
    assert sum(n for _, n in plan.counts) == len(plan.rejected)


@pytest.mark.parametrize("plan", [llama_plan(), llama_plan("llama2-70b", gpus=512, memory_bytes=40e9),
                                  gpt3_plan(), llama_plan(gpus=48, global_batch=96)],
                         ids=["7b", "70b-40gb", "gpt3", "48gpus"])
def test_every_layout_has_exactly_one_verdict(plan: pl.Plan) -> None:
    for x in plan.feasible:
        assert x.fits and x.reason == "" and x.evaluated
        assert x.memory_bytes <= plan.spec.memory_bytes
        assert x.tp * x.pp * x.dp == plan.spec.gpus
        assert x.micro_batch * x.microbatches * x.dp == plan.spec.global_batch
    for x in plan.rejected:
        assert not x.fits and x.reason in pl.REASONS
        assert x.evaluated == (x.reason == "memory")
        if x.reason == "memory":
            assert x.memory_bytes > plan.spec.memory_bytes
    assert dict(plan.counts) == {r: sum(1 for x in plan.rejected if x.reason == r) for r in pl.REASONS}
    runs = [x.run_s for x in plan.feasible]
    assert runs == sorted(runs)


def test_the_first_failing_rule_is_the_reason() -> None:
    spec = dict(layers=32, heads=32, global_batch=1024, gpus_per_node=8)

    def reason(tp: int, pp: int, dp: int, zero_stage: int) -> str:
        return pl.reject_reason(tp=tp, pp=pp, dp=dp, zero_stage=zero_stage, **spec)

    assert reason(64, 1, 4, 0) == "tp_heads"
    assert reason(16, 1, 16, 0) == "tp_node"  # 16 divides 32 heads
    assert reason(8, 3, 8, 0) == "pp_layers"
    assert reason(8, 64, 1, 0) == "pp_layers"  # more stages than layers
    assert reason(1, 1, 3, 0) == "batch"
    assert reason(8, 2, 8, 2) == "zero_pp"
    assert reason(8, 2, 8, 1) == ""
    assert reason(8, 1, 8, 3) == ""
    assert reason(64, 3, 1, 3) == "tp_heads"  # several apply: the first


def test_a_batch_that_does_not_split_gives_one_layout_per_stage_with_no_microbatch() -> None:
    plan = llama_plan(gpus=48, global_batch=64)  # d = 3 never divides 64
    odd = [x for x in plan.layouts if x.dp % 3 == 0]
    assert odd and all(x.microbatches == 0 == x.micro_batch and not x.evaluated for x in odd)
    # "batch" unless an earlier rule (heads, node, layers) already applies
    assert {x.reason for x in odd} <= {"tp_heads", "tp_node", "pp_layers", "batch"}
    assert all(x.reason == "batch" for x in odd if x.tp <= 8 and 32 % x.pp == 0)
    for t, p, d in {(x.tp, x.pp, x.dp) for x in odd}:
        assert sorted(x.zero_stage for x in odd if (x.tp, x.pp) == (t, p)) == [0, 1, 2, 3]


@pytest.mark.parametrize("make", [llama_plan, gpt3_plan], ids=["7b", "gpt3"])
def test_more_gpu_memory_never_rejects_more_layouts(make: Any) -> None:
    previous: set | None = None
    for memory in (16e9, 24e9, 40e9, 48e9, 80e9, 94e9, 141e9, 192e9):
        plan = make(memory_bytes=memory)
        ok = {(x.tp, x.pp, x.zero_stage, x.microbatches) for x in plan.feasible}
        if previous is not None:
            assert previous <= ok
        previous = ok


@pytest.mark.parametrize("make", [llama_plan, gpt3_plan], ids=["7b", "gpt3"])
def test_zero3_never_needs_more_memory_than_zero2(make: Any) -> None:
    plan = make()
    by_key = {(x.tp, x.pp, x.zero_stage, x.microbatches): x for x in plan.layouts if x.evaluated}
    pairs = [(by_key[k], by_key[(k[0], k[1], 2, k[3])]) for k in by_key if k[2] == 3]
    assert pairs
    for z3, z2 in pairs:
        assert z3.memory_bytes <= z2.memory_bytes
        assert z3.activation_bytes == z2.activation_bytes


def test_each_zero_stage_needs_no_more_memory_than_the_one_before() -> None:
    plan = llama_plan("llama2-70b")
    by_key = {(x.tp, x.pp, x.zero_stage, x.microbatches): x for x in plan.layouts if x.evaluated}
    for (t, p, z, m), x in by_key.items():
        if z and (t, p, z - 1, m) in by_key:
            assert x.memory_bytes <= by_key[(t, p, z - 1, m)].memory_bytes


def test_planning_is_deterministic() -> None:
    assert llama_plan() == llama_plan()
    assert [x.run_s for x in gpt3_plan().feasible[:5]] == [x.run_s for x in gpt3_plan().feasible[:5]]


# -- the time and memory of one layout ---------------------------------------------------


def test_one_layout_by_hand_the_3d_chapters_8_by_4_by_8() -> None:
    """Llama 2 7B, 8 TP × 4 PP × 8 DP, ZeRO-1, b = 1, m = 128, selective recomputation."""
    plan = llama_plan()
    x = next(x for x in plan.layouts if (x.tp, x.pp, x.zero_stage, x.microbatches) == (8, 4, 1, 128))
    psi = param_count(MODELS["llama2-7b"])
    s = h = 4096
    t_c = 6 * psi / 32 * s / 150e12
    t_tp = 8 * 4 * (2 * 7 / 8) * s * h * 2 / 450e9  # 8 layers × 4 all-reduces
    message = s * h * 2.0
    t_pp = 2 * (message / 8 / 50e9 + message * 7 / 8 / 450e9)
    slot = t_c + t_tp + t_pp
    assert x.compute_s == pytest.approx(128 * t_c, rel=1e-12)
    assert x.bubble_s == pytest.approx(3 * slot, rel=1e-12)
    assert x.tp_comm_s == pytest.approx(128 * t_tp, rel=1e-12)
    assert x.pp_comm_s == pytest.approx(128 * t_pp, rel=1e-12)
    rs = 2 * psi / 32 * 7 / 8 / 50e9  # reduce-scatter over 8 replicas, spanning nodes
    assert x.dp_comm_s == pytest.approx(max(0, rs - 4 / 6 * t_c) + max(0, rs - 2 / 6 * t_c), rel=1e-12)
    assert x.step_s == pytest.approx(131 * slot + x.dp_comm_s, rel=1e-12)
    assert x.run_s == pytest.approx(x.step_s * 2e12 / (1024 * 4096), rel=1e-12)
    assert x.compute_s + x.bubble_s + x.comm_s == pytest.approx(x.step_s, rel=1e-12)
    state = (4 + 12 / 8) * psi / 32
    assert x.state_bytes == pytest.approx(state, rel=1e-12)
    acts = 4 * 8 * s * h * (10 + 24 / 8)  # 4 micro-batches in flight × 8 layers, selective
    assert x.activation_bytes == pytest.approx(acts, rel=1e-12)
    assert x.memory_bytes == pytest.approx(state + acts + pl.ALLOWANCE_BYTES, rel=1e-12)
    layout = dict(tp=8, pp=4, dp=8, zero_stage=1, microbatches=128)
    assert pl.layout_memory(plan.spec, **layout) == (x.memory_bytes, x.state_bytes, x.activation_bytes)
    assert pl.layout_times(plan.spec, **layout) == (
        x.compute_s, x.bubble_s, x.tp_comm_s, x.pp_comm_s, x.dp_comm_s, x.step_s)


def test_optimizer_bytes_sets_the_state_of_every_layout() -> None:
    """K = ``optimizer_bytes`` (12 by default, ZeRO Sec. 3.1): with ZeRO-1 over d = 8 the
    state of Ψ/(t·p) is (4 + K/8)·Ψ/32; activations do not change."""
    key = (8, 4, 1, 128)
    psi = param_count(MODELS["llama2-7b"])
    default = next(x for x in llama_plan().layouts if (x.tp, x.pp, x.zero_stage, x.microbatches) == key)
    k6 = next(x for x in llama_plan(optimizer_bytes=6).layouts
              if (x.tp, x.pp, x.zero_stage, x.microbatches) == key)
    assert default == next(x for x in llama_plan(optimizer_bytes=12).layouts
                           if (x.tp, x.pp, x.zero_stage, x.microbatches) == key)
    assert k6.state_bytes == pytest.approx((4 + 6 / 8) * psi / 32, rel=1e-12)
    assert k6.activation_bytes == default.activation_bytes


def test_without_communication_the_bubble_is_the_pipeline_formula() -> None:
    """With links so fast that communication vanishes, bubble / step is (p−1)/(m+p−1)
    (Narayanan et al. 2021, Sec. 2.2.1), m < p included (only charged, not rejected)."""
    plan = llama_plan(intra_bytes_per_s=1e15, inter_bytes_per_s=1e15)
    seen_small_m = False
    for x in plan.layouts:
        if x.evaluated and x.pp > 1:
            m, p = x.microbatches, x.pp
            assert x.bubble_s / x.step_s == pytest.approx((p - 1) / (m + p - 1), rel=1e-4)
            seen_small_m |= m < p
    assert seen_small_m


def test_full_recomputation_costs_a_third_more_compute_and_repeats_two_all_reduces() -> None:
    sel = llama_plan()
    full = llama_plan(recompute="full")
    layout = dict(tp=8, pp=1, dp=32, zero_stage=1, microbatches=4)
    a = pl.layout_times(sel.spec, **layout)
    b = pl.layout_times(full.spec, **layout)
    assert b[0] == pytest.approx(a[0] * 8 / 6, rel=1e-12)
    assert b[2] == pytest.approx(a[2] * 6 / 4, rel=1e-12)


@pytest.mark.parametrize("zero_stage", [0, 1, 2, 3])
def test_dp_collectives_add_up_to_zeros_volume_with_one_microbatch(zero_stage: int) -> None:
    share, d = 1.7e9, 16
    collectives = pl.dp_collectives(share_params=share, dp=d, zero_stage=zero_stage)
    zero_sent = sent_per_gpu_bytes(params=share, dp=d, zero_stage=zero_stage)
    assert sum(b for _, b, _, _ in collectives) == pytest.approx(zero_sent, rel=1e-12)
    # with m micro-batches, stages 2 and 3 repeat their per-micro-batch collectives
    sent4 = sum(b * (4 if every else 1) for _, b, _, every in collectives)
    expected = {0: 1, 1: 1, 2: 2.5, 3: 4}[zero_stage]
    assert sent4 == pytest.approx(expected * zero_sent, rel=1e-12)
    assert pl.dp_collectives(share_params=share, dp=1, zero_stage=zero_stage) == ()


def test_data_parallel_time_is_hidden_until_it_outgrows_the_backward_pass() -> None:
    fast = llama_plan(inter_bytes_per_s=50e9)
    slow = llama_plan(inter_bytes_per_s=1e9)
    key = (1, 1, 1, 4)
    f = next(x for x in fast.layouts if (x.tp, x.pp, x.zero_stage, x.microbatches) == key)
    s = next(x for x in slow.layouts if (x.tp, x.pp, x.zero_stage, x.microbatches) == key)
    assert f.dp_comm_s == 0 and s.dp_comm_s > 0
    assert s.step_s == pytest.approx(f.step_s + s.dp_comm_s, rel=1e-12)


def test_sequence_parallelism_divides_the_activations_by_t() -> None:
    off = llama_plan(recompute="selective")
    on = llama_plan(recompute="selective", sequence_parallel=True)
    a = next(x for x in off.layouts if (x.tp, x.pp, x.zero_stage, x.microbatches) == (8, 1, 1, 4))
    b = next(x for x in on.layouts if (x.tp, x.pp, x.zero_stage, x.microbatches) == (8, 1, 1, 4))
    assert b.activation_bytes == pytest.approx(a.activation_bytes * 34 / 8 / (10 + 24 / 8), rel=1e-12)


def test_the_default_scenario_prefers_zero1_data_parallelism() -> None:
    """Llama 2 7B on 256 GPUs: the state fits with ZeRO-1 alone, every collective hides
    behind the backward pass, so plain ZeRO-1 data parallelism reaches the ideal time."""
    plan = llama_plan()
    best = plan.best
    assert (best.tp, best.pp, best.dp, best.zero_stage) == (1, 1, 256, 1)
    assert best.run_s == pytest.approx(plan.spec.ideal_seconds, rel=1e-12)


def test_nothing_fits_gives_no_best() -> None:
    plan = gpt3_plan(gpus=8, global_batch=64)
    assert plan.best is None and not plan.feasible and plan.count("memory") > 0


# -- validation ---------------------------------------------------------------------------

GOOD = dict(params=6.7e9, layers=32, hidden=4096, heads=32, seq_len=4096, tokens=2e12, gpus=64,
            memory_bytes=80e9, flops_per_gpu=150e12, intra_bytes_per_s=450e9, inter_bytes_per_s=50e9,
            gpus_per_node=8, global_batch=1024, recompute="full", sequence_parallel=False,
            optimizer_bytes=12.0)
BAD = {
    float: [math.nan, math.inf, True, "8", None, -1, 1e40],
    int: [math.nan, math.inf, True, "8", None, -1, 1e40, 2.5],
    str: ["no-such-mode", 1, True, None],
    bool: ["yes", 1, 0, None],
}


@pytest.mark.parametrize("arg, bad", [(k, b) for k, v in GOOD.items()
                                      for b in BAD[bool if isinstance(v, bool) else type(v)]])
def test_bad_arguments_are_named(arg: str, bad: object) -> None:
    with pytest.raises(ValueError) as info:
        pl.plan(**{**GOOD, arg: bad})
    assert str(info.value).startswith(f"{arg} must be"), str(info.value)


def test_helpers_validate_their_arguments() -> None:
    with pytest.raises(ValueError, match="^gpus must be"):
        pl.degrees(0)
    with pytest.raises(ValueError, match="^global_batch must be"):
        pl.microbatch_counts(0, 1)
    with pytest.raises(ValueError, match="^zero_stage must be"):
        pl.dp_collectives(share_params=1e9, dp=8, zero_stage=4)
    with pytest.raises(ValueError, match="^recompute must be"):
        pl.flops_per_param_per_token("some")
    with pytest.raises(ValueError, match="^spec must be"):
        pl.layout_memory("spec", tp=1, pp=1, dp=1, zero_stage=0, microbatches=1)  # type: ignore[arg-type]
    spec = llama_plan(gpus=8).spec
    with pytest.raises(ValueError, match="tp × pp × dp must equal gpus"):
        pl.layout_times(spec, tp=2, pp=2, dp=3, zero_stage=0, microbatches=1)
    with pytest.raises(ValueError, match="^reason must be"):
        llama_plan(gpus=8).count("slow")
    assert pl.degrees(12) == ((1, 1, 12), (1, 2, 6), (1, 3, 4), (1, 4, 3), (1, 6, 2), (1, 12, 1),
                              (2, 1, 6), (2, 2, 3), (2, 3, 2), (2, 6, 1), (4, 1, 3), (4, 3, 1))
    assert pl.microbatch_counts(1024, 8) == (1, 2, 4, 8, 16, 32, 64, 128)
    assert pl.microbatch_counts(1024, 3) == ()
