"""The planner (calc.planner): Megatron-LM 2021's layouts fit on their hardware, its
training-time estimates come back within 5%, and the search keeps its invariants."""

from __future__ import annotations

import math
from typing import Any

import pytest

from calc import planner as pl
from calc.compute import megatron_training_seconds
from calc.hardware import GPUS, GPUS_PER_NODE, INTERCONNECTS
from calc.models import (
    MEGATRON_MODELS,
    MODELS,
    RECENT_MODELS,
    active_param_count,
    expert_param_count,
    megatron_param_count,
    param_count,
)
from calc.context import ring_step_times
from calc.experts import all_to_all_sent_per_gpu_layer_bytes, expert_state_per_gpu_bytes
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


def one(plan: pl.Plan, cp: int = 1, ep: int = 1, **key: int) -> pl.Layout:
    """The layout of ``plan`` with these fields (cp = ep = 1 unless given)."""
    want = {"cp": cp, "ep": ep, **key}
    found = [x for x in plan.layouts if all(getattr(x, k) == v for k, v in want.items())]
    assert len(found) == 1, (want, len(found))
    return found[0]


# Llama 3 405B's run (Dubey et al. 2024, Sec. 3.3): H100 80 GB, 8 to a server with
# NVLink (calc.hardware "nvlink4", 450 GB/s per GPU each way), 400 Gb/s RoCE per GPU
# (50 GB/s); the long-context stage at 131,072 tokens, 16M tokens per batch (128
# sequences); X = 400 TFLOP/s, about the rate Table 4 reports at 16K GPUs.
H100 = dict(memory_bytes=80e9, intra_bytes_per_s=INTERCONNECTS["nvlink4"].bytes_per_s, inter_bytes_per_s=50e9,
            gpus_per_node=GPUS_PER_NODE)


def llama31_plan(seq_len: int = 131072, **over: Any) -> pl.Plan:
    m = RECENT_MODELS["llama3.1-405b"]
    kw = dict(params=param_count(m), layers=m.layers, hidden=m.hidden, heads=m.heads, kv_heads=m.kv_heads,
              seq_len=seq_len, tokens=800e9, gpus=16384, flops_per_gpu=400e12,
              global_batch=16 * 2**20 // seq_len, recompute="selective", sequence_parallel=True,
              context_parallel=True, **H100)
    return pl.plan(**{**kw, **over})


def mixtral_plan(**over: Any) -> pl.Plan:
    m = RECENT_MODELS["mixtral-8x7b"]
    kw = dict(params=param_count(m), layers=m.layers, hidden=m.hidden, heads=m.heads, kv_heads=m.kv_heads,
              seq_len=4096, tokens=1e12, gpus=256, flops_per_gpu=400e12, global_batch=1024,
              recompute="selective", sequence_parallel=True, active_params=active_param_count(m),
              expert_params=m.moe_layers * m.experts * expert_param_count(m), experts=m.experts,
              experts_per_token=m.experts_per_token, moe_layers=m.moe_layers, context_parallel=True, **H100)
    return pl.plan(**{**kw, **over})


# -- Megatron-LM 2021 ------------------------------------------------------------------


@pytest.mark.parametrize("row", MEGATRON_TABLE_1, ids=lambda r: f"{r[0]}B")
def test_every_table1_layout_fits_on_80gb_a100s(row: tuple) -> None:
    """Table 1's (t, p) on its GPU count and batch, full recomputation, no ZeRO (the
    2021 runs had none): some micro-batch count fits in 80 GB."""
    _, _, _, _, tp, pp, gpus, _, _ = row
    plan = table1_plan(row)
    ours = [x for x in plan.layouts if (x.tp, x.cp, x.pp, x.zero_stage) == (tp, 1, pp, 0)]
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


