"""Published layouts (calc.runs): the numbers are the papers', the build-up keeps the
GPU count and never needs more memory as dimensions are added, and the planner's model
says what the papers say about them."""

from __future__ import annotations

import pytest

from calc import runs
from calc.hardware import GPUS
from calc.models import ALL_MODELS, active_param_count
from calc.planner import ALLOWANCE_BYTES, inside_node


@pytest.mark.parametrize("run", runs.RUNS.values(), ids=lambda r: r.key)
def test_each_layout_multiplies_to_its_gpu_count(run: runs.Run) -> None:
    assert run.tp * run.cp * run.pp * run.dp == run.gpus
    assert (run.cp * run.dp) % run.ep == 0  # ep is carved out of cp·d
    assert run.global_batch % run.dp == 0 and run.microbatches >= run.pp
    assert run.model in ALL_MODELS and run.source and run.assumed


def test_llama3s_rows_are_table_4() -> None:
    """Table 4: 16,384 GPUs, TP 8, PP 16; DP 128 at 8K, CP 16 and DP 8 at 128K; 16
    sequences per DP group, 16M tokens per batch either way; 400 and 380 TFLOP/s per GPU,
    41% and 38% MFU."""
    short, long = runs.RUNS["llama3-405b-8k"], runs.RUNS["llama3-405b-128k"]
    assert (short.tp, short.cp, short.pp, short.dp, short.seq_len) == (8, 1, 16, 128, 8192)
    assert (long.tp, long.cp, long.pp, long.dp, long.seq_len) == (8, 16, 16, 8, 131072)
    for run in (short, long):
        assert run.global_batch // run.dp == 16
        assert run.global_batch * run.seq_len == 16 * 2**20
    assert (short.flops_per_gpu, short.mfu, long.flops_per_gpu, long.mfu) == (400e12, 0.41, 380e12, 0.38)
    # MFU is the achieved rate over the H100's 989 dense bf16 TFLOP/s
    for run in (short, long):
        assert run.flops_per_gpu / GPUS["h100-sxm"].flops_per_s == pytest.approx(run.mfu, abs=0.01)


def test_deepseek_v3s_rate_comes_from_its_gpu_hours() -> None:
    """6·Ψ_a·D over 2,664K GPU hours (Table 1, 14.8T tokens): about 348 TFLOP/s, 35% of
    an H800's (an H100's) 989 dense bf16 TFLOP/s."""
    active = active_param_count(ALL_MODELS["deepseek-v3"])
    rate = runs.deepseek_v3_flops_per_gpu()
    assert rate == pytest.approx(6 * active * 14.8e12 / (2_664e3 * 3600), rel=1e-12)
    assert rate / 989e12 == pytest.approx(0.35, abs=0.01)
    run = runs.RUNS["deepseek-v3"]
    assert (run.gpus, run.tp, run.pp, run.ep, run.zero_stage) == (2048, 1, 16, 64, 1)
    assert ALL_MODELS["deepseek-v3"].experts // run.ep == 4  # 256 routed experts, 4 per GPU


@pytest.mark.parametrize("run", runs.RUNS.values(), ids=lambda r: r.key)
def test_adding_a_dimension_never_needs_more_memory(run: runs.Run) -> None:
    steps = runs.build_up(run)
    assert [s.name for s in steps] == list(runs.BUILD_STEPS)
    for before, after in zip(steps, steps[1:]):
        assert after.tp * after.cp * after.pp * after.dp == run.gpus
        assert after.memory_bytes <= before.memory_bytes
    last = steps[-1]
    assert (last.tp, last.cp, last.pp, last.dp, last.ep, last.zero_stage) == (
        run.tp, run.cp, run.pp, run.dp, run.ep, run.zero_stage)
    assert last.memory_bytes == pytest.approx(runs.evaluate(run).memory_bytes, rel=1e-12)
    # data parallelism alone holds the whole model on every GPU: never fits
    assert steps[0].memory_bytes > 10 * run.memory_bytes


def test_128k_tokens_need_context_parallelism_and_then_sit_at_the_memory_limit() -> None:
    """After TP and PP the activations of one 128K sequence alone are over 1 TB per GPU;
    CP 16 divides them by 16. The published layout then needs 80 GB give or take the 2 GB
    the planner sets aside: the model sits at the limit the real run met."""
    steps = {s.name: s for s in runs.build_up(runs.RUNS["llama3-405b-128k"])}
    assert steps["pp"].activation_bytes > 1e12
    assert steps["cp"].activation_bytes == pytest.approx(steps["pp"].activation_bytes / 16, rel=0.05)
    final = runs.evaluate(runs.RUNS["llama3-405b-128k"])
    assert abs(final.memory_bytes - 80e9) <= ALLOWANCE_BYTES
    # at 8K the same GPUs hold the same tokens per GPU without cp: the same memory
    short = runs.evaluate(runs.RUNS["llama3-405b-8k"])
    assert short.activation_bytes == pytest.approx(final.activation_bytes, rel=1e-12)


def test_deepseek_v3s_all_to_all_is_about_as_long_as_its_compute() -> None:
    """Report Sec. 3.2.1: cross-node expert parallelism gives "a computation-to-
    communication ratio of approximately 1:1", the reason for DualPipe. Without overlap,
    the planner's model agrees within a factor of 1.5; the layout fits in 80 GB."""
    x = runs.evaluate(runs.RUNS["deepseek-v3"])
    assert 1 / 1.5 < x.ep_comm_s / x.compute_s < 1.5
    assert x.memory_bytes <= 80e9
    assert runs.links(runs.RUNS["deepseek-v3"])["ep"] is False  # 64 GPUs: eight nodes


def test_links_follow_the_rank_order() -> None:
    long = runs.links(runs.RUNS["llama3-405b-128k"])
    assert long == {"tp": True, "cp": False, "ep": True, "dp": False, "pp": False}
    assert inside_node(8) and inside_node(4) and not inside_node(16) and not inside_node(3)


def test_an_unknown_run_is_named() -> None:
    with pytest.raises(ValueError, match="^run must be one of"):
        runs.get_run("gpt-5")


def test_the_counts_a_worked_solution_quotes() -> None:
    """Llama 3 at 128K: 2·16 = 32 chunks of 131,072/32 = 4,096 tokens, two per GPU
    (s/cp = 8,192). DeepSeek-V3: ⌈61/16⌉ = 4 layers per stage, 1F1B holds min(16, 120)
    = 16 micro-batches, and 128·1/64 = 2 GPUs share each expert (report Sec. 3.2)."""
    long = runs.RUNS["llama3-405b-128k"]
    assert (long.chunks, long.chunk_tokens) == (32, 4096)
    assert 2 * long.chunk_tokens == long.tokens_per_gpu
    ds = runs.RUNS["deepseek-v3"]
    assert (ds.layers, ds.layers_per_stage, ds.in_flight, ds.expert_replicas) == (61, 4, 16, 2)
