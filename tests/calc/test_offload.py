"""DeepSpeed's memory estimators (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py at
calc.offload.DEEPSPEED_COMMIT) against every row that docs/code-docs/source/memory.rst
prints at that revision, and ZeRO-Offload / ZeRO-Infinity (Ren et al. 2021; Rajbhandari
et al. 2021) against the figures the papers and their authors' SC21 slides state."""

from __future__ import annotations

import pytest

from calc import offload, zero
from calc.memory import training_state_bytes
from calc.models import MODELS, param_count

# -- memory.rst at DEEPSPEED_COMMIT, the printed tables, verbatim -----------------------
# "Let's try a 3B model with just 1 node with 8 gpus": t5-3b, live model and cold call
# (total_params=2851e6, largest_layer_params=32e6).
ZERO2_LIVE = """
  127.48GB |   5.31GB | offload_optimizer=cpu
  127.48GB |  15.93GB | offload_optimizer=none
"""
ZERO2_COLD = """
  127.45GB |   5.31GB | offload_optimizer=cpu
  127.45GB |  15.93GB | offload_optimizer=none
"""
ZERO3_LIVE = """
   71.71GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=1
  127.48GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=0
   63.74GB |   0.79GB | offload_param=none, offload_optimizer=cpu , zero_init=1
  127.48GB |   0.79GB | offload_param=none, offload_optimizer=cpu , zero_init=0
    1.47GB |   6.10GB | offload_param=none, offload_optimizer=none, zero_init=1
  127.48GB |   6.10GB | offload_param=none, offload_optimizer=none, zero_init=0
"""
ZERO3_COLD = """
   71.69GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=1
  127.45GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=0
   63.72GB |   0.78GB | offload_param=none, offload_optimizer=cpu , zero_init=1
  127.45GB |   0.78GB | offload_param=none, offload_optimizer=cpu , zero_init=0
    1.43GB |   6.09GB | offload_param=none, offload_optimizer=none, zero_init=1
  127.45GB |   6.09GB | offload_param=none, offload_optimizer=none, zero_init=0
"""


def printed(text: str) -> list[str]:
    return [line.strip() for line in text.strip("\n").splitlines()]


def rows(table: tuple[offload.EstimateRow, ...]) -> list[str]:
    return [row.printed().strip() for row in table]


def t5_params(*, d_model: int, d_ff: int, layers: int, heads: int, d_kv: int, vocab: int) -> tuple[int, int]:
    """(total, largest module) of Hugging Face ``T5Model`` (what ``AutoModel`` loads),
    counted as DeepSpeed's ``model_to_params`` does: the shared embedding V·d once,
    per encoder block self-attention (4·d·heads·d_kv) + MLP (2·d·d_ff) + 2 RMS norms,
    per decoder block one more attention and norm, a relative-position bias (32 buckets ×
    heads) in each stack's first block, one final norm per stack. T5 has no biases."""
    attention = 4 * d_model * heads * d_kv
    mlp = 2 * d_model * d_ff
    encoder = layers * (attention + mlp + 2 * d_model) + 32 * heads + d_model
    decoder = layers * (2 * attention + mlp + 3 * d_model) + 32 * heads + d_model
    embedding = vocab * d_model
    return embedding + encoder + decoder, max(embedding, d_model * d_ff, d_model * heads * d_kv)


# Hugging Face t5-3b and t5-large config.json (d_model, d_ff, num_layers, num_heads, d_kv, vocab_size).
T5_3B = t5_params(d_model=1024, d_ff=16384, layers=24, heads=32, d_kv=128, vocab=32128)
T5_LARGE = t5_params(d_model=1024, d_ff=4096, layers=24, heads=16, d_kv=64, vocab=32128)


def test_t5_counts_are_the_ones_deepspeed_printed() -> None:
    """memory.rst: "SW: Model with 2851M total params, 32M largest layer params" (t5-3b,
    ``int(total_params/1e6)``) and "total params: 737.67M / largest layer params: 32.90M"
    (t5-large)."""
    assert (int(T5_3B[0] / 1e6), int(T5_3B[1] / 1e6)) == (2851, 32)
    assert f"{T5_LARGE[0] / 1e6:6.2f}M" == "737.67M" and f"{T5_LARGE[1] / 1e6:6.2f}M" == " 32.90M"


def test_zero3_cold_table_of_memory_rst_row_by_row() -> None:
    table = offload.zero3_table(params=2851e6, largest_layer_params=32e6, gpus_per_node=8, nodes=1)
    assert rows(table) == printed(ZERO3_COLD)