def test_ideal_time_is_megatron_eq4_plus_causal_attention() -> None:
    """8ΨD/(nX) (Eq. 4) plus the attention matmuls 6Ψ leaves out (Eq. 3's s/6h term,
    here causal: 2·s·h per token and layer forward, 4 passes when recomputed). For
    GPT-3 at s = 2,048 that adds 1.4%; for Llama 3.1 405B at 128K it is 89% of the
    parameter term."""
    spec = gpt3_plan().spec
    eq4 = megatron_training_seconds(params=spec.params, tokens=spec.tokens, gpus=spec.gpus,
                                    flops_per_gpu=spec.flops_per_gpu)
    attention = 96 * 4 * 2 * 2048 * 12288 * spec.tokens / (spec.gpus * spec.flops_per_gpu)
    assert spec.ideal_seconds == pytest.approx(eq4 + attention, rel=1e-12)
    assert spec.ideal_seconds / eq4 == pytest.approx(1.0138, abs=5e-4)
    psi = param_count(MODELS["llama2-7b"])
    assert llama_plan().spec.ideal_seconds == pytest.approx(
        (6 * psi + 32 * 4 * 2 * 4096 * 4096) * 2e12 / (256 * 150e12), rel=1e-12)
    long = llama31_plan().spec
    assert long.attention_flops_per_token / (6 * long.params) == pytest.approx(
        126 * 4 * 2 * 131072 * 16384 / (6 * 405_853_388_800), rel=1e-12)
    assert long.attention_flops_per_token / (6 * long.params) == pytest.approx(0.89, abs=0.005)


def test_the_paper_layout_of_the_1t_model_is_slower_here_than_its_measured_rate() -> None:
    """163 TFLOP/s is what the paper achieved end to end, bubble and communication
    included; feeding it to the planner as the rate *while computing* charges the
    8 × 64 × 6 layout's bubble a second time, so that layout comes out above 84 days
    (documented in the planner's report, not hidden)."""
    plan = trillion_plan()
    paper = min((x for x in plan.feasible if (x.tp, x.cp, x.pp) == (8, 1, 64)), key=lambda x: x.run_s)
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


