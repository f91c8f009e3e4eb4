"""Mixture of experts and expert parallelism (calc.experts): Shazeer et al. 2017,
GShard (Lepikhin et al. 2020), Switch Transformer (Fedus et al. 2021), Mixtral (Jiang et
al. 2024) and DeepSeek-V3's expert shapes."""

from __future__ import annotations

import math

import pytest

from calc import experts

MIXTRAL = dict(hidden=4096, moe_ffn=14_336)  # Jiang et al. 2024, Table 1
DEEPSEEK_V3 = dict(hidden=7168, moe_ffn=2048)  # DeepSeek-V3 report, Sec. 4.2


def test_one_swiglu_expert_is_three_matrices() -> None:
    assert experts.expert_params(**MIXTRAL) == 3 * 4096 * 14_336 == 176_160_768
    assert experts.expert_params(**DEEPSEEK_V3) == 44_040_192


def test_mixtral_layer_total_and_active_parameters() -> None:
    """8 experts and a 4,096 × 8 router per layer; a token uses 2 experts: about a
    quarter of the MLP parameters (Jiang et al. 2024, Sec. 2: 13B active of 47B)."""
    total = experts.moe_layer_params(**MIXTRAL, experts=8)
    active = experts.active_moe_layer_params(**MIXTRAL, experts=8, experts_per_token=2)
    assert total == 8 * 176_160_768 + 4096 * 8
    assert active == 2 * 176_160_768 + 4096 * 8
    assert 0.25 < active / total < 0.251


def test_deepseek_v3_shared_expert_is_always_active() -> None:
    """256 routed + 1 shared expert, 8 routed active (DeepSeek-V3 report, Sec. 2.1.2)."""
    total = experts.moe_layer_params(**DEEPSEEK_V3, experts=256, shared_experts=1)
    active = experts.active_moe_layer_params(**DEEPSEEK_V3, experts=256, experts_per_token=8, shared_experts=1)
    assert total == 257 * 44_040_192 + 7168 * 256
    assert active == 9 * 44_040_192 + 7168 * 256


def test_switch_figure_3_capacity_of_6_tokens_on_3_experts() -> None:
    """Switch Transformer Fig. 3: 6 tokens, 3 experts, top-1: capacity 2 at factor 1.0,
    3 at 1.5."""
    assert experts.capacity(tokens=6, experts=3, experts_per_token=1, capacity_factor=1.0) == 2
    assert experts.capacity(tokens=6, experts=3, experts_per_token=1, capacity_factor=1.5) == 3


def test_gshard_top2_capacity_is_2n_over_e() -> None:
    assert experts.capacity(tokens=4096, experts=8, experts_per_token=2, capacity_factor=1.0) == 1024
    assert experts.capacity(tokens=4096, experts=8, experts_per_token=2, capacity_factor=1.25) == 1280
    assert experts.capacity(tokens=10, experts=3, experts_per_token=1, capacity_factor=1.0) == 4  # rounds up


def test_expert_memory_falls_by_ep() -> None:
    """Mixtral's 32 MoE layers of 8 experts at 16 bytes per parameter (ZeRO Sec. 3.1)."""
    one = experts.expert_state_per_gpu_bytes(**MIXTRAL, experts=8, moe_layers=32, ep=1)
    assert one == 32 * 8 * 176_160_768 * 16
    for ep in (2, 4, 8):
        assert experts.expert_state_per_gpu_bytes(**MIXTRAL, experts=8, moe_layers=32, ep=ep) == one / ep
        assert experts.experts_per_gpu(8, ep) == 8 // ep
    with pytest.raises(ValueError, match="ep must be a divisor of the 8 experts"):
        experts.experts_per_gpu(8, 3)


def test_routing_is_the_same_on_every_python() -> None:
    """random.Random(seed).random() is the Mersenne Twister's stream, fixed across
    versions, so the browser (Pyodide's Python) and the build route alike. Pinned here."""
    routes = experts.route_tokens(tokens=6, experts=4, experts_per_token=2, seed=7)
    assert routes == experts.route_tokens(tokens=6, experts=4, experts_per_token=2, seed=7)
    assert routes == ((2, 0), (0, 3), (1, 3), (1, 0), (1, 0), (0, 2))
    assert routes != experts.route_tokens(tokens=6, experts=4, experts_per_token=2, seed=8)
    for chosen in experts.route_tokens(tokens=200, experts=8, experts_per_token=3, seed=1, skew=1.0):
        assert len(set(chosen)) == 3