def test_zero3_live_table_of_memory_rst_row_by_row() -> None:
    """The live t5-3b rows, from the exact counts of its config (a few more parameters
    than 2851e6: "There is a slight difference due to rounding")."""
    total, largest = T5_3B
    table = offload.zero3_table(params=total, largest_layer_params=largest, gpus_per_node=8, nodes=1)
    assert rows(table) == printed(ZERO3_LIVE)


def test_zero2_tables_of_memory_rst_are_the_formula_before_the_fix() -> None:
    """memory.rst's ZeRO-2 rows (15.93GB without offload) are 4Ψ + 16Ψ/n, the formula its
    "GPU RAM" section states and the code had before DEEPSPEED_FIX_COMMIT."""
    cold = offload.zero2_table(params=2851e6, gpus_per_node=8, before_fix=True)
    live = offload.zero2_table(params=T5_3B[0], gpus_per_node=8, before_fix=True)
    assert rows(cold) == printed(ZERO2_COLD)
    assert rows(live) == printed(ZERO2_LIVE)


def test_zero2_today_gives_11_28_gib_without_offload_and_the_same_other_cells() -> None:
    """At DEEPSPEED_COMMIT: 2Ψ + int(18Ψ/8) = 12.12e9 bytes = 11.28 GiB; the CPU column and
    the offload row are unchanged by the fix."""
    now = offload.zero2_table(params=2851e6, gpus_per_node=8)
    assert rows(now) == ["127.45GB |   5.31GB | offload_optimizer=cpu",
                         "127.45GB |  11.28GB | offload_optimizer=none"]
    assert now[1].estimate.gpu_bytes == 2 * 2851 * 10**6 + int(18 * 2851e6 / 8)


def test_t5_large_gpu_cases_of_memory_rst() -> None:
    """memory.rst "GPU RAM" example, t5-large on 4 GPUs, printed ``>>20`` (MiB):
    largest layer memory 125MB, case1 3291MB, case2 125MB, case3 477MB."""
    total, largest = T5_LARGE
    case = {(o, p): offload.zero3_estimate(params=total, largest_layer_params=largest, gpus_per_node=4,
                                           offload_optimizer=o, offload_param=p).gpu_bytes
            for o, p in ((False, False), (True, True), (True, False))}
    assert (4 * largest) >> 20 == 125
    assert case[False, False] >> 20 == 3291
    assert case[True, True] >> 20 == 125
    assert case[True, False] >> 20 == 477


def test_the_buffer_factor_multiplies_only_the_cpu_column() -> None:
    one = offload.zero3_estimate(params=2851e6, largest_layer_params=32e6, gpus_per_node=8, buffer_factor=1.0)
    default = offload.zero3_estimate(params=2851e6, largest_layer_params=32e6, gpus_per_node=8)
    assert default.gpu_bytes == one.gpu_bytes
    assert default.cpu_bytes == pytest.approx(1.5 * one.cpu_bytes, rel=1e-9)
    assert one.cpu_bytes == int(18 * 2851e6)  # fp32 params, grads, m, v (16) + fp16 params (2)


def test_more_nodes_divide_the_zero3_offload_cpu_term_per_node() -> None:
    """gpus_factor = 1/nodes: two nodes of 8 hold half the offloaded state each."""
    one = offload.zero3_estimate(params=2851e6, largest_layer_params=32e6, gpus_per_node=8, nodes=1)
    two = offload.zero3_estimate(params=2851e6, largest_layer_params=32e6, gpus_per_node=8, nodes=2)
    assert two.cpu_bytes == pytest.approx(one.cpu_bytes / 2, rel=1e-9)
    assert two.gpu_bytes == one.gpu_bytes  # 4L: the largest layer does not shard


def test_estimator_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="gpus_per_node"):
        offload.zero2_estimate(params=1e9, gpus_per_node=0)
    with pytest.raises(ValueError, match="largest_layer_params"):
        offload.zero3_estimate(params=1e9, largest_layer_params=2e9)
    with pytest.raises(ValueError, match="offload_param needs offload_optimizer"):
        offload.zero3_estimate(params=1e9, largest_layer_params=1e6, offload_optimizer=False, offload_param=True)
    with pytest.raises(ValueError, match="zero_init"):
        offload.zero3_estimate(params=1e9, largest_layer_params=1e6, zero_init=1)


