"""Every public function rejects bad arguments with a ValueError that names the
argument (STYLE.md §5: validation at the edge, with actionable messages)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from calc import (
    activations,
    collectives,
    compute,
    context,
    data_parallel,
    experts,
    hardware,
    memory,
    models,
    parallel3d,
    pipeline,
    tensor,
    utilization,
    zero,
)

P = 6.7e9
# function -> valid keyword arguments (numbers are checked with NaN, inf, bool, str,
# −1 and 1e40; strings and bools with a wrong value of the wrong type)
CALLS: dict[Callable[..., Any], dict[str, Any]] = {
    models.megatron_param_count: dict(layers=96, hidden=12288, vocab=51200, seq_len=2048),
    models.megatron_flops_per_iteration: dict(
        layers=96, hidden=12288, vocab=51200, seq_len=2048, global_batch=1536, recompute="full"
    ),
    models.megatron_forward_flops: dict(layers=96, hidden=12288, vocab=51200, seq_len=2048, global_batch=1536),
    models.get_model: dict(model="llama2-7b"),
    utilization.palm_flops_per_token: dict(params=540e9, layers=118, heads=48, head_dim=256, seq_len=2048),
    utilization.mfu: dict(tokens_per_s=238.3e3, flops_per_token=3.3e12, gpus=6144, peak_flops_per_s=275e12),
    utilization.flops_per_gpu_from_gpu_hours: dict(flops=8e22, gpu_hours=184320),
    utilization.weak_scaling_efficiency: dict(flops_per_gpu=163e12, base_flops_per_gpu=137e12),
    utilization.run_utilization: dict(run="palm-540b"),
    hardware.get_gpu: dict(gpu="h100-sxm"),
    hardware.get_link: dict(link="nvlink"),
    hardware.get_machine: dict(machine="dgx-h100"),
    memory.training_state: dict(params=P, optimizer_bytes=12),
    memory.training_state_bytes: dict(params=P, optimizer_bytes=12),
    memory.weight_bytes: dict(params=P, bits=4),
    compute.training_flops: dict(params=P, tokens=2e12),
    compute.non_embedding_params: dict(layers=96, hidden=12288),
    compute.training_seconds: dict(flops=8e22, gpus=64, flops_per_gpu=150e12),
    compute.megatron_training_seconds: dict(params=P, tokens=2e12, gpus=64, flops_per_gpu=150e12),
    activations.activation_bytes_per_layer: dict(
        hidden=4096, heads=32, seq_len=4096, micro_batch=1, tp=2, sequence_parallel=True, recompute="none"
    ),
    activations.activation_bytes: dict(
        layers=32, hidden=4096, heads=32, seq_len=4096, micro_batch=1, tp=2, sequence_parallel=False,
        recompute="selective",
    ),
    activations.attention_score_factor: dict(hidden=4096, heads=32, seq_len=4096),
    activations.sbh_coefficient: dict(hidden=4096, heads=32, seq_len=4096, tp=2, sequence_parallel=True,
                                      recompute="none"),
    activations.longer_sequence: dict(hidden=4096, heads=32, seq_len=4096, factor=2),
    activations.attention_score_bytes_per_layer: dict(hidden=4096, heads=32, seq_len=4096, micro_batch=1, tp=2),
    activations.rematerialized_bytes: dict(
        hidden=4096, heads=32, seq_len=4096, micro_batch=1, tp=2, sequence_parallel=True, recompute="full"
    ),
    activations.peak_activation_bytes: dict(
        layers=32, hidden=4096, heads=32, seq_len=4096, micro_batch=1, tp=2, sequence_parallel=False,
        recompute="full",
    ),
    activations.recompute_overhead: dict(layers=32, hidden=4096, vocab=32000, seq_len=4096, recompute="selective"),
    activations.selective_overhead_eq8: dict(layers=96, hidden=12288, vocab=51200, seq_len=2048),
    activations.activation_terms_per_layer: dict(hidden=4096, heads=32, seq_len=4096, micro_batch=1, recompute="full"),
    collectives.bus_factor: dict(op="all_reduce", ranks=8),
    collectives.ring_bytes_per_rank: dict(op="all_gather", size_bytes=1e9, ranks=8),
    collectives.ring_all_reduce_bytes_per_rank: dict(size_bytes=1e9, ranks=8),
    collectives.transfer_seconds: dict(size_bytes=1e9, bytes_per_s=50e9),
    collectives.algbw: dict(size_bytes=1e9, time_s=0.01),
    collectives.busbw: dict(op="reduce_scatter", ranks=8, size_bytes=1e9, time_s=0.01),
    collectives.chunk_bounds: dict(length=16, chunks=4),
    collectives.chunk_bytes: dict(size_bytes=1e9, ranks=8),
    collectives.ring_seconds: dict(op="all_gather", size_bytes=1e9, ranks=8, bytes_per_s=450e9),
    collectives.both_directions_bytes_per_s: dict(bytes_per_s=450e9),
    collectives.aggregate_bytes_per_s: dict(bytes_per_s=50e9, links=8),
    collectives.broadcast: dict(data=[[1, 2], [3, 4]], root=1),
    collectives.scatter: dict(data=[[1, 2], [3, 4]], root=0),
    collectives.gather: dict(data=[[1, 2], [3, 4]], root=0),
    collectives.reduce: dict(data=[[1, 2], [3, 4]], root=0),
    collectives.run: dict(op="reduce", data=[[1, 2], [3, 4]], root=0),
    data_parallel.state_per_gpu_bytes: dict(params=P, optimizer_bytes=12),
    data_parallel.seqs_per_gpu: dict(dp=8, global_batch=1024),
    data_parallel.tokens_per_step: dict(seq_len=4096, global_batch=1024),
    data_parallel.compute_seconds: dict(
        params=P, dp=8, flops_per_gpu=150e12, seq_len=4096, global_batch=1024
    ),
    data_parallel.gradient_bytes: dict(params=P),
    data_parallel.sent_per_gpu_bytes: dict(params=P, dp=8),
    data_parallel.central_gpu_bytes: dict(params=P, dp=8),
    data_parallel.comm_seconds: dict(params=P, dp=8, bytes_per_s=50e9),
    data_parallel.overlap_min_tokens: dict(dp=8, flops_per_gpu=989e12, bytes_per_s=50e9),
    data_parallel.overlap_min_micro_batch: dict(dp=8, seq_len=4096, flops_per_gpu=989e12, bytes_per_s=50e9),
    zero.state_per_gpu: dict(params=P, dp=8, zero_stage=1, optimizer_bytes=12),
    zero.state_per_gpu_bytes: dict(params=P, dp=8, zero_stage=2, optimizer_bytes=12),
    zero.reduction: dict(dp=8, zero_stage=3, optimizer_bytes=12),
    zero.bytes_per_param: dict(dp=8, zero_stage=2, optimizer_bytes=12),
    zero.sent_per_gpu_elements: dict(params=P, dp=8, zero_stage=3),
    zero.sent_per_gpu_bytes: dict(params=P, dp=8, zero_stage=0),
    zero.comm_over_dp: dict(zero_stage=3),
    zero.fits: dict(params=P, dp=8, zero_stage=1, memory_bytes=80e9, optimizer_bytes=12),
    tensor.weights_per_gpu_layer: dict(layer_params=2e8, tp=4),
    tensor.state_per_gpu_bytes: dict(params=P, tp=4, optimizer_bytes=12),
    tensor.sent_per_gpu_layer_bytes: dict(hidden=4096, seq_len=4096, micro_batch=1, tp=4, sequence_parallel=True),
    tensor.split_params_per_layer: dict(hidden=4096),
    tensor.replicated_params_per_layer: dict(hidden=4096),
    tensor.shard_rows: dict(rows=50257, dp=8, dp_rank=7),
    tensor.message_bytes: dict(hidden=4096, seq_len=4096, micro_batch=1),
    tensor.sent_over_message: dict(tp=4, sequence_parallel=True),
    tensor.heads_per_gpu: dict(heads=32, tp=4),
    tensor.kv_heads_per_gpu: dict(kv_heads=8, tp=4),
    tensor.comm_seconds: dict(sent_bytes=2e8, bytes_per_s=450e9),
    tensor.compute_seconds_per_layer: dict(
        layer_params=2e8, seq_len=4096, micro_batch=1, tp=4, flops_per_gpu=150e12
    ),
    tensor.comm_over_compute: dict(
        layer_params=2e8, hidden=4096, seq_len=4096, tp=4, bytes_per_s=450e9, flops_per_gpu=150e12
    ),
    pipeline.bubble_fraction_of_time: dict(pp=4, microbatches=4, chunks=1),
    pipeline.bubble_over_ideal_time: dict(pp=4, microbatches=4, chunks=2),
    pipeline.busy_units: dict(microbatches=4, fwd=1, bwd=2),
    pipeline.total_units: dict(pp=4, microbatches=4, fwd=1, bwd=2),
    pipeline.layers_per_stage: dict(layers=32, pp=4),
    pipeline.bubble_target_coefficient: dict(bubble=0.1),
    pipeline.microbatches_for_bubble: dict(pp=4, bubble=0.1, chunks=2),
    pipeline.p2p_messages_per_microbatch: dict(pp=4, chunks=2),
    pipeline.stage_layers: dict(layers=32, pp=4),
    pipeline.state_per_gpu_bytes: dict(params=P, pp=4, optimizer_bytes=12, copies=1),
    pipeline.activation_transfer_bytes: dict(hidden=4096, seq_len=4096, micro_batch=1),
    pipeline.in_flight_microbatches: dict(pp=4, microbatches=8, schedule="1f1b"),
    pipeline.bubble_time: dict(pp=4, schedule="dualpipe", chunks=1, fwd=1, bwd=2, wgrad=1),
    pipeline.check_dualpipe: dict(pp=4, microbatches=8),
    pipeline.bubble_share: dict(bubble=9, busy=24),
    pipeline.parameter_copies: dict(schedule="dualpipe"),
    pipeline.overlapped_spans: dict(pp=4, microbatches=8, fwd=1, bwd=2, wgrad=1),
    pipeline.simulate_schedule: dict(
        pp=4, microbatches=4, schedule="interleaved", chunks=2, fwd=1, bwd=2
    ),
    parallel3d.gpus: dict(tp=8, pp=4, dp=8),
    parallel3d.nodes: dict(tp=8, pp=4, dp=8, gpus_per_node=8),
    parallel3d.state_per_gpu_bytes: dict(params=P, tp=8, pp=4, dp=8, zero_stage=1, optimizer_bytes=12),
    parallel3d.microbatches_per_pipeline: dict(dp=8, global_batch=1024, micro_batch=1),
    parallel3d.bubble_fraction_of_time: dict(pp=4, dp=8, global_batch=1024, micro_batch=1),
    parallel3d.train_seconds: dict(
        params=P, tokens=2e12, tp=8, pp=4, dp=8, flops_per_gpu=150e12, global_batch=1024, micro_batch=1
    ),
    parallel3d.model_parallel_size: dict(tp=8, pp=4),
    parallel3d.ideal_train_seconds: dict(params=P, tokens=2e12, tp=8, pp=4, dp=8, flops_per_gpu=150e12),
    parallel3d.bubble_stretch: dict(pp=4, dp=8, global_batch=1024, micro_batch=1),
    context.rank_chunks: dict(cp=4, split="balanced"),
    context.chunk_ranks: dict(cp=4, split="contiguous"),
    context.ring_holders: dict(cp=4),
    context.ring_step_work: dict(cp=4, split="balanced", causal=True),
    context.kv_block_bytes: dict(hidden=4096, heads=32, kv_heads=8, seq_len=8192, micro_batch=1, cp=4),
    context.ring_sent_per_gpu_layer_bytes: dict(
        hidden=4096, heads=32, kv_heads=8, seq_len=8192, micro_batch=1, cp=4, direction="forward"
    ),
    context.ulysses_max_cp: dict(heads=32, kv_heads=8),
    context.ulysses_sent_per_gpu_layer_bytes: dict(
        hidden=4096, heads=32, kv_heads=8, seq_len=8192, micro_batch=1, cp=4, direction="backward"
    ),
    context.sent_per_gpu_layer_bytes: dict(
        method="ring", hidden=4096, heads=32, kv_heads=8, seq_len=8192, micro_batch=1, cp=4, direction="both"
    ),
    context.activation_bytes_per_gpu_layer: dict(
        hidden=4096, heads=32, seq_len=8192, micro_batch=1, cp=4, tp=2, sequence_parallel=True, recompute="none"
    ),
    context.attention_flops_per_gpu_layer: dict(
        hidden=4096, seq_len=8192, micro_batch=1, cp=4, causal=True, split="contiguous"
    ),
    context.ring_step_times: dict(
        hidden=4096, heads=32, kv_heads=8, seq_len=8192, micro_batch=1, cp=4, flops_per_gpu=150e12,
        bytes_per_s=50e9, causal=True, split="balanced"
    ),
    context.min_block_tokens: dict(
        hidden=4096, heads=32, kv_heads=8, flops_per_gpu=150e12, bytes_per_s=50e9, causal=False
    ),
    experts.expert_params: dict(hidden=4096, moe_ffn=14336),
    experts.moe_layer_params: dict(hidden=4096, moe_ffn=14336, experts=8, shared_experts=1),
    experts.active_moe_layer_params: dict(hidden=4096, moe_ffn=14336, experts=8, experts_per_token=2, shared_experts=1),
    experts.experts_per_gpu: dict(experts=8, ep=4),
    experts.expert_state_per_gpu_bytes: dict(
        hidden=4096, moe_ffn=14336, experts=8, moe_layers=32, ep=4, optimizer_bytes=12
    ),
    experts.capacity: dict(tokens=4096, experts=8, experts_per_token=2, capacity_factor=1.25),
    experts.route_tokens: dict(tokens=16, experts=8, experts_per_token=2, seed=3, skew=0.5),
    experts.expert_load: dict(routes=((0, 1), (2, 3)), experts=4),
    experts.dropped_tokens: dict(load=(3, 0, 1), capacity=2),
    experts.dispatch_counts: dict(routes=((0, 1), (2, 3)), experts=4, ep=2),
    experts.routed_sent_per_gpu_bytes: dict(counts=((1, 1), (0, 2)), hidden=64, bytes_per_element=2),
    experts.all_to_all_sent_per_gpu_layer_bytes: dict(tokens=4096, hidden=4096, experts_per_token=2, ep=8, direction="both"),
    experts.expert_flops_per_gpu_layer: dict(tokens=4096, hidden=4096, moe_ffn=14336, experts_per_token=2),
    experts.moe_layer_times: dict(
        tokens=4096, hidden=4096, moe_ffn=14336, experts_per_token=2, ep=8, flops_per_gpu=150e12, bytes_per_s=50e9
    ),
}

NUMBER_BAD = [math.nan, math.inf, True, "8", None, -1, 1e40]
TEXT_BAD = ["no-such-choice", 1, True, None]
BOOL_BAD = ["yes", 1, 0, None]


def _name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__.split('.')[-1]}.{fn.__name__}"


CASES = []
for fn, kwargs in CALLS.items():
    for arg, good in kwargs.items():
        if arg == "data":
            continue
        if isinstance(good, bool):
            bads = BOOL_BAD
        elif isinstance(good, str):
            bads = TEXT_BAD
        else:
            bads = NUMBER_BAD
        for bad in bads:
            CASES.append(pytest.param(fn, kwargs, arg, bad, id=f"{_name(fn)}-{arg}={bad!r}"))


@pytest.mark.parametrize(("fn", "kwargs"), [pytest.param(f, k, id=_name(f)) for f, k in CALLS.items()])
def test_valid_arguments_are_accepted(fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    fn(**kwargs)


@pytest.mark.parametrize(("fn", "kwargs", "arg", "bad"), CASES)
def test_bad_argument_is_named_in_the_error(
    fn: Callable[..., Any], kwargs: dict[str, Any], arg: str, bad: object
) -> None:
    """E.g. "dp must be an integer from 1 to 65536, got 0"."""
    with pytest.raises(ValueError) as info:
        fn(**{**kwargs, arg: bad})
    assert str(info.value).startswith(f"{arg} must be"), str(info.value)


def test_every_public_function_is_covered() -> None:
    """Each public function of calc that takes arguments is in the table above (or has
    its own rejection test: model objects, per-rank vectors, schedule events)."""
    own_tests = {
        "models.param_count",
        "models.layer_param_count",
        "models.active_param_count",
        "models.attention_param_count",
        "models.dense_layer_param_count",
        "models.moe_layer_param_count",
        "models.expert_param_count",
        "models.forward_flops",
        "utilization.model_flops_per_token",
        "utilization.model_flops_over_6n",
        "utilization.hardware_flops_per_token",
        "collectives.all_gather",
        "collectives.reduce_scatter",
        "collectives.all_reduce",
        "collectives.all_to_all",
        "collectives.ring_all_reduce_steps",
        "pipeline.summarize_schedule",
    }
    covered = {_name(f) for f in CALLS}
    modules = (activations, collectives, compute, context, data_parallel, experts, hardware, memory,
               models, parallel3d, pipeline, tensor, utilization, zero)
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and not isinstance(obj, type):
                qualified = f"{module.__name__.split('.')[-1]}.{name}"
                assert qualified in covered | own_tests, qualified
