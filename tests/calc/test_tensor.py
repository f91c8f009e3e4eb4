"""Tensor parallelism (Shoeybi et al. 2019): seed 000 step 4, the `tp` widget."""

from __future__ import annotations

import pytest

from calc import tensor
from calc.hardware import LINKS
from calc.models import MODELS, layer_param_count, param_count

M = MODELS["llama2-7b"]
PSI_7B = param_count(M)
LAYER_7B = layer_param_count(M)


def test_four_way_split_puts_50_6m_weights_of_a_layer_on_each_gpu() -> None:
    """`tp.weights_per_gpu_layer`: 202,383,360 / 4 = 50.59e6."""
    assert tensor.weights_per_gpu_layer(LAYER_7B, 4) == pytest.approx(50.59e6, rel=1e-3)


def test_four_way_split_holds_27_gb_of_state() -> None:
    """`tp.state_per_gpu_bytes`: 16Ψ/4 = 26.96e9."""
    assert tensor.state_per_gpu_bytes(params=PSI_7B, tp=4) == pytest.approx(26.96e9, rel=1e-3)


def test_four_all_reduces_per_layer_send_201_mb() -> None:
    """`tp.sent_per_gpu_layer_bytes`: 4 all-reduces (Shoeybi et al. 2019 Fig. 4: f and g,
    forward and backward) × 2(t−1)/t × 4096·4096·2 bytes = 201.3e6."""
    assert tensor.ALL_REDUCES_PER_LAYER == 4
    assert tensor.sent_per_gpu_layer_bytes(hidden=M.hidden, seq_len=M.seq_len, tp=4) == pytest.approx(201.3e6, rel=1e-3)


def test_nvlink_moves_it_in_0_45_ms_against_8_3_ms_of_compute() -> None:
    """`tp.comm_time` 4.474e-4 s at 450 GB/s, `tp.compute_time` 8.289e-3 s at
    150 TFLOP/s, `tp.comm_over_compute` 0.054."""
    sent = tensor.sent_per_gpu_layer_bytes(hidden=M.hidden, seq_len=M.seq_len, tp=4)
    assert tensor.comm_seconds(sent, LINKS["nvlink"].bytes_per_s) == pytest.approx(4.474e-4, rel=1e-3)
    assert tensor.compute_seconds_per_layer(layer_params=LAYER_7B, seq_len=M.seq_len, tp=4) == pytest.approx(8.289e-3, rel=1e-3)
    assert tensor.comm_over_compute(layer_params=LAYER_7B, hidden=M.hidden, seq_len=M.seq_len, tp=4) == pytest.approx(0.054, abs=0.0005)


def test_the_network_is_nine_times_slower() -> None:
    """Over the 50 GB/s network the same exchange takes 9× longer: why t stays in a node."""
    layer = dict(layer_params=LAYER_7B, hidden=M.hidden, seq_len=M.seq_len, tp=4)
    nv = tensor.comm_over_compute(**layer, bytes_per_s=LINKS["nvlink"].bytes_per_s)
    net = tensor.comm_over_compute(**layer, bytes_per_s=LINKS["network"].bytes_per_s)
    assert net / nv == pytest.approx(9)
    assert net == pytest.approx(0.486, abs=0.001)


def test_no_split_no_traffic_and_ratio_grows_with_t() -> None:
    assert tensor.sent_per_gpu_layer_bytes(hidden=4096, seq_len=4096, tp=1) == 0
    ratios = [tensor.comm_over_compute(layer_params=LAYER_7B, hidden=4096, seq_len=4096, tp=t) for t in (1, 2, 4, 8)]
    assert ratios[0] == 0 and ratios == sorted(ratios)


def test_one_message_is_an_s_b_h_activation_in_16_bits() -> None:
    """`tp.message_bytes`: 2sbh, the 33.55 MB that Megatron's f and g all-reduce for one
    4,096-token Llama 2 7B sequence (the same tensor the pipeline passes between stages)."""
    assert tensor.message_bytes(hidden=4096, seq_len=4096) == 2 * 4096 * 4096
    assert tensor.message_bytes(hidden=8192, seq_len=4096, micro_batch=2) == 2 * 2 * 4096 * 8192


@pytest.mark.parametrize(("t", "messages"), [(1, 0), (2, 4), (4, 6), (8, 7)])
def test_bytes_sent_per_layer_are_4_ring_factors_of_one_message(t: int, messages: float) -> None:
    """4 × 2(t−1)/t: at t = 8 each GPU sends 7 messages per layer, and sequence
    parallelism (4 all-gathers + 4 reduce-scatters, (t−1)/t each) sends the same."""
    assert tensor.sent_over_message(tp=t) == pytest.approx(messages)
    assert tensor.sent_over_message(tp=t, sequence_parallel=True) == pytest.approx(messages)
    sent = tensor.sent_per_gpu_layer_bytes(hidden=M.hidden, seq_len=M.seq_len, tp=t)
    assert sent == pytest.approx(messages * tensor.message_bytes(hidden=M.hidden, seq_len=M.seq_len))


def test_llama2_70b_heads_split_evenly_up_to_t_8() -> None:
    """Llama 2 70B: 64 query heads in 8 KV groups (Touvron et al. 2023, Sec. 2.2; config
    num_key_value_heads = 8): at t = 8 each GPU has 8 query heads and 1 KV head; at t = 16
    half a KV head, i.e. each KV head on 2 GPUs."""
    m = MODELS["llama2-70b"]
    assert tensor.heads_per_gpu(heads=m.heads, tp=8) == 8
    assert tensor.kv_heads_per_gpu(kv_heads=m.kv_heads, tp=8) == 1
    assert tensor.kv_heads_per_gpu(kv_heads=m.kv_heads, tp=16) == 0.5
    with pytest.raises(ValueError, match="heads"):
        tensor.heads_per_gpu(heads=0, tp=8)