def test_largest_layer_of_the_book_models() -> None:
    """Llama 2 7B/70B: the embedding (and the untied head) V·h is the largest module;
    GPT-3: the token embedding V·h = 50,257 · 12,288 beats the MLP's h·4h + 4h."""
    assert offload.largest_layer_params(MODELS["llama2-7b"]) == 32_000 * 4_096
    assert offload.largest_layer_params(MODELS["llama2-70b"]) == 32_000 * 8_192 > 8_192 * 28_672
    assert offload.largest_layer_params(MODELS["gpt3-175b"]) == 50_257 * 12_288


@pytest.mark.parametrize(("gpus", "layout"), [(1, (1, 1)), (8, (8, 1)), (12, (6, 2)), (13, (1, 13)), (64, (8, 8))])
def test_deepspeed_layout_keeps_the_gpu_count(gpus: int, layout: tuple[int, int]) -> None:
    assert offload.deepspeed_layout(gpus) == layout


def test_gib_is_two_to_the_thirty() -> None:
    assert offload.gib(2**30) == 1.0 and offload.GIB == 1_073_741_824


# -- ZeRO-Offload and ZeRO-Infinity, the book's clean model -----------------------------
V100_BYTES = 32e9  # NVIDIA V100 datasheet: 32 GB HBM2, the GPU of both papers
DGX2_CPU_BYTES = 1.5e12  # NVIDIA DGX-2 datasheet: 1.5 TB system memory, 16 V100 32 GB
DGX2_NVME_BYTES = 30e12  # DGX-2 datasheet: 30 TB internal NVMe (8 × 3.84 TB)


def test_zero_offload_keeps_2_psi_on_the_gpu_and_14_psi_on_the_cpu() -> None:
    """Ren et al. 2021 Sec. 4.1, one GPU: fp16 parameters (2M) on the GPU; fp16 gradients
    and fp32 optimizer state (2M + 12M) on the CPU: 8× less GPU memory."""
    p = offload.offload_state_per_gpu(params=1.0, dp=1, zero_stage=2, offload="optimizer")
    assert (p.gpu_bytes, p.cpu_bytes) == (2.0, 14.0)
    assert training_state_bytes(1.0) / p.gpu_bytes == 8.0
    assert offload.pcie_bytes_per_gpu(params=1.0, dp=1, zero_stage=2, offload="optimizer") == 4.0


def test_zero_offload_fits_13b_on_one_v100_where_plain_training_fits_1_4b() -> None:
    """Ren et al. 2021, abstract: "over 13 billion parameters on a single GPU", against
    1.4B "the largest that can be trained" by PyTorch alone: the model states of 13B fit a
    32 GB V100 (26 GB) with room left for activations, and the CPU part fits a DGX-2."""
    p = offload.offload_state_per_gpu(params=13e9, dp=1, zero_stage=2, offload="optimizer")
    assert p.gpu_bytes == 26e9 < V100_BYTES
    assert p.cpu_bytes == 182e9 < DGX2_CPU_BYTES
    assert training_state_bytes(1.4e9) < V100_BYTES <= training_state_bytes(2.0e9)
    assert training_state_bytes(13e9) > 6 * V100_BYTES


def test_zero_infinity_single_dgx2_capacities() -> None:
    """ZeRO-Infinity SC21 slides (DeepSpeed docs/assets/files/SC21-ZeRO-Infinity.pdf),
    trainable parameters on one DGX-2 node: ZeRO-3 20B, ZeRO-Infinity (CPU) 70B,
    ZeRO-Infinity (NVMe) 1000B ("1T params on a single node")."""
    def state(params: float, where: str) -> offload.Placement:
        return offload.offload_state_per_gpu(params=params, dp=16, zero_stage=3, offload=where)
    assert zero.state_per_gpu_bytes(params=20e9, dp=16, zero_stage=3) == 20e9 < V100_BYTES
    assert 16 * state(70e9, "optimizer_params").cpu_bytes == 1.12e12 < DGX2_CPU_BYTES
    assert 16 * state(1e12, "optimizer_params").cpu_bytes == 16e12 < DGX2_NVME_BYTES
    assert 16 * state(1e12, "optimizer_params").cpu_bytes > DGX2_CPU_BYTES


PSI_7B = param_count(MODELS["llama2-7b"])
OFFLOADS_BY_STAGE = [(s, o) for s in (0, 1, 2, 3) for o in offload.OFFLOADS if offload.offload_available(o, s)]


