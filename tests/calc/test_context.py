"""Context parallelism (calc.context): ring attention (Liu et al. 2023), Llama 3's
balanced causal split (Dubey et al. 2024, Sec. 3.3.2) and DeepSpeed-Ulysses (Jacobs et
al. 2023), against the papers' statements and the invariants between them."""

from __future__ import annotations

import math

import pytest

from calc import activations, context
from calc.models import MODELS

L7 = MODELS["llama2-7b"]
L70 = MODELS["llama2-70b"]
SHAPE_7B = dict(hidden=L7.hidden, heads=L7.heads, kv_heads=L7.kv_heads)
SHAPE_70B = dict(hidden=L70.hidden, heads=L70.heads, kv_heads=L70.kv_heads)


def test_llama3_gives_rank_i_chunks_i_and_2cp_minus_1_minus_i() -> None:
    """Sec. 3.3.2: "the i-th CP rank received both the i-th and the (2 × CP − 1 − i)-th chunks"."""
    assert context.rank_chunks(4) == ((0, 7), (1, 6), (2, 5), (3, 4))
    assert context.rank_chunks(1) == ((0,),)
    assert context.rank_chunks(4, "contiguous") == ((0,), (1,), (2,), (3,))
    assert context.chunk_ranks(4) == (0, 1, 2, 3, 3, 2, 1, 0)
    for cp in (2, 3, 8, 16):
        held = sorted(c for chunks in context.rank_chunks(cp) for c in chunks)
        assert held == list(range(2 * cp))


def test_the_ring_shows_every_rank_every_block_once() -> None:
    """Liu et al. 2023, Fig. 2: at step k rank r holds the block of rank r − k."""
    assert context.ring_holders(4)[1] == (3, 0, 1, 2)
    for cp in (1, 2, 5, 8):
        holders = context.ring_holders(cp)
        assert len(holders) == cp
        for r in range(cp):
            assert sorted(step[r] for step in holders) == list(range(cp))
        for step, nxt in zip(holders, holders[1:]):  # each block moves one rank on
            assert all(nxt[(r + 1) % cp] == step[r] for r in range(cp))


@pytest.mark.parametrize("cp", [2, 4, 8, 16])
def test_balanced_split_gives_every_rank_half_a_block_at_every_step(cp: int) -> None:
    """Causal attention done two ways: the same total work (cp²/2 blocks), but the
    contiguous split leaves rank cp − 1 with cp − ½ blocks and rank 0 with ½, while the
    balanced split gives everyone ½ per step."""
    balanced = context.ring_step_work(cp, "balanced")
    contiguous = context.ring_step_work(cp, "contiguous")
    assert all(w == 0.5 for row in balanced for w in row)
    total = cp * cp / 2
    assert math.fsum(w for row in balanced for w in row) == total
    assert math.fsum(w for row in contiguous for w in row) == total
    per_rank = [math.fsum(row[r] for row in contiguous) for r in range(cp)]
    assert per_rank[0] == 0.5 and per_rank[-1] == cp - 0.5
    assert all(w == 1.0 for row in context.ring_step_work(cp, causal=False) for w in row)



@pytest.mark.parametrize("cp", [1, 2, 3, 4, 8, 16, 64])
@pytest.mark.parametrize("split", context.SPLITS)
@pytest.mark.parametrize("causal", [True, False])
def test_the_closed_form_of_the_busiest_rank_equals_the_table(cp: int, split: str, causal: bool) -> None:
    """The compute and FLOP functions use closed forms (the planner asks for cp in the
    thousands); they must equal the step-by-step table."""
    work = context.ring_step_work(cp, split, causal=causal)
    total, busiest = context._step_maxima(cp, split, causal)
    assert total == math.fsum(max(row) for row in work)
    assert busiest == max(max(row) for row in work)

def test_kv_block_of_llama2_7b_and_gqa_70b() -> None:
    """2 · (s/cp) · b · h_kv · 2 bytes: 7B (h_kv = 4,096), s = 4,096, cp = 4: 16.78e6;
    70B's 8 K/V heads of 128 make h_kv = 1,024, an eighth of its h."""
    assert context.kv_block_bytes(**SHAPE_7B, seq_len=4096, micro_batch=1, cp=4) == 2 * 1024 * 4096 * 2
    assert context.kv_block_bytes(**SHAPE_70B, seq_len=4096, micro_batch=1, cp=4) == 2 * 1024 * 1024 * 2