def test_skew_makes_low_numbered_experts_popular_and_drops_tokens() -> None:
    kw = dict(tokens=512, experts=8, experts_per_token=2, seed=3)
    even = experts.expert_load(experts.route_tokens(**kw), 8)
    skewed = experts.expert_load(experts.route_tokens(**kw, skew=2.0), 8)
    assert sum(even) == sum(skewed) == 1024
    cap = experts.capacity(tokens=512, experts=8, experts_per_token=2, capacity_factor=1.25)  # 160
    assert experts.dropped_tokens(skewed, cap) > experts.dropped_tokens(even, cap)
    assert skewed[0] > skewed[-1]
    assert experts.dropped_tokens([5, 0, 2], 2) == 3
    assert experts.dropped_tokens([1, 1], 0) == 2


def test_dispatch_counts_follow_the_routing() -> None:
    """Tokens 0–1 on GPU 0, 2–3 on GPU 1; experts 0–1 on GPU 0, 2–3 on GPU 1."""
    routes = ((0, 2), (3, 1), (1, 0), (2, 3))
    counts = experts.dispatch_counts(routes, experts=4, ep=2)
    assert counts == ((2, 2), (2, 2))
    assert experts.routed_sent_per_gpu_bytes(counts, hidden=8) == (2 * 8 * 2, 2 * 8 * 2)
    assert experts.dispatch_counts(((0, 1), (0, 1)), experts=4, ep=2) == ((2, 0), (2, 0))
    routes = experts.route_tokens(tokens=64, experts=8, experts_per_token=2, seed=5)
    counts = experts.dispatch_counts(routes, experts=8, ep=4)
    assert all(sum(row) == 16 * 2 for row in counts)  # every GPU's 16 tokens, 2 copies each
    load = experts.expert_load(routes, 8)
    assert [sum(counts[src][dst] for src in range(4)) for dst in range(4)] == [
        load[2 * g] + load[2 * g + 1] for g in range(4)]


def test_balanced_all_to_all_bytes() -> None:
    """Mixtral, 4,096 tokens per GPU, top-2, ep = 8: 4,096 · 2 · 4,096 · 2 · 7/8 =
    58.72e6 bytes per all-to-all; two forward, two backward."""
    kw = dict(tokens=4096, hidden=4096, experts_per_token=2, ep=8)
    one = 4096 * 2 * 4096 * 2 * 7 / 8
    assert experts.all_to_all_sent_per_gpu_layer_bytes(**kw, direction="forward") == 2 * one
    assert experts.all_to_all_sent_per_gpu_layer_bytes(**kw, direction="backward") == 2 * one
    assert experts.all_to_all_sent_per_gpu_layer_bytes(**kw) == 4 * one
    assert experts.all_to_all_sent_per_gpu_layer_bytes(**{**kw, "ep": 1}) == 0


def test_all_to_all_over_compute_depends_only_on_f_and_x_over_beta() -> None:
    """4/9 · (ep − 1)/ep · X/(f·β): Mixtral's wide experts on the network (50 GB/s) at
    150 TFLOP/s: 8.1%; DeepSeek-V3's narrow 2,048-wide experts: seven times more."""
    kw = dict(experts_per_token=2, ep=8, flops_per_gpu=150e12, bytes_per_s=50e9)
    mix = experts.moe_layer_times(tokens=4096, **MIXTRAL, **kw)
    assert mix.comm_over_compute == pytest.approx(4 / 9 * 7 / 8 * 150e12 / (14_336 * 50e9))
    assert mix.comm_over_compute == pytest.approx(0.0814, abs=1e-4)
    other = experts.moe_layer_times(tokens=1024, **{**MIXTRAL, "hidden": 1024}, **{**kw, "experts_per_token": 4})
    assert other.comm_over_compute == pytest.approx(mix.comm_over_compute)
    ds = experts.moe_layer_times(tokens=4096, **DEEPSEEK_V3, **kw)
    assert ds.comm_over_compute == pytest.approx(mix.comm_over_compute * 14_336 / 2048)
    nv = experts.moe_layer_times(tokens=4096, **DEEPSEEK_V3, **{**kw, "bytes_per_s": 450e9})
    assert math.isclose(nv.comm_over_compute * 9, ds.comm_over_compute)


def test_bad_routing_inputs_are_named() -> None:
    with pytest.raises(ValueError, match=r"routes\[1\] must be"):
        experts.expert_load(((0,), ()), 4)
    with pytest.raises(ValueError, match=r"routes\[0\] must be an integer from 0 to 3"):
        experts.expert_load(((4,),), 4)
    with pytest.raises(ValueError, match=r"routes\[0\] must be distinct experts"):
        experts.expert_load(((1, 1),), 4)
    with pytest.raises(ValueError, match="counts must be a square list"):
        experts.routed_sent_per_gpu_bytes([1, 2], hidden=8)
    with pytest.raises(ValueError, match="ep must be a divisor of the 3 routed tokens"):
        experts.dispatch_counts(((0,), (1,), (2,)), experts=4, ep=2)
    with pytest.raises(ValueError, match="experts_per_token must be an integer from 1 to 8"):
        experts.route_tokens(tokens=4, experts=8, experts_per_token=9, seed=0)