@pytest.mark.parametrize(("stage", "where"), OFFLOADS_BY_STAGE)
@pytest.mark.parametrize("n", [1, 8, 64])
def test_offloading_never_raises_gpu_bytes_and_loses_no_state(stage: int, where: str, n: int) -> None:
    base = zero.state_per_gpu_bytes(params=PSI_7B, dp=n, zero_stage=stage)
    p = offload.offload_state_per_gpu(params=PSI_7B, dp=n, zero_stage=stage, offload=where)
    assert p.gpu_bytes <= base
    if stage >= 2 or n == 1:
        assert p.total == pytest.approx(base, rel=1e-12)  # the same state, moved
    else:  # stage 1: the gradients leave the GPU in shards, as in stage 2
        assert p.total <= base


def test_what_deepspeed_refuses_is_refused() -> None:
    assert [o for o in offload.OFFLOADS if offload.offload_available(o, 0)] == ["none"]
    assert not offload.offload_available("optimizer_params", 2)
    with pytest.raises(ValueError, match="not available with zero_stage 2"):
        offload.offload_state_per_gpu(params=1e9, dp=8, zero_stage=2, offload="optimizer_params")
    with pytest.raises(ValueError, match="offload must be one of"):
        offload.pcie_bytes_per_gpu(params=1e9, dp=8, zero_stage=3, offload="nvme")


def test_pcie_traffic_shrinks_with_the_gpus_and_param_offload_adds_two_reads() -> None:
    one = offload.pcie_bytes_per_gpu(params=PSI_7B, dp=1, zero_stage=3, offload="optimizer_params")
    eight = offload.pcie_bytes_per_gpu(params=PSI_7B, dp=8, zero_stage=3, offload="optimizer_params")
    assert one == pytest.approx(6 * PSI_7B) and eight == pytest.approx(one / 8)
    assert offload.pcie_bytes_per_gpu(params=PSI_7B, dp=8, zero_stage=3, offload="optimizer") == pytest.approx(eight * 2 / 3)
    assert offload.pcie_bytes_per_gpu(params=PSI_7B, dp=8, zero_stage=1, offload="none") == 0.0


# -- every argument is checked, and the error names it ----------------------------------
VALID = {
    offload.zero2_estimate: dict(params=2851e6, gpus_per_node=8, nodes=1, offload_optimizer=True,
                                 buffer_factor=1.5, before_fix=False),
    offload.zero3_estimate: dict(params=2851e6, largest_layer_params=32e6, gpus_per_node=8, nodes=1,
                                 offload_optimizer=True, offload_param=False, zero_init=True, buffer_factor=1.5),
    offload.zero2_table: dict(params=2851e6, gpus_per_node=8, nodes=1, buffer_factor=1.5, before_fix=False),
    offload.zero3_table: dict(params=2851e6, largest_layer_params=32e6, gpus_per_node=8, nodes=1, buffer_factor=1.5),
    offload.offload_state_per_gpu: dict(params=PSI_7B, dp=8, zero_stage=3, offload="optimizer", optimizer_bytes=12),
    offload.pcie_bytes_per_gpu: dict(params=PSI_7B, dp=8, zero_stage=3, offload="optimizer_params"),
    offload.offload_available: dict(offload="optimizer", zero_stage=1),
    offload.deepspeed_layout: dict(dp=12, gpus_per_node_max=8),
    offload.gib: dict(size_bytes=2**30),
}
BAD = {float: [float("nan"), float("inf"), True, "8", None, -1, 1e40], str: ["nvme", 1, True, None],
       bool: ["yes", 1, 0, None]}


def _bad_cases() -> list:
    cases = []
    for fn, kwargs in VALID.items():
        for arg, good in kwargs.items():
            kind = bool if isinstance(good, bool) else str if isinstance(good, str) else float
            for bad in BAD[kind]:
                cases.append(pytest.param(fn, kwargs, arg, bad, id=f"{fn.__name__}-{arg}={bad!r}"))
    return cases


@pytest.mark.parametrize(("fn", "kwargs"), [pytest.param(f, k, id=f.__name__) for f, k in VALID.items()])
def test_valid_arguments_are_accepted(fn, kwargs) -> None:
    fn(**kwargs)


@pytest.mark.parametrize(("fn", "kwargs", "arg", "bad"), _bad_cases())
def test_bad_argument_is_named_in_the_error(fn, kwargs, arg, bad) -> None:
    with pytest.raises(ValueError) as info:
        fn(**{**kwargs, arg: bad})
    assert str(info.value).startswith(f"{arg} must be"), str(info.value)


def test_every_public_function_of_offload_is_covered() -> None:
    own_tests = {"largest_layer_params"}  # takes a model config
    functions = {n for n in offload.__all__ if callable(getattr(offload, n)) and not isinstance(getattr(offload, n), type)}
    assert functions == {f.__name__ for f in VALID} | own_tests