def test_ring_sends_cp_minus_1_blocks_forward_and_twice_as_many_backward() -> None:
    kw = dict(**SHAPE_7B, seq_len=131_072, micro_batch=1)
    for cp in (2, 4, 16):
        block = context.kv_block_bytes(**kw, cp=cp)
        assert context.ring_sent_per_gpu_layer_bytes(**kw, cp=cp, direction="forward") == (cp - 1) * block
        assert context.ring_sent_per_gpu_layer_bytes(**kw, cp=cp, direction="backward") == 2 * (cp - 1) * block
        assert context.ring_sent_per_gpu_layer_bytes(**kw, cp=cp) == 3 * (cp - 1) * block
    assert context.ring_sent_per_gpu_layer_bytes(**kw, cp=1) == 0


def test_ring_bytes_per_gpu_barely_change_with_cp_while_ulysses_falls_as_1_over_cp() -> None:
    """Ring forward (cp − 1)/cp · 2·s·b·h_kv·2 → 2·s·b·h_kv·2; Ulysses (Jacobs et al. 2023,
    Sec. 3.2) 4·N·h/P per link (with h_kv = h), times (P − 1)/P and 2 bytes."""
    s, h = 131_072, L7.hidden
    kw = dict(**SHAPE_7B, seq_len=s, micro_batch=1, direction="forward")
    ring = {cp: context.ring_sent_per_gpu_layer_bytes(**kw, cp=cp) for cp in (2, 4, 8, 16, 32)}
    ulysses = {cp: context.ulysses_sent_per_gpu_layer_bytes(**kw, cp=cp) for cp in (2, 4, 8, 16, 32)}
    for cp in ring:
        assert ring[cp] == pytest.approx((cp - 1) / cp * 2 * s * h * 2)
        assert ulysses[cp] == pytest.approx(4 * s * h / cp * (cp - 1) / cp * 2)
    assert ring[32] / ring[2] < 2  # never more than twice, whatever the ring
    assert ulysses[32] < ring[32] / 8
    both = context.ulysses_sent_per_gpu_layer_bytes(**{**kw, "direction": "both"}, cp=8)
    assert both == 2 * ulysses[8]
    assert context.sent_per_gpu_layer_bytes(method="ulysses", **kw, cp=8) == ulysses[8]
    assert context.sent_per_gpu_layer_bytes(method="ring", **kw, cp=8) == ring[8]


def test_ulysses_cannot_split_more_ways_than_kv_heads() -> None:
    assert context.ulysses_max_cp(32, 32) == 32
    assert context.ulysses_max_cp(64, 8) == 8  # Llama 2 70B
    kw = dict(**SHAPE_70B, seq_len=131_072, micro_batch=1)
    context.ulysses_sent_per_gpu_layer_bytes(**kw, cp=8)
    with pytest.raises(ValueError, match="cp must be a divisor of the 8 key/value heads"):
        context.ulysses_sent_per_gpu_layer_bytes(**kw, cp=16)
    context.ring_sent_per_gpu_layer_bytes(**kw, cp=16)  # the ring has no such limit


def test_liu_et_al_block_size_condition_c_at_least_f_over_b() -> None:
    """Sec. 3: no masking, h_kv = h: c ≥ F/B. A100 (312e12 FLOP/s) over NVLink at
    300e9 B/s: 1,040 tokens; the causal, balanced ring does half the work per step, so
    it needs twice the block; grouped-query attention (h_kv = h/8) an eighth."""
    kw = dict(flops_per_gpu=312e12, bytes_per_s=300e9)
    assert context.min_block_tokens(**SHAPE_7B, **kw, causal=False) == pytest.approx(1040)
    assert context.min_block_tokens(**SHAPE_7B, **kw) == pytest.approx(2080)
    assert context.min_block_tokens(**SHAPE_70B, **kw) == pytest.approx(260)