def brute_force_count(gpus: int, batch: int, split: bool = True) -> int:
    """Layouts counted independently: t and cp powers of two, t dividing n, cp dividing
    n/t, p dividing n/(t·cp), 4 ZeRO stages, m dividing B/d (or one layout when d does
    not divide B); a dense model has ep = 1 only; cp = 1 unless ``split``."""
    count = 0
    for t in range(1, gpus + 1):
        if gpus % t or t & (t - 1):
            continue
        for cp in range(1, gpus // t + 1):
            if (gpus // t) % cp or cp & (cp - 1) or (cp > 1 and not split):
                continue
            rest = gpus // (t * cp)
            for p in range(1, rest + 1):
                if rest % p:
                    continue
                d = rest // p
                ms = [m for m in range(1, batch + 1) if batch % d == 0 and (batch // d) % m == 0]
                count += 4 * max(1, len(ms))
    return count


@pytest.mark.parametrize("gpus, batch", [(8, 64), (256, 1024), (1536, 2304), (48, 96), (24, 1024), (1, 8)])
def test_candidate_count_matches_an_independent_enumeration(gpus: int, batch: int) -> None:
    assert len(llama_plan(gpus=gpus, global_batch=batch).layouts) == brute_force_count(gpus, batch, split=False)
    plan = llama_plan(gpus=gpus, global_batch=batch, context_parallel=True)
    assert len(plan.layouts) == brute_force_count(gpus, batch)
    keys = [(x.tp, x.cp, x.pp, x.ep, x.zero_stage, x.microbatches) for x in plan.layouts]
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
        assert x.tp * x.cp * x.pp * x.dp == plan.spec.gpus
        assert x.micro_batch * x.microbatches * x.dp == plan.spec.global_batch
    for x in plan.rejected:
        assert not x.fits and x.reason in pl.REASONS
        assert x.evaluated == (x.reason == "memory")
        if x.reason == "memory":
            assert x.memory_bytes > plan.spec.memory_bytes
    assert dict(plan.counts) == {r: sum(1 for x in plan.rejected if x.reason == r) for r in pl.REASONS}
    runs = [float(f"{x.run_s:.9e}") for x in plan.feasible]  # ties within 1e-9 go by ZeRO stage, t, p, …
    assert runs == sorted(runs)


def test_the_first_failing_rule_is_the_reason() -> None:
    spec = dict(layers=32, heads=32, global_batch=1024, gpus_per_node=8, seq_len=4096)

    def reason(tp: int, pp: int, dp: int, zero_stage: int, **more: Any) -> str:
        return pl.reject_reason(tp=tp, pp=pp, dp=dp, zero_stage=zero_stage, **{**spec, **more})

    assert reason(64, 1, 4, 0) == "tp_heads"
    assert reason(8, 1, 4, 0, kv_heads=4) == "tp_heads"  # whole K/V groups per GPU
    assert reason(4, 1, 4, 0, kv_heads=4) == ""
    assert reason(16, 1, 16, 0) == "tp_node"  # 16 divides 32 heads
    assert reason(8, 3, 8, 0) == ""  # uneven stages: 11, 11, 10 layers
    assert reason(8, 64, 1, 0) == "pp_layers"  # more stages than layers
    assert reason(1, 1, 8, 0, cp=8, seq_len=4100) == "cp_seq"  # 16 chunks of 256.25 tokens
    assert reason(1, 1, 8, 0, cp=2, seq_len=4100) == ""  # 4 chunks of 1,025
    assert reason(1, 1, 8, 0, ep=16, experts=8) == "ep_experts"
    assert reason(1, 1, 8, 0, ep=4, experts=6) == "ep_experts"
    assert reason(2, 1, 8, 0, ep=4, experts=8) == "ep_sp"
    assert reason(2, 1, 8, 0, ep=4, experts=8, sequence_parallel=True) == ""
    assert reason(1, 1, 3, 0) == "batch"
    assert reason(8, 2, 8, 2) == "zero_pp"
    assert reason(8, 2, 8, 1) == ""
    assert reason(8, 1, 8, 3) == ""
    assert reason(64, 3, 1, 3) == "tp_heads"  # several apply: the first
    assert reason(16, 64, 1, 3, cp=8, seq_len=4100) == "tp_node"


def test_a_batch_that_does_not_split_gives_one_layout_per_stage_with_no_microbatch() -> None:
    plan = llama_plan(gpus=48, global_batch=64)  # d = 3 never divides 64
    odd = [x for x in plan.layouts if x.dp % 3 == 0]
    assert odd and all(x.microbatches == 0 == x.micro_batch and not x.evaluated for x in odd)
    # "batch" unless an earlier rule (heads, node, layers) already applies
    assert {x.reason for x in odd} <= {"tp_heads", "tp_node", "pp_layers", "batch"}
    assert all(x.reason == "batch" for x in odd if x.tp <= 8 and x.pp <= 32)
    for t, c, p in {(x.tp, x.cp, x.pp) for x in odd}:
        assert sorted(x.zero_stage for x in odd if (x.tp, x.cp, x.pp) == (t, c, p)) == [0, 1, 2, 3]


@pytest.mark.parametrize("make", [llama_plan, gpt3_plan], ids=["7b", "gpt3"])
def test_more_gpu_memory_never_rejects_more_layouts(make: Any) -> None:
    previous: set | None = None
    for memory in (16e9, 24e9, 40e9, 48e9, 80e9, 94e9, 141e9, 192e9):
        plan = make(memory_bytes=memory)
        ok = {(x.tp, x.cp, x.pp, x.ep, x.zero_stage, x.microbatches) for x in plan.feasible}
        if previous is not None:
            assert previous <= ok
        previous = ok


@pytest.mark.parametrize("make", [llama_plan, gpt3_plan], ids=["7b", "gpt3"])
def test_zero3_never_needs_more_memory_than_zero2(make: Any) -> None:
    plan = make()
    by_key = {(x.tp, x.cp, x.pp, x.ep, x.zero_stage, x.microbatches): x for x in plan.layouts if x.evaluated}
    pairs = [(by_key[k], by_key[(*k[:4], 2, k[5])]) for k in by_key if k[4] == 3]
    assert pairs
    for z3, z2 in pairs:
        assert z3.memory_bytes <= z2.memory_bytes
        assert z3.activation_bytes == z2.activation_bytes


def test_each_zero_stage_needs_no_more_memory_than_the_one_before() -> None:
    plan = llama_plan("llama2-70b")
    by_key = {(x.tp, x.cp, x.pp, x.ep, x.zero_stage, x.microbatches): x for x in plan.layouts if x.evaluated}
    for (t, c, p, e, z, m), x in by_key.items():
        if z and (t, c, p, e, z - 1, m) in by_key:
            assert x.memory_bytes <= by_key[(t, c, p, e, z - 1, m)].memory_bytes


def test_planning_is_deterministic() -> None:
    assert llama_plan() == llama_plan()
    assert [x.run_s for x in gpt3_plan().feasible[:5]] == [x.run_s for x in gpt3_plan().feasible[:5]]


# -- the time and memory of one layout ---------------------------------------------------


def test_one_layout_by_hand_the_3d_chapters_8_by_4_by_8() -> None:
    """Llama 2 7B, 8 TP × 4 PP × 8 DP, ZeRO-1, b = 1, m = 128, selective recomputation."""
    plan = llama_plan()
    x = one(plan, tp=8, pp=4, zero_stage=1, microbatches=128)
    psi = param_count(MODELS["llama2-7b"])
    s = h = 4096
    attention = 4 * 2 * s * s * h / 8 * 8  # 4 passes (selective reruns it) of 2·s²·h, over t, 8 layers
    t_c = (6 * psi / 32 * s + attention) / 150e12
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
        x.compute_s, x.bubble_s, x.tp_comm_s, x.cp_comm_s, x.ep_comm_s, x.pp_comm_s, x.dp_comm_s, x.step_s)
    assert x.cp_comm_s == x.ep_comm_s == 0


def test_optimizer_bytes_sets_the_state_of_every_layout() -> None:
    """K = ``optimizer_bytes`` (12 by default, ZeRO Sec. 3.1): with ZeRO-1 over d = 8 the
    state of Ψ/(t·p) is (4 + K/8)·Ψ/32; activations do not change."""
    key = dict(tp=8, pp=4, zero_stage=1, microbatches=128)
    psi = param_count(MODELS["llama2-7b"])
    default = one(llama_plan(), **key)
    k6 = one(llama_plan(optimizer_bytes=6), **key)
    assert default == one(llama_plan(optimizer_bytes=12), **key)
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
    psi, s = param_count(MODELS["llama2-7b"]), 4096
    # 2 FLOP more per parameter and token; the attention matmuls are rerun by both modes
    assert b[0] - a[0] == pytest.approx(4 * 2 * psi / 8 * (1024 // 32 // 4) * s / 150e12, rel=1e-9)
    assert b[2] == pytest.approx(a[2] * 6 / 4, rel=1e-12)
    none = pl.layout_times(llama_plan(recompute="none").spec, **layout)
    attention = 4 * 2 * s * s * 4096 / 8 * 32 * 32 / 150e12  # 32 layers, m·b = 4 × 8 sequences
    assert a[0] - none[0] == pytest.approx(attention / 4, rel=1e-9)  # the one rerun forward of 4 passes


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
    key = dict(tp=1, pp=1, zero_stage=1, microbatches=4)
    f, s = one(fast, **key), one(slow, **key)
    assert f.dp_comm_s == 0 and s.dp_comm_s > 0
    assert s.step_s == pytest.approx(f.step_s + s.dp_comm_s, rel=1e-12)


def test_sequence_parallelism_divides_the_activations_by_t() -> None:
    off = llama_plan(recompute="selective")
    on = llama_plan(recompute="selective", sequence_parallel=True)
    key = dict(tp=8, pp=1, zero_stage=1, microbatches=4)
    a, b = one(off, **key), one(on, **key)
    assert b.activation_bytes == pytest.approx(a.activation_bytes * 34 / 8 / (10 + 24 / 8), rel=1e-12)


def test_the_default_scenario_prefers_zero1_data_parallelism() -> None:
    """Llama 2 7B on 256 GPUs: the state fits with ZeRO-1 alone, every collective hides
    behind the backward pass, so plain ZeRO-1 data parallelism reaches the ideal time."""
    plan = llama_plan()
    best = plan.best
    assert (best.tp, best.cp, best.pp, best.dp, best.ep, best.zero_stage) == (1, 1, 1, 256, 1, 1)
    assert best.run_s == pytest.approx(plan.spec.ideal_seconds, rel=1e-12)


def test_nothing_fits_gives_no_best() -> None:
    plan = gpt3_plan(gpus=8, global_batch=64)
    assert plan.best is None and not plan.feasible and plan.count("memory") > 0


# -- validation ---------------------------------------------------------------------------

GOOD = dict(params=6.7e9, layers=32, hidden=4096, heads=32, seq_len=4096, tokens=2e12, gpus=64,
            memory_bytes=80e9, flops_per_gpu=150e12, intra_bytes_per_s=450e9, inter_bytes_per_s=50e9,
            gpus_per_node=8, global_batch=1024, recompute="full", sequence_parallel=False,
            optimizer_bytes=12.0, kv_heads=8, active_params=0.0, expert_params=0.0, experts=0,
            experts_per_token=0, moe_layers=0, context_parallel=False)
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
    with pytest.raises(ValueError, match="tp × cp × pp × dp must equal gpus"):
        pl.layout_times(spec, tp=2, pp=2, dp=3, zero_stage=0, microbatches=1)
    with pytest.raises(ValueError, match="ep divide cp × dp"):
        pl.layout_times(spec, tp=1, pp=1, dp=8, zero_stage=0, microbatches=1, ep=2)  # a dense model
    with pytest.raises(ValueError, match="^experts, expert_params"):
        pl.plan(**{**GOOD, "experts": 8})
    with pytest.raises(ValueError, match="^cp must be"):
        pl.expert_degrees(cp=0, dp=1, experts=8)
    with pytest.raises(ValueError, match="^reason must be"):
        llama_plan(gpus=8).count("slow")
    assert pl.degrees(12) == (
        (1, 1, 1, 12), (1, 1, 2, 6), (1, 1, 3, 4), (1, 1, 4, 3), (1, 1, 6, 2), (1, 1, 12, 1),
        (1, 2, 1, 6), (1, 2, 2, 3), (1, 2, 3, 2), (1, 2, 6, 1), (1, 4, 1, 3), (1, 4, 3, 1),
        (2, 1, 1, 6), (2, 1, 2, 3), (2, 1, 3, 2), (2, 1, 6, 1), (2, 2, 1, 3), (2, 2, 3, 1),
        (4, 1, 1, 3), (4, 1, 3, 1))
    assert pl.expert_degrees(cp=2, dp=12, experts=8) == (1, 2, 4, 8)
    assert pl.expert_degrees(cp=2, dp=12, experts=0) == (1,)
    assert pl.stage_layers(126, 16) == 8 and pl.stage_layers(61, 16) == 4 and pl.stage_layers(32, 4) == 8
    assert pl.microbatch_counts(1024, 8) == (1, 2, 4, 8, 16, 32, 64, 128)
    assert pl.microbatch_counts(1024, 3) == ()


# -- context and expert parallelism ---------------------------------------------------------


def test_at_128k_tokens_llama3_405b_fits_almost_only_with_context_parallelism() -> None:
    """s = 131,072 on 16,384 H100s (Llama 3's long-context stage): without cp the
    activations of one sequence fill a GPU; the few cp = 1 layouts that fit spread the
    126 layers over 64 stages, and spend most of each step in the bubble. The best
    layout splits the sequence."""
    plan = llama31_plan()
    best = plan.best
    assert best is not None and best.cp > 1
    alone = [x for x in plan.feasible if x.cp == 1]
    assert alone and all(x.pp >= 64 and x.bubble_s / x.step_s > 0.9 for x in alone)
    assert best.run_s < min(x.run_s for x in alone) / 5


def test_at_8k_tokens_the_best_layout_needs_no_context_parallelism() -> None:
    best = llama31_plan(8192).best
    assert best is not None and best.cp == 1


def test_without_context_parallelism_every_layout_keeps_whole_sequences() -> None:
    plan = llama31_plan(context_parallel=False)
    assert {x.cp for x in plan.layouts} == {1}
    assert plan.count("cp_seq") == 0
    assert len(plan.layouts) < len(llama31_plan().layouts)


def test_context_parallelism_divides_the_activations_by_cp() -> None:
    """Same t, p, micro-batches in flight and b: cp = 16 keeps 1/16 of the activations
    (Liu et al. 2023, Sec. 3; calc.context.activation_bytes_per_gpu_layer)."""
    spec = llama31_plan(global_batch=2048).spec
    _, _, split = pl.layout_memory(spec, tp=8, cp=16, pp=1, dp=128, zero_stage=1, microbatches=16)
    _, _, whole = pl.layout_memory(spec, tp=8, cp=1, pp=1, dp=2048, zero_stage=1, microbatches=1)
    assert split == pytest.approx(whole / 16, rel=1e-12)


def test_llama3s_long_context_layout_fits_once_its_data_parallelism_shards_everything() -> None:
    """Table 4's 128K row: TP 8, CP 16, PP 16, DP 8, 16 sequences per DP group (so one
    sequence per micro-batch). Its DP is FSDP (Sec. 3.3.2: it shards the model, the
    optimizer and the gradients), state as ZeRO-3; with ZeRO-1 the same layout would
    need more than 80 GB."""
    spec = llama31_plan().spec
    layout = dict(tp=8, cp=16, pp=16, dp=8, microbatches=16)
    fsdp, _, acts = pl.layout_memory(spec, zero_stage=3, **layout)
    zero1, _, _ = pl.layout_memory(spec, zero_stage=1, **layout)
    assert fsdp <= 80e9 < zero1
    assert acts == pytest.approx(16 * 8 * 34 * (131072 / 16) * 16384 / 8, rel=1e-12)  # 16 in flight × 8 layers


def test_a_ring_step_that_outlasts_its_compute_is_charged_layer_by_layer() -> None:
    """On a slow link the exposed ring time is (cp − 1) steps × (twice the forward's
    excess, since selective recomputation reruns it, + the backward's) / t × ⌈L/p⌉
    layers, per micro-batch (calc.context.ring_step_times)."""
    plan = llama31_plan(inter_bytes_per_s=5e9)
    x = one(plan, tp=8, cp=16, pp=16, zero_stage=1, microbatches=16)
    ring = ring_step_times(hidden=16384, heads=128, kv_heads=8, seq_len=131072, micro_batch=1, cp=16,
                           flops_per_gpu=400e12, bytes_per_s=5e9)  # t·cp = 128 GPUs: across nodes
    forward = ring.forward_transfer - ring.forward_compute
    backward = ring.backward_transfer - ring.backward_compute
    assert forward > 0 and backward > 0
    assert x.cp_comm_s == pytest.approx(16 * 15 * (2 * forward + backward) / 8 * 8, rel=1e-12)
    fast = one(llama31_plan(), tp=8, cp=16, pp=16, zero_stage=1, microbatches=16)
    assert fast.cp_comm_s == 0  # 8,192 tokens a GPU hide the transfer at 50 GB/s


def test_mixtral_spreads_its_experts_and_pays_for_the_all_to_all() -> None:
    """Mixtral 8x7B on 256 GPUs: the best layout uses ep > 1 (within a node), and its
    exposed all-to-all time equals calc.experts' bytes over NVLink for the 32 MoE
    layers, per micro-batch."""
    plan = mixtral_plan()
    best = plan.best
    assert best is not None and best.ep > 1 and best.tp * best.ep <= 8
    tokens = best.micro_batch * 4096 // best.cp
    sent = all_to_all_sent_per_gpu_layer_bytes(tokens=tokens, hidden=4096, experts_per_token=2, ep=best.ep)
    assert best.ep_comm_s == pytest.approx(best.microbatches * sent / best.tp * 32 / best.pp / 450e9, rel=1e-12)


def test_expert_state_is_split_by_ep_and_the_rest_by_the_data_parallel_gpus() -> None:
    """ZeRO-0, t = p = cp = 1: every GPU keeps the non-expert parameters whole and 1/ep
    of the routed experts (calc.experts.expert_state_per_gpu_bytes), 16 bytes each."""
    plan = mixtral_plan(memory_bytes=1e12)
    m = RECENT_MODELS["mixtral-8x7b"]
    experts = m.moe_layers * m.experts * expert_param_count(m)
    for ep in (1, 2, 4, 8):
        x = one(plan, tp=1, pp=1, ep=ep, zero_stage=0, microbatches=4)
        routed = expert_state_per_gpu_bytes(hidden=4096, moe_ffn=m.moe_ffn, experts=8, moe_layers=32, ep=ep)
        assert x.state_bytes == pytest.approx((param_count(m) - experts) * 16 + routed, rel=1e-12)


def test_more_expert_parallelism_never_needs_more_memory() -> None:
    plan = mixtral_plan()
    by_key = {(x.tp, x.cp, x.pp, x.ep, x.zero_stage, x.microbatches): x for x in plan.layouts if x.evaluated}
    for (t, c, p, e, z, m), x in by_key.items():
        if (t, c, p, 2 * e, z, m) in by_key:
            assert by_key[(t, c, p, 2 * e, z, m)].memory_bytes <= x.memory_bytes


def test_expert_parallelism_with_tensor_parallelism_asks_for_sequence_parallelism() -> None:
    plan = mixtral_plan(sequence_parallel=False)
    assert plan.count("ep_sp") > 0
    assert all(x.tp == 1 or x.ep == 1 for x in plan.feasible)
    assert all(x.tp > 1 and x.ep > 1 for x in plan.rejected if x.reason == "ep_sp")


def test_an_moe_model_is_charged_for_the_parameters_a_token_uses() -> None:
    """Mixtral computes with 12.9B of its 46.7B parameters per token."""
    spec = mixtral_plan().spec
    assert spec.used_params == active_param_count(RECENT_MODELS["mixtral-8x7b"])
    assert spec.flops == pytest.approx((6 * spec.used_params + 32 * 4 * 2 * 4096 * 4096) * 1e12, rel=1e-12)


def test_the_layout_census_counts_what_plan_enumerates() -> None:
    """The census of 8 GPUs and B = 64 (the chapter's exercise, worked by hand): 10 pairs
    (t, p); d = 8, 4, 2, 1 for 1, 2, 3, 4 of them; B/d = 8, 16, 32, 64 have 4, 5, 6, 7
    divisors: 1·4 + 2·5 + 3·6 + 4·7 = 60 triples, 38 of them with p > 1; × 4 stages."""
    census = pl.layout_census(gpus=8, global_batch=64)
    assert (census.pairs, census.triples, census.pipelined) == (10, 60, 38)
    assert (census.stages, census.stages_refused_with_pp) == (4, 2)
    assert census.layouts == 240 and census.zero_pp_candidates == 76
    llama = MODELS["llama2-7b"]
    p = pl.plan(**pl.model_args(llama), seq_len=4096, tokens=2e12, gpus=8, memory_bytes=80e9,
                flops_per_gpu=150e12, intra_bytes_per_s=450e9, inter_bytes_per_s=50e9, global_batch=64)
    assert len(p.layouts) == census.layouts
    assert p.count("zero_pp") == census.zero_pp_candidates  # no earlier rule fires for 7B on one node


@pytest.mark.parametrize("gpus, batch", [(256, 1024), (24, 36), (1024, 1536)])
def test_the_census_matches_the_plan_for_a_dense_model(gpus: int, batch: int) -> None:
    p = gpt3_plan(gpus=gpus, global_batch=batch)
    census = pl.layout_census(gpus=gpus, global_batch=batch)
    assert len(p.layouts) == census.layouts
    assert p.count("zero_pp") <= census.zero_pp_candidates


def test_layers_in_flight_is_min_p_m_stages_of_the_busiest_stage() -> None:
    # 3D chapter: p = 4, m = 128, L = 32: 4 micro-batches × 8 layers = L (Korthikanti 4.2.3)
    assert pl.layers_in_flight(layers=32, pp=4, microbatches=128) == 32
    # Llama 3 405B at 128K on 64 stages with 2 micro-batches: 2 × ⌈126/64⌉ = 4 (< L)
    assert pl.layers_in_flight(layers=126, pp=64, microbatches=2) == 4
    with pytest.raises(ValueError, match="pp"):
        pl.layers_in_flight(layers=4, pp=8, microbatches=1)


def test_step_flops_and_the_cluster_rate_give_the_ideal_time() -> None:
    spec = gpt3_plan().spec
    assert spec.batch_tokens == spec.global_batch * spec.seq_len
    assert spec.step_flops * spec.steps == pytest.approx(spec.flops, rel=1e-12)
    assert spec.ideal_seconds == pytest.approx(spec.step_flops * spec.steps / spec.cluster_flops_per_s, rel=1e-12)
    assert spec.cluster_flops_per_s == spec.gpus * spec.flops_per_gpu
