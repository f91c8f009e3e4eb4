"""calc.tensor's figures for the tensor-parallel and 2-D mesh labs: sequence parallelism's
collectives (Korthikanti et al. 2022), the parameters tensor parallelism splits and keeps
whole (Shoeybi et al. 2019), and FSDP's dim-0 shards with their padding."""

from __future__ import annotations

import pytest

from calc import tensor
from calc.collectives import bus_factor
from calc.models import MODELS, megatron_param_count

H_7B, S_7B = MODELS["llama2-7b"].hidden, MODELS["llama2-7b"].seq_len


@pytest.mark.parametrize("tp", [1, 2, 3, 4, 8, 16])
def test_sequence_parallelism_sends_the_bytes_of_tensor_parallelism(tp: int) -> None:
    """Korthikanti et al. 2022, Sec. 4.2.2: an all-reduce is a reduce-scatter plus an
    all-gather, so "the communication bandwidth used for tensor parallelism and tensor
    together with sequence parallelism are the same"."""
    plain = tensor.sent_per_gpu_layer_bytes(hidden=H_7B, seq_len=S_7B, tp=tp)
    sp = tensor.sent_per_gpu_layer_bytes(hidden=H_7B, seq_len=S_7B, tp=tp, sequence_parallel=True)
    assert sp == pytest.approx(plain, rel=1e-12)
    assert tensor.SP_ALL_GATHERS_PER_LAYER + tensor.SP_REDUCE_SCATTERS_PER_LAYER == 2 * tensor.ALL_REDUCES_PER_LAYER


def test_sequence_parallel_llama_layer_sends_201_mb() -> None:
    """4 all-gathers + 4 reduce-scatters × 3/4 × 4096·4096·2 bytes = 201.3e6 at t = 4,
    the figure of the plain split (test_tensor.py)."""
    sp = tensor.sent_per_gpu_layer_bytes(hidden=H_7B, seq_len=S_7B, tp=4, sequence_parallel=True)
    assert sp == pytest.approx(201.3e6, rel=1e-3)
    assert sp == 8 * bus_factor("all_gather", 4) * H_7B * S_7B * 2


def test_the_labs_layer_sends_98_kib_per_rank_in_fp32() -> None:
    """The tensor-parallel lab: s = 32, b = 2, h = 64, t = 4, fp32 (twice calc's 2 bytes):
    4 × 1.5 × 4,096 × 4 = 98,304 bytes, plain or sequence-parallel."""
    for sp in (False, True):
        fp16 = tensor.sent_per_gpu_layer_bytes(hidden=64, seq_len=32, micro_batch=2, tp=4, sequence_parallel=sp)
        assert fp16 * 2 == 98_304


def test_split_and_replicated_parameters_make_the_layer() -> None:
    """12h² + 7h split, 6h whole: together one layer of Narayanan et al. 2021, Eq. 2
    (12h² + 13h). GPT-3 175B (h = 12,288): 1,812,099,072 per layer, 73,728 of them whole."""
    for h in (64, 4096, 12_288):
        layer = megatron_param_count(layers=2, hidden=h, vocab=1, seq_len=1) - megatron_param_count(
            layers=1, hidden=h, vocab=1, seq_len=1)
        assert tensor.split_params_per_layer(h) + tensor.replicated_params_per_layer(h) == layer == 12 * h * h + 13 * h
    assert tensor.split_params_per_layer(12_288) + tensor.replicated_params_per_layer(12_288) == 1_812_099_072
    assert tensor.replicated_params_per_layer(12_288) == 73_728


def test_counting_the_norms_as_split_is_off_by_6h_times_1_minus_1_over_t() -> None:
    """weights_per_gpu_layer divides the whole layer by t; a GPU really holds
    split/t + 6h: 64·6·(1 − 1/4) = 288 more for the lab's h = 64, t = 4 (12,784 against
    12,496), a share that vanishes for big h (GPT-3 175B, t = 8: 64,512, 2.8e-4 of a GPU's share)."""
    h, t = 64, 4
    exact = tensor.weights_per_gpu_layer(tensor.split_params_per_layer(h), t) + tensor.replicated_params_per_layer(h)
    approx = tensor.weights_per_gpu_layer(12 * h * h + 13 * h, t)
    assert (exact, approx) == (12_784, 12_496)
    big = 12_288
    layer = 12 * big * big + 13 * big
    gap = tensor.weights_per_gpu_layer(tensor.split_params_per_layer(big), 8) + tensor.replicated_params_per_layer(big)
    assert (gap - tensor.weights_per_gpu_layer(layer, 8)) / (layer / 8) == pytest.approx(2.848e-4, rel=1e-3)


def test_fsdp_shards_gpt2s_vocabulary_with_padding() -> None:
    """GPT-2's 50,257 tokens over N_d = 8: chunks of 6,283 rows, the last rank holds
    6,276, so 7 rows are padding; Megatron pads the vocabulary to 50,304 (a multiple of
    128, its --make-vocab-size-divisible-by), which splits evenly: 6,288 each."""
    assert tensor.shard_rows(rows=50_257, dp=8) == 6_283  # rank 0: a whole chunk
    held = [tensor.shard_rows(rows=50_257, dp=8, dp_rank=i) for i in range(8)]
    assert held == [6_283] * 7 + [6_276] and sum(held) == 50_257
    assert [tensor.shard_rows(rows=50_304, dp=8, dp_rank=i) for i in range(8)] == [6_288] * 8


@pytest.mark.parametrize(("rows", "dp"), [(1, 1), (5, 4), (127, 2), (64, 2), (7, 8), (1000, 3)])
def test_shards_cover_the_rows_and_pad_less_than_one_row_per_rank(rows: int, dp: int) -> None:
    """torch.chunk's rule: the ranks' rows add up to the tensor (some ranks may hold
    none: 5 rows over 4 ranks are 2, 2, 1, 0), and the padding, N_d·c − rows, is below N_d."""
    held = [tensor.shard_rows(rows=rows, dp=dp, dp_rank=i) for i in range(dp)]
    chunk = tensor.shard_rows(rows=rows, dp=dp)  # rank 0's rows: every rank's padded storage
    assert sum(held) == rows and max(held) == chunk and held == sorted(held, reverse=True)
    assert 0 <= dp * chunk - rows < dp


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="^sequence_parallel must be"):
        tensor.sent_per_gpu_layer_bytes(hidden=64, seq_len=32, tp=4, sequence_parallel=1)
    with pytest.raises(ValueError, match="^dp_rank must be an integer from 0 to 1"):
        tensor.shard_rows(rows=127, dp=2, dp_rank=2)
    with pytest.raises(ValueError, match="^rows must be"):
        tensor.shard_rows(rows=0, dp=2)
    with pytest.raises(ValueError, match="^hidden must be"):
        tensor.replicated_params_per_layer(0)
    with pytest.raises(ValueError, match="^hidden must be"):
        tensor.split_params_per_layer(1.5)