@pytest.mark.parametrize("cp", [2, 4, 8, 16])
def test_step_times_hide_the_transfer_exactly_when_the_block_is_big_enough(cp: int) -> None:
    beta, x = 50e9, 150e12
    need = context.min_block_tokens(**SHAPE_7B, flops_per_gpu=x, bytes_per_s=beta)  # 6,000
    assert need == pytest.approx(6000)
    for s in (cp * 2048, cp * 8192):
        t = context.ring_step_times(**SHAPE_7B, seq_len=s, micro_batch=1, cp=cp, flops_per_gpu=x, bytes_per_s=beta)
        assert t.hidden == (s / cp >= need)
        assert t.backward_compute == 2 * t.forward_compute
        assert t.backward_transfer == 2 * t.forward_transfer
        assert (t.exposed == 0) == t.hidden


def test_ring_step_time_is_the_formula() -> None:
    """cp = 4, s = 4,096, Llama 2 7B: ½ · 4 · 1,024² · 4,096 FLOP at 150e12, one 16.78e6-byte
    block at 450e9 B/s."""
    t = context.ring_step_times(**SHAPE_7B, seq_len=4096, micro_batch=1, cp=4, flops_per_gpu=150e12,
                                bytes_per_s=450e9)
    assert t.forward_compute == pytest.approx(0.5 * 4 * 1024**2 * 4096 / 150e12)
    assert t.forward_transfer == pytest.approx(2 * 1024 * 4096 * 2 / 450e9)
    one = context.ring_step_times(**SHAPE_7B, seq_len=4096, micro_batch=1, cp=1, flops_per_gpu=150e12,
                                  bytes_per_s=450e9)
    assert one.forward_transfer == 0 and one.hidden


def test_attention_flops_split_evenly_only_when_balanced() -> None:
    """Unsplit causal attention is half of 4·b·s²·h; over cp balanced ranks each does 1/cp
    of that; contiguous, the busiest does (cp − ½)/cp² of the unmasked work."""
    s, h, cp = 8192, 4096, 4
    full = 4 * s * s * h
    assert context.attention_flops_per_gpu_layer(hidden=h, seq_len=s, micro_batch=1, cp=1) == full / 2
    balanced = context.attention_flops_per_gpu_layer(hidden=h, seq_len=s, micro_batch=1, cp=cp)
    assert balanced == pytest.approx(full / 2 / cp)
    contiguous = context.attention_flops_per_gpu_layer(hidden=h, seq_len=s, micro_batch=1, cp=cp, split="contiguous")
    # the step lasts as long as its busiest rank: ½ at step 0, 1 at every later step
    assert contiguous == pytest.approx((0.5 + (cp - 1)) * full / cp**2)
    assert contiguous > balanced


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_activations_fall_by_exactly_cp(recompute: str) -> None:
    """Every s·b·h term and the 5·a·s²·b scores (s/cp queries × s keys) divide by cp."""
    kw = dict(hidden=4096, heads=32, seq_len=131_072, micro_batch=1, tp=2, sequence_parallel=True, recompute=recompute)
    whole = activations.activation_bytes_per_layer(**kw)
    for cp in (1, 2, 16):
        assert context.activation_bytes_per_gpu_layer(**kw, cp=cp) == whole / cp


def test_a_128k_context_of_llama2_7b_does_not_fit_one_gpu_without_cp() -> None:
    """Selective recomputation (scores dropped): 34·s·b·h per layer, 32 layers = 584 GB
    at s = 131,072; cp = 16 brings it to 36.5 GB."""
    kw = dict(hidden=4096, heads=32, seq_len=131_072, micro_batch=1, recompute="selective")
    per_layer = context.activation_bytes_per_gpu_layer(**kw, cp=1)
    assert per_layer * 32 == pytest.approx(34 * 131_072 * 4096 * 32)
    assert per_layer * 32 > 80e9
    assert context.activation_bytes_per_gpu_layer(**kw, cp=16) * 32 < 80e9


def test_bad_shapes_are_named() -> None:
    with pytest.raises(ValueError, match="seq_len must be a multiple of 8"):
        context.attention_flops_per_gpu_layer(hidden=64, seq_len=100, micro_batch=1, cp=4)
    with pytest.raises(ValueError, match="seq_len must be a multiple of 3"):
        context.kv_block_bytes(hidden=64, heads=4, kv_heads=2, seq_len=100, micro_batch=1, cp=3)
    with pytest.raises(ValueError, match="kv_heads must be a divisor of heads"):
        context.kv_block_bytes(hidden=64, heads=4, kv_heads=3, seq_len=96, micro_batch=1, cp=3)
    with pytest.raises(ValueError, match="split must be one of balanced, contiguous"):
        context.rank_chunks(4, "striped")
